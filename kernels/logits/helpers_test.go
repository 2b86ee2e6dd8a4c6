package logits

import (
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
)

// newLogits returns a canary-filled (difftest.PoisonA) logits output for c.
func newLogits(c *difftest.Case) *difftest.Tensor {
	return difftest.PoisonedTensors(c, difftest.PoisonA)[0]
}

// mustCase draws a case of family with params at seed 1 and validates it
// (kerneltest.Draw).
func mustCase(t *testing.T, family string, params map[string]any) *difftest.Case {
	t.Helper()
	spec := difftest.CaseSpec{Kernel: KernelName, Family: family, Name: "t/" + family, Params: params}
	return kerneltest.Draw(t, Kernel{}, spec, 1)
}

// reference runs Compute into a fresh canary-filled output
// (kerneltest.Reference).
func reference(t *testing.T, c *difftest.Case) *difftest.Tensor {
	t.Helper()
	return kerneltest.Reference(t, Kernel{}, c)[0]
}

// outcome runs impl on a fresh canary-filled output and judges it as the
// harness judges one run (kerneltest.Judge): a changed byte outside
// Written and Unspecified (the canary check), a logits element inside
// Written that kept the canary (unwritten), then Check against the
// reference.
func outcome(t *testing.T, c *difftest.Case, want *difftest.Tensor, impl func([]*difftest.Tensor) error) (failed bool, why string) {
	t.Helper()
	return kerneltest.Judge(t, Kernel{}, c, []*difftest.Tensor{want}, impl, func(got []*difftest.Tensor) string { return unwritten(c, got[0]) })
}

// unwritten names the first logits element inside Written whose bytes all
// kept the canary, or returns "". (The harness finds an unwritten byte by
// two runs with different poison; one run sees a whole element of canary.)
func unwritten(c *difftest.Case, got *difftest.Tensor) string {
	eb := got.DType.Size()
	for _, r := range (Kernel{}).Written(c)[0] {
		for i := r.Off; i+eb <= r.Off+r.Len; i += eb {
			allCanary := true
			for _, x := range got.Data[i : i+eb] {
				allCanary = allCanary && x == byte(difftest.PoisonA)
			}
			if allCanary {
				return "unwritten: logits element " + itoa(i/eb) + " kept the canary"
			}
		}
	}
	return ""
}
