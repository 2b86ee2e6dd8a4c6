package normrope

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
)

// loadSuite reads fixtures/suites/NAME/normrope.toml with the harness's
// parser (suite.ParseSuite), so [case.matrix] tables come back
// expanded, in suite order.
func loadSuite(t *testing.T, name string) []difftest.CaseSpec {
	t.Helper()
	path := filepath.Join("..", "..", "fixtures", "suites", name, "normrope.toml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := suite.ParseSuite(path, raw)
	if err != nil {
		t.Fatal(err)
	}
	var specs []difftest.CaseSpec
	for _, sc := range cases {
		if sc.Spec.Kernel != KernelName {
			t.Fatalf("%s: case %q: kernel %q, want %q", path, sc.Spec.Name, sc.Spec.Kernel, KernelName)
		}
		specs = append(specs, sc.Spec)
	}
	if len(specs) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	return specs
}

const canary = 0xA5

// outcome runs impl on a fresh canary-filled cache and reports whether it
// failed: a changed byte outside Written (the harness's guard/canary
// check) or a failing Check against the reference.
func outcome(t *testing.T, c *difftest.Case, want *difftest.Tensor, impl func([]*difftest.Tensor) error) (failed bool, why string) {
	t.Helper()
	got := newCache(c)
	if err := impl([]*difftest.Tensor{got}); err != nil {
		t.Fatalf("%s: run: %v", c.ID, err)
	}
	if msg := canaryViolation(c, got); msg != "" {
		return true, "canary: " + msg
	}
	r := Check(c, []*difftest.Tensor{got}, []*difftest.Tensor{want})
	return r.Failed(), string(r.Class) + ": " + r.Message
}

func newCache(c *difftest.Case) *difftest.Tensor {
	o := c.Outputs[0]
	ten := difftest.MustTensor(o.Name, o.DType, o.Shape...)
	for i := range ten.Data {
		ten.Data[i] = canary
	}
	return ten
}

// canaryViolation returns a description of the first byte outside the
// written ranges that lost the canary, or "".
func canaryViolation(c *difftest.Case, cache *difftest.Tensor) string {
	owned := make([]bool, len(cache.Data))
	for _, r := range (Kernel{}).Written(c)[0] {
		for i := r.Off; i < r.Off+r.Len; i++ {
			owned[i] = true
		}
	}
	for i, b := range cache.Data {
		if !owned[i] && b != canary {
			return "byte " + itoa(i) + " outside every written slot changed"
		}
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
// every mutant fails at least one.
func runSuite(t *testing.T, name string) {
	specs := loadSuite(t, name)
	caught := map[string]string{}
	for _, spec := range specs {
		c, err := NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
		if err != nil {
			t.Fatalf("%s: %v", spec.ID(), err)
		}
		if err := Validate(c); err != nil {
			t.Fatalf("%s: %v", spec.ID(), err)
		}
		want := newCache(c)
		if err := Compute(c, want); err != nil {
			t.Fatal(err)
		}
		if failed, why := outcome(t, c, want, func(o []*difftest.Tensor) error { return Compute(c, o[0]) }); failed {
			t.Errorf("%s: reference fails its own check: %s", c.ID, why)
		}
		for _, m := range Mutants() {
			if _, done := caught[m.Name]; done {
				continue
			}
			if failed, why := outcome(t, c, want, func(o []*difftest.Tensor) error { return m.Run(c, o) }); failed {
				caught[m.Name] = c.ID + " (" + why + ")"
			}
		}
	}
	for _, m := range Mutants() {
		if by, ok := caught[m.Name]; ok {
			t.Logf("%-26s caught by %.160s", m.Name, by)
		} else {
			t.Errorf("mutant %s is not caught by suite %s", m.Name, name)
		}
	}
}

func TestSuiteQuick(t *testing.T) { runSuite(t, "quick") }

func TestSuiteDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("default suite: run without -short")
	}
	runSuite(t, "default")
}
