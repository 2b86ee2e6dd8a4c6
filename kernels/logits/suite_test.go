package logits

import (
	"os"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
	"github.com/kerneldiff/kerneldiff/difftest/paramtest"
)

// loadSuite reads fixtures/suites/NAME/logits.toml (paramtest.SuiteSpecs).
func loadSuite(t *testing.T, name string) []difftest.CaseSpec {
	return paramtest.SuiteSpecs(t, name, "logits.toml", KernelName)
}

// runSuite checks that the reference passes every case of a suite (and is
// equivalent to a second run of itself) and that every mutant of ms fails
// one, each stopping at its first caught case as the selftest does
// (kerneltest.CatchMutants, judged by outcome).
func runSuite(t *testing.T, name string, ms []difftest.Mutant) {
	kerneltest.CatchMutants(t, Kernel{}, name, loadSuite(t, name), 1, ms, func(c *difftest.Case, want []*difftest.Tensor, run func([]*difftest.Tensor) error) (bool, string) {
		return outcome(t, c, want[0], run)
	})
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
