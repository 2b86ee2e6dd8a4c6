package normrope

import (
	"context"
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
// diagnosed "passes as intermediate=bf16". The same model without the
// rounding passes both ways, and the declared precision still catches
// every catalog mutant but the two whose fault is one store rounding
// (bf16-truncate, fp8-double-round): a declared bf16 intermediate widens
// the bound past one bf16 ULP of the Hadamard outputs, so a fault of that
// size is within the declared precision (the f32 contract catches both).
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
			want := newCache(c)
			if err := Compute(c, want); err != nil {
				t.Fatal(err)
			}
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
			}
			if f, _ := outcome(t, c, want, func(o []*difftest.Tensor) error { return runSim(c, o, sim32{tree: true}) }); f {
				t.Errorf("%s (declared %v): the f32 model fails", c.ID, declared)
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
	finer := []string{"bf16-truncate", "fp8-double-round"}
	for _, m := range Mutants() {
		if caught[m.Name] == slices.Contains(finer, m.Name) {
			t.Errorf("mutant %s: caught = %v with intermediate bf16 declared", m.Name, caught[m.Name])
		}
	}
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
		want := newCache(c)
		if err := Compute(c, want); err != nil {
			t.Fatal(err)
		}
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
