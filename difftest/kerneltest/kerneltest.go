// Package kerneltest holds the test helpers every kernel package's tests
// share: drawing a case as the harness does, running an implementation
// into poisoned outputs and judging one run (the canary, then the
// kernel's Check), the suite check that the reference passes and every
// mutant is caught, the capture round trip, and the checks of a shrunk
// case. The parameter and suite-file helpers are in difftest/paramtest.
// A kernel's tests pass it their difftest.Kernel; it imports no kernel.
package kerneltest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// Draw draws spec with k at seed (key rng.CaseKey(seed, spec ID), as a
// suite run does) and validates it, failing t with the spec's ID on
// either error.
func Draw(t testing.TB, k difftest.Kernel, spec difftest.CaseSpec, seed uint64) *difftest.Case {
	t.Helper()
	c, err := k.NewCase(spec, seed, rng.CaseKey(seed, spec.ID()))
	if err != nil {
		t.Fatalf("%s: %v", spec.ID(), err)
	}
	if err := k.Validate(c); err != nil {
		t.Fatalf("%s: %v", spec.ID(), err)
	}
	return c
}

// Run returns c's outputs filled with difftest.PoisonA (0xA5 bytes, the
// harness's first run) after run wrote them, failing t when run errs.
func Run(t testing.TB, c *difftest.Case, run func(outs []*difftest.Tensor) error) []*difftest.Tensor {
	t.Helper()
	outs := difftest.PoisonedTensors(c, difftest.PoisonA)
	if err := run(outs); err != nil {
		t.Fatalf("%s: run: %v", c.ID, err)
	}
	return outs
}

// Reference returns k's reference outputs of c, written into poisoned
// outputs (Run), failing t when the reference errs.
func Reference(t testing.TB, k difftest.Kernel, c *difftest.Case) []*difftest.Tensor {
	t.Helper()
	return Run(t, c, func(outs []*difftest.Tensor) error { return k.Reference(c, outs) })
}

// Canary returns the harness's canary verdict on outputs that started as
// difftest.PoisonA: nil, or an error naming the first byte outside what
// k writes (difftest.Untouched: Written and Unspecified) that changed.
// A contract whose ranges are wrong fails t.
func Canary(t testing.TB, k difftest.Kernel, c *difftest.Case, outs []*difftest.Tensor) error {
	t.Helper()
	_, untouched, err := difftest.Untouched(k, c)
	if err != nil {
		t.Fatalf("%s: %v", c.ID, err)
	}
	return difftest.CheckCanary(outs, untouched, difftest.PoisonA)
}

// Judge runs run on fresh poisoned outputs (Run) and judges them as the
// harness judges one run: a changed byte outside what k writes fails as
// "canary: …" (Canary); then each of extra, a kernel's own one-run check
// of got (a message, "" when it holds); then k.Check against want, whose
// class and message are why.
func Judge(t testing.TB, k difftest.Kernel, c *difftest.Case, want []*difftest.Tensor, run func(outs []*difftest.Tensor) error, extra ...func(got []*difftest.Tensor) string) (failed bool, why string) {
	t.Helper()
	got := Run(t, c, run)
	if err := Canary(t, k, c, got); err != nil {
		return true, "canary: " + err.Error()
	}
	for _, x := range extra {
		if msg := x(got); msg != "" {
			return true, msg
		}
	}
	r := k.Check(c, got, want)
	return r.Failed(), string(r.Class) + ": " + r.Message
}

// Judgement is a kernel test's verdict on one run of c: run writes into
// fresh outputs, which are judged against the reference's want (Judge,
// or a kernel's own wrapper of it).
type Judgement func(c *difftest.Case, want []*difftest.Tensor, run func(outs []*difftest.Tensor) error) (failed bool, why string)

// CatchMutants checks a suite as the selftest does, with judge the
// verdict of one run (nil: Judge with k): every case of specs, drawn at
// seed and validated (Draw), must pass with k's reference, whose run must
// be equivalent to the reference's want (k.Equivalent: a second run of
// the reference, so judge must run what it is given); and every mutant
// of ms must fail at least one case (each is tried until its first). It
// logs the case that caught each mutant and the time taken, and fails t
// for each mutant no case catches, naming suite (a label: "quick",
// "quick, seed 2").
func CatchMutants(t testing.TB, k difftest.Kernel, suite string, specs []difftest.CaseSpec, seed uint64, ms []difftest.Mutant, judge Judgement) {
	t.Helper()
	if judge == nil {
		judge = func(c *difftest.Case, want []*difftest.Tensor, run func([]*difftest.Tensor) error) (bool, string) {
			return Judge(t, k, c, want, run)
		}
	}
	caught := map[string]string{}
	start := time.Now()
	for _, spec := range specs {
		c := Draw(t, k, spec, seed)
		want := Reference(t, k, c)
		var again []*difftest.Tensor
		failed, why := judge(c, want, func(o []*difftest.Tensor) error { again = o; return k.Reference(c, o) })
		switch {
		case failed:
			t.Errorf("%s: reference fails its own check: %s", c.ID, why)
		case again == nil:
			t.Fatalf("%s: the judgement did not run the reference", c.ID)
		default:
			if err := k.Equivalent(c, again, want); err != nil {
				t.Errorf("%s: reference not equivalent to itself: %v", c.ID, err)
			}
		}
		for _, m := range ms {
			if _, done := caught[m.Name]; done {
				continue
			}
			if failed, why := judge(c, want, func(o []*difftest.Tensor) error { return m.Run(c, o) }); failed {
				caught[m.Name] = c.ID + " (" + why + ")"
			}
		}
	}
	for _, m := range ms {
		if by, ok := caught[m.Name]; ok {
			t.Logf("%-26s caught by %.160s", m.Name, by)
		} else {
			t.Errorf("mutant %s is not caught by suite %s", m.Name, suite)
		}
	}
	t.Logf("suite %s: %d cases in %v", suite, len(specs), time.Since(start).Round(time.Millisecond))
}

// Mutant returns k's catalog mutant name, failing t when there is none.
func Mutant(t testing.TB, k difftest.Kernel, name string) difftest.Mutant {
	t.Helper()
	for _, m := range k.Mutants() {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("%s has no mutant %s", k.Name(), name)
	return difftest.Mutant{}
}

// RunMutant returns the outputs k's catalog mutant name writes for c,
// into poisoned outputs (Run), failing t when there is no such mutant or
// it errs.
func RunMutant(t testing.TB, k difftest.Kernel, c *difftest.Case, name string) []*difftest.Tensor {
	t.Helper()
	m := Mutant(t, k, name)
	return Run(t, c, func(outs []*difftest.Tensor) error { return m.Run(c, outs) })
}

// Captured returns what a capture holds of c: its params as JSON and its
// inputs by name (the same tensors, not copies), failing t when the params
// do not marshal. A test deletes or changes entries to check FromTensors'
// errors.
func Captured(t testing.TB, c *difftest.Case) (json.RawMessage, map[string]*difftest.Tensor) {
	t.Helper()
	raw, err := json.Marshal(c.Params)
	if err != nil {
		t.Fatal(err)
	}
	tensors := map[string]*difftest.Tensor{}
	for _, in := range c.Inputs {
		tensors[in.Name] = in
	}
	return raw, tensors
}

// RoundTrip rebuilds c as a replay does, from what a capture holds of it
// (Captured) through k.FromTensors, and validates the result, failing t
// on any error. A kernel's test then checks that the rebuilt case is the
// same case (same reference, same verdicts).
func RoundTrip(t testing.TB, k difftest.Kernel, c *difftest.Case) *difftest.Case {
	t.Helper()
	raw, tensors := Captured(t, c)
	r, err := k.FromTensors(c.ID, raw, tensors)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Validate(r); err != nil {
		t.Fatal(err)
	}
	return r
}

// RunCase runs c through the harness's pipeline (difftest.CaseRun: poison,
// guards, two runs, the reference, Check) under impl and returns its
// record and outcome, failing t on an internal error.
func RunCase(t testing.TB, k difftest.Kernel, impl difftest.Impl, c *difftest.Case) (*difftest.Record, difftest.Outcome) {
	t.Helper()
	rec := difftest.NewRecord(c, impl.Name())
	out, err := (&difftest.CaseRun{Impl: impl}).RunCase(context.Background(), k, c, rec)
	if err != nil {
		t.Fatal(err)
	}
	return rec, out
}
