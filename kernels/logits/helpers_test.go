package logits

import (
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

const canary = 0xA5

// newLogits returns a canary-filled logits output for c.
func newLogits(c *difftest.Case) *difftest.Tensor {
	o := c.Outputs[0]
	t := difftest.MustTensor(o.Name, o.DType, o.Shape...)
	for i := range t.Data {
		t.Data[i] = canary
	}
	return t
}

// mustCase draws a case of family with params at seed 1.
func mustCase(t *testing.T, family string, params map[string]any) *difftest.Case {
	t.Helper()
	spec := difftest.CaseSpec{Kernel: KernelName, Family: family, Name: "t/" + family, Params: params}
	c, err := NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(c); err != nil {
		t.Fatal(err)
	}
	return c
}

// reference runs Compute into a fresh canary-filled output.
func reference(t *testing.T, c *difftest.Case) *difftest.Tensor {
	t.Helper()
	want := newLogits(c)
	if err := Compute(c, want); err != nil {
		t.Fatal(err)
	}
	return want
}

// outcome runs impl on a fresh canary-filled output and reports whether it
// failed: a changed byte outside Written and Unspecified (the harness's
// canary check), a canary left inside Written (unwritten), or a failing
// Check against the reference.
func outcome(t *testing.T, c *difftest.Case, want *difftest.Tensor, impl func([]*difftest.Tensor) error) (failed bool, why string) {
	t.Helper()
	got := newLogits(c)
	if err := impl([]*difftest.Tensor{got}); err != nil {
		t.Fatalf("%s: run: %v", c.ID, err)
	}
	owned := make([]byte, len(got.Data)) // 1 written, 2 unspecified
	for _, r := range (Kernel{}).Written(c)[0] {
		for i := r.Off; i < r.Off+r.Len; i++ {
			owned[i] = 1
		}
	}
	for _, r := range (Kernel{}).Unspecified(c)[0] {
		for i := r.Off; i < r.Off+r.Len; i++ {
			owned[i] = 2
		}
	}
	eb := 4
	if c.Outputs[0].DType == difftest.BF16 {
		eb = 2
	}
	for i := 0; i < len(got.Data); i += eb {
		allCanary := true
		for _, x := range got.Data[i : i+eb] {
			allCanary = allCanary && x == canary
		}
		switch {
		case owned[i] == 0 && !allCanary:
			return true, "canary: logits element " + itoa(i/eb) + " outside the written range changed"
		case owned[i] == 1 && allCanary:
			return true, "unwritten: logits element " + itoa(i/eb) + " kept the canary"
		}
	}
	r := Check(c, []*difftest.Tensor{got}, []*difftest.Tensor{want})
	return r.Failed(), string(r.Class) + ": " + r.Message
}
