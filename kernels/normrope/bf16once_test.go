package normrope

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// v32IndexerK is the configuration of SGLang 0.5.23's fused V3.2
// indexer-key kernel (deepseek_v32/indexer_k.cuh) in the contract's
// terms, as scripts/sglang-emu forces it on the cases it runs.
var v32IndexerK = map[string]any{"norm": NormLayer, "rope_offset": int64(0), "rope_style": StyleInterleaved,
	"hadamard": false, "store": StoreFP8, "scale_fmt": ScalePlain}

// forced returns spec with params set over its own (as --param sets them).
func forced(spec difftest.CaseSpec, params map[string]any) difftest.CaseSpec {
	ps := map[string]any{}
	for k, v := range spec.Params {
		ps[k] = v
	}
	for k, v := range params {
		ps[k] = v
	}
	spec.Params = ps
	return spec
}

// indexerK is a hand-built single-rounding kernel, written from the
// arithmetic of the V3.2 indexer_k kernel rather than from sim32: per
// token, 32 lanes of 4 values; LayerNorm with lane sums then a butterfly
// (xor-shuffle) reduction, mean and variance divided by 128, rsqrt of
// var/128 + eps, (x − mean)·r·γ + β; interleaved RoPE on dims [0, 64);
// then the one rounding, each value to bf16 (RNE, or truncated when
// truncate: a faulty conversion), the amax over the bf16 values, scale
// max(1e-4, amax)/448 and codes e4m3(v·(1/scale)). It runs only the
// configuration v32IndexerK and skips out_loc −1.
func indexerK(c *difftest.Case, outs []*difftest.Tensor, truncate bool) error {
	in, err := load(c)
	if err != nil {
		return err
	}
	p := in.p
	if p.Norm != NormLayer || p.RopeOffset != 0 || p.RopeStyle != StyleInterleaved || p.Hadamard || p.Store != StoreFP8 || p.ScaleFmt != ScalePlain {
		return fmt.Errorf("indexerK runs the V3.2 indexer_k configuration only, not %s", p)
	}
	reduce := func(v *[32]float32) float32 {
		for off := 16; off >= 1; off /= 2 {
			var next [32]float32
			for l := range v {
				next[l] = v[l] + v[l^off]
			}
			*v = next
		}
		return v[0]
	}
	cache := outs[0].Data
	for t := 0; t < in.n; t++ {
		slot := in.loc.I64(t)
		if slot < 0 {
			continue
		}
		var x, d [Dim]float32
		in.row32(t, &x)
		var lane [32]float32
		for l := range lane {
			lane[l] = x[4*l] + x[4*l+1] + x[4*l+2] + x[4*l+3]
		}
		mean := reduce(&lane) / Dim
		for l := range lane {
			var s float32
			for i := 4 * l; i < 4*l+4; i++ {
				c := x[i] - mean
				s += c * c
			}
			lane[l] = s
		}
		r := float32(1 / math.Sqrt(float64(reduce(&lane)/Dim+p.Eps)))
		for i := range d {
			d[i] = (x[i]-mean)*r*in.w32[i] + in.b32[i]
		}
		cs := in.cosSin(in.pos.I64(t))
		for j := 0; j < RopeDim/2; j++ {
			cj, sj := cs[2*j], cs[2*j+1]
			a, b := d[2*j], d[2*j+1]
			d[2*j] = a*cj - b*sj
			d[2*j+1] = a*sj + b*cj
		}
		var amax float32
		for i, v := range d {
			bits := numeric.BF16FromF32(v)
			if truncate {
				bits = uint16(math.Float32bits(v) >> 16)
			}
			d[i] = numeric.BF16ToF32(bits)
			amax = max(amax, float32(math.Abs(float64(d[i]))))
		}
		scale := max(float32(ScaleFloor), amax) / float32(numeric.E4M3Max)
		inv := 1 / scale
		codesAt, scaleAt := slotBytes(p, int(slot))
		for i, v := range d {
			cache[codesAt+i] = numeric.E4M3FromF32(v * inv)
		}
		binary.LittleEndian.PutUint32(cache[scaleAt:], math.Float32bits(scale))
	}
	return nil
}

// TestIntermediateBF16OnceIndexerK runs the hand-built V3.2 indexer_k
// (indexerK) over the quick suite in that kernel's configuration:
// declared (intermediate = bf16-once) it passes every case; under the f32
// contract it fails some, each diagnosed, in the words a report prints,
// "passes as intermediate=bf16-once: …". With a truncating conversion in
// place of the rounding it fails the declared precision, as the bf16
// chain does (bf16 after the norm too: a coarser precision, not this one).
func TestIntermediateBF16OnceIndexerK(t *testing.T) {
	line := "passes as intermediate=bf16-once: f32 through norm, RoPE and Hadamard, rounded to bf16 once before the store, as SGLang's fused V3.2 indexer_k does"
	failedF32, cases, truncCaught, chainCaught := 0, 0, 0, 0
	for _, spec := range loadSuite(t, "quick") {
		spec = forced(spec, v32IndexerK)
		c, err := NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
		if err != nil {
			continue // the family needs another configuration
		}
		cases++
		want := reference(t, c)
		impl := func(o []*difftest.Tensor) error { return indexerK(c, o, false) }
		if failed, _ := outcome(t, c, want, impl); failed {
			failedF32++
			got := newCache(c)
			if err := impl([]*difftest.Tensor{got}); err != nil {
				t.Fatal(err)
			}
			d := triage.Diagnose(context.Background(), Kernel{}, c, []*difftest.Tensor{got}, []*difftest.Tensor{want}, 0)
			if !slices.Contains(d.Matches, VariantIntermediateBF16Once) {
				t.Errorf("%s: the single bf16 rounding is diagnosed as %v, want %s", c.ID, d.Matches, VariantIntermediateBF16Once)
			}
			if lines := triage.DiagnosisLines(&difftest.Record{Kernel: KernelName, Diagnosis: d.Matches}); !slices.Contains(lines, line) {
				t.Errorf("%s: diagnosis lines %q, want %q", c.ID, lines, line)
			}
		}
		dc := declare(c, IntermediateBF16Once)
		if failed, why := outcome(t, dc, want, func(o []*difftest.Tensor) error { return indexerK(dc, o, false) }); failed {
			t.Errorf("%s, intermediate bf16-once declared: the single rounding fails: %s", c.ID, why)
		}
		if failed, _ := outcome(t, dc, want, func(o []*difftest.Tensor) error { return indexerK(dc, o, true) }); failed {
			truncCaught++
		}
		if failed, _ := outcome(t, dc, want, func(o []*difftest.Tensor) error { return runSim(dc, o, sim32{tree: true, bf16Stages: true}) }); failed {
			chainCaught++
		}
	}
	if cases == 0 || failedF32 == 0 {
		t.Errorf("%d quick cases in the indexer_k configuration, %d failed by the single rounding under the f32 contract: want both > 0", cases, failedF32)
	}
	if truncCaught == 0 || chainCaught == 0 {
		t.Errorf("declared bf16-once: a truncating conversion fails %d cases, the bf16 chain %d; want both > 0", truncCaught, chainCaught)
	}
	t.Logf("%d cases; the single rounding fails %d under the f32 contract; declared, a truncation fails %d and the bf16 chain %d", cases, failedF32, truncCaught, chainCaught)
}

// declare returns c with intermediate declared (a case of the same inputs).
func declare(c *difftest.Case, intermediate string) *difftest.Case {
	p := c.Params.(Params)
	p.Intermediate = intermediate
	dc := *c
	dc.Params = p
	return &dc
}

// onceConfigs are the configurations TestIntermediateBF16OnceCatalog
// runs: the V3.2 indexer_k's, and the presets (the Hadamard on, both
// RoPE styles and offsets, both norms, every store and scale format).
var onceConfigs = []map[string]any{
	v32IndexerK,
	{"preset": PresetV32},
	{"preset": PresetV4},
	{"preset": PresetV4, "scale_fmt": ScaleUE8M0},
	{"preset": PresetV4BF16},
	{"preset": PresetV4FP4},
	{"preset": PresetV32, "hadamard": false, "scale_fmt": ScaleUE8M0},
}

// TestIntermediateBF16OnceCatalog: with intermediate = bf16-once
// declared, on a few families in each of onceConfigs (one seed), the
// legitimate single-rounding kernels (the binary32 variants of
// falsealarm_test.go with the rounding) pass every case, and every
// catalog mutant is still caught, in two forms: as the catalog has it (an
// f32 kernel with one fault) on every case where the f32 contract catches
// it, but where its values are the single rounding's (onceAdmits); built
// on the single rounding (bf16-truncate truncating it) on some case. So
// the declared precision admits that rounding and no catalog mutant. A
// mutant's forms are tried until each has a catching case, the f32 form
// on every case.
func TestIntermediateBF16OnceCatalog(t *testing.T) {
	var onceKernels []sim32
	for _, l := range legitimate {
		s := l.sim
		s.bf16Once = true
		onceKernels = append(onceKernels, s)
	}
	caughtF32 := map[string]int{}
	caughtOnce := map[string]int{}
	cases := 0
	for _, fam := range []string{"gaussian", "large-mean", "outlier", "zero", "e4m3-midpoint", "fp4-blocks"} {
		for ci, cfg := range onceConfigs {
			spec := difftest.CaseSpec{Kernel: KernelName, Family: fam, Name: fmt.Sprintf("once/%s/%d", fam, ci),
				Params: map[string]any{"N": int64(21), "P": int64(4), "intermediate": IntermediateBF16Once}}
			spec = forced(spec, cfg)
			c, err := NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
			if err != nil {
				continue // the family does not take this configuration
			}
			cases++
			p := c.Params.(Params)
			f32 := declare(c, "")
			want := reference(t, c)
			for i, s := range onceKernels {
				if failed, why := outcome(t, c, want, func(o []*difftest.Tensor) error { return runSim(c, o, s) }); failed {
					t.Errorf("%s %v, %s with the single rounding: fails the declared bf16-once: %s", c.ID, p, legitimate[i].name, why)
				}
			}
			for _, m := range Mutants() {
				if m.Applies != nil && !m.Applies(spec) {
					continue
				}
				byContract, _ := outcome(t, f32, want, func(o []*difftest.Tensor) error { return m.Run(f32, o) })
				declared, _ := outcome(t, c, want, func(o []*difftest.Tensor) error { return m.Run(c, o) })
				if byContract && !declared && !onceAdmits(m.Name, p) {
					t.Errorf("%s %v: mutant %s is caught by the f32 contract but passes as intermediate bf16-once", c.ID, p, m.Name)
				}
				if declared {
					caughtF32[m.Name]++
				}
				if caughtOnce[m.Name] > 0 {
					continue
				}
				onOnce := sim32{bf16Once: true, fault: m.Name}
				if f, _ := outcome(t, c, want, func(o []*difftest.Tensor) error { return runSim(c, o, onOnce) }); f {
					caughtOnce[m.Name]++
				}
			}
		}
	}
	for _, m := range Mutants() {
		if caughtF32[m.Name] == 0 || caughtOnce[m.Name] == 0 {
			t.Errorf("mutant %s: caught on %d cases as the catalog has it, on the single rounding %d, want both > 0", m.Name, caughtF32[m.Name], caughtOnce[m.Name])
		}
	}
	t.Logf("%d cases × %d single-rounding kernels, no false alarm; catalog caught as the catalog has it %v", cases, len(onceKernels), caughtF32)
}

// onceAdmits reports whether a catalog mutant's output (an f32 kernel
// with one fault) may be the single rounding's own values on a case whose
// f32 contract catches it, so that intermediate = bf16-once passes it
// there: fp8-double-round (e4m3 through f16) with a ue8m0 scale. The f16
// step changes a code only where z/scale lies within half an f16 step of
// an e4m3 midpoint; with a power-of-two scale, bf16(z)/scale then lies on
// that midpoint too (bf16's 8 significant bits are coarser than f16's
// 11), and both break the tie to even: where the mutant's codes are not
// the contract's they are the single rounding's, and on a case where no
// other value lies within half a bf16 step of a midpoint the whole slot
// is. With a plain scale z/scale has 24 bits and the codes differ.
func onceAdmits(m string, p Params) bool {
	return m == "fp8-double-round" && p.Store == StoreFP8 && p.ScaleFmt == ScaleUE8M0
}
