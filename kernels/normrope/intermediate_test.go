package normrope

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// TestIntermediateBF16 runs the binary32 kernel model with bf16 rounding
// between norm, RoPE, Hadamard and the store (SGLang's unfused V3.2 path)
// over the default suite: declared (intermediate = bf16) it passes every
// case; under the default contract it fails some, and each of those is
// diagnosed, in the words a report prints, "passes as intermediate=bf16:
// bf16 between norm, RoPE, Hadamard and the store, …". The same model without the
// rounding passes both ways (a declared bf16 intermediate admits the f32
// contract's values too), and the declared precision still catches every
// catalog mutant: the chain's bound is derived from its own roundings, not
// widened by a bf16 ULP per stage (bound.go, analyzeAs), so a truncating
// or doubly rounding store is told apart from the chain as it is from the
// contract.
func TestIntermediateBF16(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the default suite")
	}
	chain := sim32{tree: true, bf16Stages: true}
	failedF32 := 0
	caught := map[string]bool{}
	for _, spec := range loadSuite(t, "default") {
		for _, declared := range []bool{false, true} {
			s := spec
			if declared {
				s = withParam(spec, "intermediate", IntermediateBF16)
			}
			c, err := NewCase(s, 1, rng.CaseKey(1, spec.ID()))
			if err != nil {
				t.Fatalf("%s: %v", s.ID(), err)
			}
			want := reference(t, c)
			failed, why := outcome(t, c, want, func(o []*difftest.Tensor) error { return runSim(c, o, chain) })
			if declared && failed {
				t.Errorf("%s, intermediate bf16 declared: the bf16 chain fails: %s", c.ID, why)
			}
			if !declared && failed {
				failedF32++
				got := newCache(c)
				if err := runSim(c, []*difftest.Tensor{got}, chain); err != nil {
					t.Fatal(err)
				}
				d := triage.Diagnose(context.Background(), Kernel{}, c, []*difftest.Tensor{got}, []*difftest.Tensor{want}, 0)
				if !slices.Contains(d.Matches, VariantIntermediateBF16) {
					t.Errorf("%s: the bf16 chain is diagnosed as %v, want %s (%s)", c.ID, d.Matches, VariantIntermediateBF16, why)
				}
				lines := triage.DiagnosisLines(&difftest.Record{Kernel: KernelName, Diagnosis: d.Matches})
				if !slices.Contains(lines, "passes as intermediate=bf16: bf16 between norm, RoPE, Hadamard and the store, as SGLang's unfused V3.2 path does") {
					t.Errorf("%s: diagnosis lines %q", c.ID, lines)
				}
			}
			if f, why := outcome(t, c, want, func(o []*difftest.Tensor) error { return runSim(c, o, sim32{tree: true}) }); f {
				t.Errorf("%s (declared %v): the f32 model fails: %s", c.ID, declared, why)
			}
			if !declared {
				continue
			}
			for _, m := range Mutants() {
				if caught[m.Name] {
					continue
				}
				if f, _ := outcome(t, c, want, func(o []*difftest.Tensor) error { return m.Run(c, o) }); f {
					caught[m.Name] = true
				}
			}
		}
	}
	if failedF32 == 0 {
		t.Error("the bf16 chain passes every case under the f32 contract: the suite does not see the rounding")
	}
	t.Logf("the bf16 chain fails %d default cases under the f32 contract", failedF32)
	for _, m := range Mutants() {
		if !caught[m.Name] {
			t.Errorf("mutant %s passes every default case with intermediate bf16 declared", m.Name)
		}
	}
}

// chainLegitimate lists bf16 chains that a declared bf16 intermediate
// must admit: the chain's stages computed by the legitimate binary32
// variants of falsealarm_test.go (summation orders, Hadamard algorithm and
// scaling point, rsqrtf ±2 ULP, reciprocal codes, Welford).
func chainLegitimate() []struct {
	name string
	sim  sim32
} {
	var out []struct {
		name string
		sim  sim32
	}
	for _, l := range legitimate {
		s := l.sim
		s.bf16Stages = true
		out = append(out, struct {
			name string
			sim  sim32
		}{"bf16-chain/" + l.name, s})
	}
	return out
}

// chainAdmits reports whether a catalog mutant's output (an f32 kernel
// with one fault) may be a value of the declared bf16 chain itself on a
// case whose f32 contract catches it, so that intermediate = bf16 passes
// it there: fp8-double-round (e4m3 through f16) with a ue8m0 scale. The
// f16 step changes a code only where z/scale lies within half an f16 step
// of an e4m3 midpoint; there the chain's bf16 value of z (8 significant
// bits, coarser than f16's 11) lies on that midpoint too, and both break
// the tie to even: the mutant's codes are then the chain's wherever they
// are not the contract's, and on a case where every other value lies off
// the midpoints that bf16 rounding can cross (a Hadamard output of few
// distinct magnitudes, as one outlier gives), the whole slot is the
// chain's. With a plain scale z/scale has 24 bits and the codes differ.
func chainAdmits(m string, p Params) bool {
	return m == "fp8-double-round" && p.Store == StoreFP8 && p.ScaleFmt == ScaleUE8M0
}

// TestIntermediateBF16Catalog: with intermediate = bf16 declared, over
// every family and configuration (seeded cases; KD_LONG=1 runs ten seeds
// of each), every legitimate bf16 chain passes every case, and every
// catalog mutant is still caught, in two forms. As the catalog has it (an
// f32 kernel with one fault): on every case where the f32 contract
// catches it, but where its values are the chain's (chainAdmits). Built
// on the bf16 chain (the same fault in a kernel that rounds to bf16
// between the stages, bf16-truncate truncating each of those
// conversions): on cases of every mutant (a fault on the chain shows on
// fewer cases: fp8-no-saturate only where f32(amax/448) rounds below the
// token's bf16 amax, fp8-double-round only where z/scale lands within half
// an f16 step of an e4m3 midpoint, which a ue8m0 scale never lets it: the
// chain's z/scale then has 8 significant bits and f16 holds it exactly).
// So the declared precision admits exactly that rounding.
func TestIntermediateBF16Catalog(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every family and configuration")
	}
	seeds := uint64(1)
	if os.Getenv("KD_LONG") != "" {
		seeds = 10
	}
	chains := chainLegitimate()
	caughtF32 := map[string]int{}
	caughtChain := map[string]int{}
	firstOnChain := map[string]string{} // the first case that catches the mutant built on the chain
	cases := 0
	for _, fam := range Families() {
		for ci, cfg := range falseAlarmConfigs() {
			spec := difftest.CaseSpec{Kernel: KernelName, Family: fam, Name: fmt.Sprintf("ib/%s/%d", fam, ci),
				Params: map[string]any{"N": int64(45), "P": int64(4), "intermediate": IntermediateBF16}}
			for k, v := range cfg {
				spec.Params[k] = v
			}
			if fam == "positions" {
				spec.Params["max_pos"] = int64(5000)
			}
			for seed := uint64(1); seed <= seeds; seed++ {
				c, err := NewCase(spec, seed, rng.CaseKey(seed, spec.ID()))
				if err != nil {
					continue // the family does not take this configuration
				}
				cases++
				p := c.Params.(Params)
				f32 := *c
				pf := p
				pf.Intermediate = ""
				f32.Params = pf
				want := reference(t, c)
				declaredV, contractV := newVerdicts(c, want), newVerdicts(&f32, want)
				for _, l := range chains {
					if failed, why := declaredV.of(t, func(o []*difftest.Tensor) error { return runSim(c, o, l.sim) }); failed {
						t.Errorf("%s seed %d %v, %s: fails the declared bf16 chain: %s", c.ID, seed, c.Params, l.name, why)
					}
				}
				for _, m := range Mutants() {
					if m.Applies != nil && !m.Applies(spec) {
						continue
					}
					// Every case where the contract catches the f32 form
					// is checked; beyond that the two counts below need
					// only one catch each, so a form already caught is
					// run again only where the check above needs it.
					byContract, _ := contractV.of(t, func(o []*difftest.Tensor) error { return m.Run(&f32, o) })
					if (byContract && !chainAdmits(m.Name, p)) || caughtF32[m.Name] == 0 {
						declared, _ := declaredV.of(t, func(o []*difftest.Tensor) error { return m.Run(c, o) })
						if byContract && !declared && !chainAdmits(m.Name, p) {
							t.Errorf("%s seed %d %v: mutant %s is caught by the f32 contract but passes as intermediate bf16", c.ID, seed, c.Params, m.Name)
						}
						if declared {
							caughtF32[m.Name]++
						}
					}
					if caughtChain[m.Name] == 0 {
						onChain := sim32{bf16Stages: true, fault: m.Name}
						if f, _ := declaredV.of(t, func(o []*difftest.Tensor) error { return runSim(c, o, onChain) }); f {
							caughtChain[m.Name]++
							firstOnChain[m.Name] = c.ID
						}
					}
				}
			}
		}
	}
	for _, m := range Mutants() {
		if caughtF32[m.Name] == 0 || caughtChain[m.Name] == 0 {
			t.Errorf("mutant %s: caught on %d cases as the catalog has it and %d built on the bf16 chain, want both > 0", m.Name, caughtF32[m.Name], caughtChain[m.Name])
		}
	}
	t.Logf("%d cases × %d bf16 chains, no false alarm; catalog caught as the catalog has it %v (at least), built on the chain first by %v", cases, len(chains), caughtF32, firstOnChain)
}

// TestPrecisionNotNamedOnGuard: a declared precision explains a failing
// comparison, never a broken canary: write-negative-slot (it writes the
// slot of a token whose out_loc is −1) is diagnosed as itself and not
// "passes as intermediate=bf16", though its written values pass that
// check.
func TestPrecisionNotNamedOnGuard(t *testing.T) {
	for _, spec := range loadSuite(t, "quick") {
		c, err := NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
		if err != nil {
			t.Fatal(err)
		}
		want := reference(t, c)
		var m difftest.Mutant
		for _, mm := range Mutants() {
			if mm.Name == "write-negative-slot" {
				m = mm
			}
		}
		got := newCache(c)
		if err := m.Run(c, []*difftest.Tensor{got}); err != nil {
			t.Fatal(err)
		}
		if canaryViolation(c, got) == "" {
			continue
		}
		d := triage.Diagnose(context.Background(), Kernel{}, c, []*difftest.Tensor{got}, []*difftest.Tensor{want}, 0)
		if !slices.Contains(d.Matches, "write-negative-slot") || slices.Contains(d.Matches, VariantIntermediateBF16) {
			t.Errorf("%s: diagnosed as %v", c.ID, d.Matches)
		}
		return
	}
	t.Fatal("no quick case where write-negative-slot breaks a canary")
}
