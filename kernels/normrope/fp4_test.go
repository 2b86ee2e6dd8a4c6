package normrope

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// fp4Token runs quantFP4 on a token whose first block is blk (the rest
// zero) and returns block 0's 32 codes and its scale byte.
func fp4Token(blk []float64) ([]uint8, uint8) {
	var z [Dim]float64
	copy(z[:], blk)
	var codes [Dim]uint8
	var scales [fp4Blocks]uint8
	quantFP4(&z, &codes, &scales)
	return codes[:len(blk)], scales[0]
}

// TestQuantFP4KnownAnswers works the two-stage rule by hand.
func TestQuantFP4KnownAnswers(t *testing.T) {
	cases := []struct {
		name  string
		blk   []float64
		codes []uint8
		scale uint8
	}{
		// zero block: s₁ = 2^-126, s₂ = 2^-13 (ue8m0 114), codes 0
		{"zero", []float64{0, 0, 0}, []uint8{0, 0, 0}, 114},
		// amax 6: s₁ = s₂ = 1; 0.25 → 0 and 0.75 → 1 (ties to even), −0.2 → −0 stored as 0
		{"six", []float64{6, 0.25, 0.75, -0.2, -5, 3.5}, []uint8{0x7, 0x0, 0x2, 0x0, 0xE, 0x6}, 127},
		// amax 3.25: s₁ = 1 (3.25/6 < 1), g = 3, 1, −0.5, 2 (2.5 → 2, tie even) → a₂ = 3, s₂ = 1/2:
		// codes double to 6, 2, −1, 4; one stage would store scale 1 and codes 3, 1, −0.5, 2
		{"three", []float64{3.25, 1, -0.5, 2.5}, []uint8{0x7, 0x4, 0xA, 0x6}, 126},
		// amax 12: s₁ = 2, 12/2 = 6; 5 → 2.5 → 2 (tie even) → 4
		{"twelve", []float64{12, 5, -7}, []uint8{0x7, 0x4, 0xE}, 128},
		// floor: amax 5.5·2^-15: s₁ = 2^-15, g = 6, 1.5, 0.5 (0.6 → 0.5); s₂ = 2^-13 (floor):
		// v/s₂ = 1.5, 0.375 → 0.5, 0.125 → 0; a single stage would give 0.6·2^-15/2^-13 = 0.15 → 0 too,
		// but 1.4·2^-15 → g = 1.5 → 0.375 → 0.5 where one stage gives 0.35 → 0.5; and 0.9·2^-15 → g = 1 → 0.25 → 0 (tie even)
		// where one stage gives 0.225 → 0
		{"floor", []float64{5.5 * 0x1p-15, 1.4 * 0x1p-15, 0.6 * 0x1p-15, 2.9 * 0x1p-15}, []uint8{0x3, 0x1, 0x0, 0x2}, 114},
		// double rounding at the floor: 2.6·2^-15 → g = 3 → 0.75 → 1 (tie even); one stage: 0.65 → 0.5
		{"floor-double", []float64{5.5 * 0x1p-15, 2.6 * 0x1p-15}, []uint8{0x3, 0x2}, 114},
	}
	for _, c := range cases {
		codes, scale := fp4Token(c.blk)
		if scale != c.scale {
			t.Errorf("%s: scale byte %d, want %d", c.name, scale, c.scale)
		}
		for k := range c.codes {
			if codes[k] != c.codes[k] {
				t.Errorf("%s: value %d (%g): code 0x%x, want 0x%x", c.name, k, c.blk[k], codes[k], c.codes[k])
			}
		}
	}
}

// TestStoreFP4Layout checks the slot layout and the nibble order on a
// hand case: P = 2, slot 3 (page 1, offset 1), with dim 0 = 6 and
// dim 1 = −1 under s₂ = 1 (block 0), and block 3's amax 0.75 (s₁ = 2^-3,
// codes of 6: scale 2^-3).
func TestStoreFP4Layout(t *testing.T) {
	p := config(NormRMS, StyleInterleaved, 64, false, StoreFP4, ScaleUE8M0, 2, 2)
	cache := make([]byte, p.NumPages*p.PageBytes())
	if len(cache) != 2*2*68 {
		t.Fatalf("cache %d bytes, want 272", len(cache))
	}
	var z [Dim]float64
	z[0], z[1], z[96] = 6, -1, 0.75
	storeFP4(p, cache, 3, &z)
	page := 136
	if got := cache[page+64]; got != 0xA7 {
		t.Errorf("byte 0 of slot 3 = 0x%02x, want 0xA7 (dim 0 = 6 in the low nibble, dim 1 = −1 in the high one)", got)
	}
	if got := cache[page+2*64+4 : page+2*64+8]; string(got) != string([]byte{127, 114, 114, 124}) {
		t.Errorf("scales of slot 3 = %v, want [127 114 114 124]", got)
	}
	if got := cache[page+64+48]; got != 0x07 {
		t.Errorf("byte 48 of slot 3 = 0x%02x, want 0x07 (dim 96 = 6·2^-3)", got)
	}
	for i, b := range cache {
		inSlot := (i >= page+64 && i < page+128) || (i >= page+132 && i < page+136)
		if !inSlot && b != 0 {
			t.Fatalf("byte %d outside slot 3 written (0x%02x)", i, b)
		}
	}
}

// fp4Configs are the configurations the families accept with the FP4
// store, as suite parameters.
func fp4Configs() []map[string]any {
	var out []map[string]any
	for _, cfg := range falseAlarmConfigs() {
		if cfg["store"] == StoreFP4 {
			out = append(out, cfg)
		}
	}
	return out
}

// TestFP4BoundSeeds: over 10,000 seeded FP4 cases with KD_LONG=1 (every
// family and FP4 configuration in rotation, N = 9, P = 2; by default
// 1,000, -short 200: about 3 s per 1,000 on one core) the derived
// bound admits every legitimate binary32 kernel (one in rotation per
// case), and rejects each FP4 mutant in every case where its cache
// differs from the plain binary32 kernel's on a specified token or a
// canary and the case is tight (tightCase: where a LayerNorm of a
// near-constant token leaves the bound wider than the values, any
// scale is legitimate); each FP4 mutant must be rejected in some case.
func TestFP4BoundSeeds(t *testing.T) {
	want := 1000
	switch {
	case os.Getenv("KD_LONG") != "":
		want = 10000
	case testing.Short():
		want = 200
	}
	fams, cfgs := Families(), fp4Configs()
	var fp4Mutants []difftest.Mutant
	for _, m := range Mutants() {
		if strings.HasPrefix(m.Name, "fp4-") {
			fp4Mutants = append(fp4Mutants, m)
		}
	}
	if len(fp4Mutants) != 4 {
		t.Fatalf("%d FP4 mutants, want 4", len(fp4Mutants))
	}
	caught := map[string]int{}
	ran, loose, byFamily := 0, 0, map[string]int{}
	for seed := uint64(1); ran < want; seed++ {
		fam := fams[seed%uint64(len(fams))]
		cfg := cfgs[(seed/uint64(len(fams)))%uint64(len(cfgs))]
		if fam == FamilyLiteral {
			continue
		}
		c := seededCase("fp4-seeds", fam, cfg, seed)
		if c == nil {
			continue // the family does not take this configuration
		}
		ran++
		byFamily[fam]++
		ref := reference(t, c)
		l := legitimate[seed%uint64(len(legitimate))]
		if failed, why := outcome(t, c, ref, func(o []*difftest.Tensor) error { return runSim(c, o, l.sim) }); failed {
			t.Errorf("%s seed %d %v, kernel %s: false alarm: %s", c.ID, seed, c.Params, l.name, why)
		}
		tight := tightCase(c)
		plain := newCache(c)
		if err := runSim(c, []*difftest.Tensor{plain}, sim32{}); err != nil {
			t.Fatal(err)
		}
		for _, m := range fp4Mutants {
			got := newCache(c)
			if err := m.Run(c, []*difftest.Tensor{got}); err != nil {
				t.Fatal(err)
			}
			if (Kernel{}).Match(c, []*difftest.Tensor{got}, []*difftest.Tensor{plain}) {
				continue // the fault changed nothing this case checks
			}
			failed, why := outcome(t, c, ref, func(o []*difftest.Tensor) error { copy(o[0].Data, got.Data); return nil })
			if !failed && !tight {
				loose++
				continue
			}
			if !failed {
				t.Errorf("%s seed %d %v: mutant %s differs from the kernel but passes: %s", c.ID, seed, c.Params, m.Name, why)
				continue
			}
			caught[m.Name]++
		}
	}
	for _, m := range fp4Mutants {
		if caught[m.Name] == 0 {
			t.Errorf("mutant %s never caught in %d cases", m.Name, ran)
		}
	}
	if byFamily["fp4-blocks"] == 0 {
		t.Errorf("no fp4-blocks case among %d", ran)
	}
	t.Logf("%d FP4 cases (by family %v); mutants caught in %v cases (the rest: identical output, or %d passes in cases with a loose bound)", ran, byFamily, fmt.Sprint(caught), loose)
}

// tightCase reports whether every written, specified token of c has a
// bound below 2^-12 of its largest value: there a mutant's different
// bytes are outside rounding error.
func tightCase(c *difftest.Case) bool {
	in, err := load(c)
	if err != nil {
		return false
	}
	var tb tokenBound
	for t := 0; t < in.n; t++ {
		if in.loc.I64(t) < 0 {
			continue
		}
		in.analyze(t, &tb)
		if tb.dc != "" {
			continue
		}
		amax, emax := 0.0, 0.0
		for k := range tb.z {
			amax = max(amax, math.Abs(tb.z[k]))
			emax = max(emax, tb.e[k])
		}
		if emax > amax*0x1p-12 {
			return false
		}
	}
	return true
}

// TestFP4VariantsDiagnosed runs the two one-stage FP4 packers of the
// field on the quick suite's FP4 cases: each fails the check (a block
// whose largest code is 3 stores another scale byte), and the diagnosis
// names the variant run. On Gaussian keys the two packers may agree (no
// value falls exactly on a midpoint), so there both names may match; the
// fp4-blocks case has exact midpoints and tells them apart.
func TestFP4VariantsDiagnosed(t *testing.T) {
	for _, name := range []string{variantFP4OneStage, variantFP4TiesDownPack} {
		var v triage.Variant
		for _, x := range Variants() {
			if x.Name == name {
				v = x
			}
		}
		impl := difftest.MutantImpl{Kernel: KernelName, Mutant: difftest.Mutant{Name: v.Name, Run: v.Run}}
		failed := 0
		for _, spec := range loadSuite(t, "quick") {
			c := kerneltest.Draw(t, Kernel{}, spec, 1)
			if p, _ := paramsOf(c); p.Store != StoreFP4 {
				continue
			}
			rec, out := kerneltest.RunCase(t, Kernel{}, impl, c)
			if !rec.Failed() {
				t.Errorf("%s passes %s", name, spec.ID())
				continue
			}
			failed++
			d := triage.Diagnose(context.Background(), Kernel{}, c, out.Got, out.Want, 0)
			t.Logf("%s on %s: diagnosed as %v", name, spec.ID(), d.Matches)
			if !slices.Contains(d.Matches, name) {
				t.Errorf("%s on %s: diagnosed as %v", name, spec.ID(), d.Matches)
			}
			if spec.Family == "fp4-blocks" && !slices.Equal(d.Matches, []string{name}) {
				t.Errorf("%s on %s: diagnosed as %v, want it alone", name, spec.ID(), d.Matches)
			}
		}
		if failed == 0 {
			t.Errorf("%s: no FP4 case in the quick suite", name)
		}
	}
}

// A zero stored as −0 (code 0x8) fails, reported with a ratio over the
// bound (a ratio ≤ 1 would read as a pass) and the rule beside it.
func TestFP4NegativeZeroFails(t *testing.T) {
	for seed := uint64(1); seed < 50; seed++ {
		c := seededCase("fp4-negzero", "gaussian", fp4Configs()[0], seed)
		if c == nil {
			continue
		}
		in, err := load(c)
		if err != nil {
			t.Fatal(err)
		}
		want := reference(t, c)
		got := want.Clone()
		for tok := 0; tok < in.n; tok++ {
			slot := in.loc.I64(tok)
			if slot < 0 {
				continue
			}
			codesAt, _ := slotBytes(in.p, int(slot))
			for k := 0; k < 128; k++ {
				b := &got.Data[codesAt+k/2]
				shift := uint(4 * (k % 2))
				if *b>>shift&0xF != 0 {
					continue
				}
				*b |= 0x8 << shift
				r := check(c, got, want)
				if !r.Failed() || r.Class != difftest.Mismatch || len(r.Worst) == 0 {
					t.Fatalf("seed %d: token %d dim %d stored as 0x8: %s %q, want a mismatch", seed, tok, k, r.Class, r.Message)
				}
				w := r.Worst[0]
				if w.Index != fmt.Sprintf("token %d slot %d dim %d", tok, slot, k) || !strings.Contains(w.Got, "a zero is stored as 0x0") || w.Ratio == nil || *w.Ratio != ratioCap { // not a ratio that prints as 1 (%.3g), which reads as the bound
					ratio := "nil"
					if w.Ratio != nil {
						ratio = fmt.Sprint(*w.Ratio)
					}
					t.Errorf("worst %s: got %q, ratio %s; want dim %d, the 0x0 rule and ratio %g", w.Index, w.Got, ratio, k, float64(ratioCap))
				}
				return
			}
		}
	}
	t.Fatal("no zero code in 50 seeds")
}
