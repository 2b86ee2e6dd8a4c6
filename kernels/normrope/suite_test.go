package normrope

import (
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
	"github.com/kerneldiff/kerneldiff/difftest/paramtest"
)

// loadSuite reads the norm_rope_store cases of suite NAME with the
// harness's parser, in suite order: every case of
// fixtures/suites/NAME/normrope.toml, then this kernel's cases of v41.toml
// (the DeepSeek-V4.1 formats: FP4 keys).
func loadSuite(t *testing.T, name string) []difftest.CaseSpec {
	t.Helper()
	specs := paramtest.SuiteSpecs(t, name, "normrope.toml", KernelName)
	return append(specs, paramtest.KernelSpecs(t, name, "v41.toml", KernelName)...)
}

// outcome runs impl on a fresh canary-filled cache and judges it as the
// harness judges one run (kerneltest.Judge): a changed byte outside
// Written, then Check against the reference.
func outcome(t *testing.T, c *difftest.Case, want *difftest.Tensor, impl func([]*difftest.Tensor) error) (failed bool, why string) {
	t.Helper()
	return kerneltest.Judge(t, Kernel{}, c, []*difftest.Tensor{want}, impl)
}

// newCache returns c's cache filled with the canary (difftest.PoisonA).
func newCache(c *difftest.Case) *difftest.Tensor {
	return difftest.PoisonedTensors(c, difftest.PoisonA)[0]
}

// canaryViolation returns the first byte outside the written ranges that
// lost the canary (kerneltest.Canary's message), or "".
func canaryViolation(c *difftest.Case, cache *difftest.Tensor) string {
	_, untouched, err := difftest.Untouched(Kernel{}, c)
	if err == nil {
		err = difftest.CheckCanary([]*difftest.Tensor{cache}, untouched, difftest.PoisonA)
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// runSuite checks that the reference passes every case of a suite and that
// every mutant fails at least one (kerneltest.CatchMutants).
func runSuite(t *testing.T, name string) {
	kerneltest.CatchMutants(t, Kernel{}, name, loadSuite(t, name), 1, Mutants(), nil)
}

func TestSuiteQuick(t *testing.T) { runSuite(t, "quick") }

func TestSuiteDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("default suite: run without -short")
	}
	runSuite(t, "default")
}
