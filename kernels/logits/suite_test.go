package logits

import (
	"os"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/paramtest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// loadSuite reads fixtures/suites/NAME/logits.toml (paramtest.SuiteSpecs).
func loadSuite(t *testing.T, name string) []difftest.CaseSpec {
	return paramtest.SuiteSpecs(t, name, "logits.toml", KernelName)
}

// runSuite checks that the reference passes every case of a suite (also
// through Equivalent with itself) and that every mutant of ms fails one,
// each stopping at its first caught case as the selftest does.
func runSuite(t *testing.T, name string, ms []difftest.Mutant) {
	specs := loadSuite(t, name)
	caught := map[string]string{}
	start := time.Now()
	for _, spec := range specs {
		c, err := NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
		if err != nil {
			t.Fatalf("%s: %v", spec.ID(), err)
		}
		if err := Validate(c); err != nil {
			t.Fatalf("%s: %v", spec.ID(), err)
		}
		want := reference(t, c)
		if failed, why := outcome(t, c, want, func(o []*difftest.Tensor) error { return Compute(c, o[0]) }); failed {
			t.Errorf("%s: reference fails its own check: %s", c.ID, why)
		}
		if err := (Kernel{}).Equivalent(c, []*difftest.Tensor{want}, []*difftest.Tensor{want}); err != nil {
			t.Errorf("%s: %v", c.ID, err)
		}
		for _, m := range ms {
			if _, done := caught[m.Name]; done {
				continue
			}
			if failed, why := outcome(t, c, want, func(o []*difftest.Tensor) error { return m.Run(c, o) }); failed {
				caught[m.Name] = c.ID + " (" + why + ")"
			}
		}
	}
	for _, m := range ms {
		if by, ok := caught[m.Name]; ok {
			t.Logf("%-26s caught by %.160s", m.Name, by)
		} else {
			t.Errorf("mutant %s is not caught by suite %s", m.Name, name)
		}
	}
	t.Logf("suite %s: %d cases in %v", name, len(specs), time.Since(start).Round(time.Millisecond))
}

func TestSuiteQuick(t *testing.T) { runSuite(t, "quick", Mutants()) }

func TestSuiteDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("default suite: run without -short")
	}
	runSuite(t, "default", Mutants())
}

// TestSuiteLarge (KD_LARGE=1: about 3 GiB of memory per case, minutes)
// runs the large suite, whose cache beyond 2 GiB must catch
// logits-offset-int32 as well as the rest of the catalog.
func TestSuiteLarge(t *testing.T) {
	if os.Getenv("KD_LARGE") == "" {
		t.Skip("KD_LARGE=1 runs the large suite (a cache beyond 2 GiB)")
	}
	runSuite(t, "large", append(Mutants(), LargeMutants()...))
}
