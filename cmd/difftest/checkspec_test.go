package main

import (
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/fixtures"
	"github.com/kerneldiff/kerneldiff/kernels/topk"
)

// topk's CheckSpec must agree with NewCase: the same error, or nil exactly
// when NewCase draws the case. Suite loading relies on it to reject a bad
// case before the first case of a run.
func TestTopkCheckSpecAgreesWithNewCase(t *testing.T) {
	var k topk.Kernel
	agree := func(t *testing.T, spec difftest.CaseSpec) error {
		t.Helper()
		checkErr := k.CheckSpec(spec)
		_, drawErr := k.NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
		if (checkErr == nil) != (drawErr == nil) || (checkErr != nil && checkErr.Error() != drawErr.Error()) {
			t.Errorf("%s: CheckSpec = %v, NewCase = %v", spec.ID(), checkErr, drawErr)
		}
		return checkErr
	}

	// Every case of the embedded suites is accepted.
	for _, name := range suite.SuiteNames(fixtures.Suites()) {
		s, err := suite.LoadSuiteFS(fixtures.Suites(), name)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range s.Cases {
			if c.Spec.Kernel == topk.KernelName {
				if err := agree(t, c.Spec); err != nil {
					t.Errorf("suite %s: %v", name, err)
				}
			}
		}
	}

	// Rejected specs, one per rule NewCase states.
	spec := func(family string, params map[string]any) difftest.CaseSpec {
		return difftest.CaseSpec{Kernel: topk.KernelName, Family: family, Name: "bad", Params: params}
	}
	ok := func(extra ...any) map[string]any {
		m := map[string]any{"K": int64(8), "lengths": []any{int64(16), int64(40)}}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	bad := []struct {
		name string
		spec difftest.CaseSpec
	}{
		{"another kernel", difftest.CaseSpec{Kernel: "norm_rope_store", Family: "gaussian", Name: "bad", Params: ok()}},
		{"unknown family", spec("gauss", ok())},
		{"K missing", spec("gaussian", map[string]any{"lengths": []any{int64(16)}})},
		{"K = 0", spec("gaussian", ok("K", int64(0)))},
		{"K a string", spec("gaussian", ok("K", "512"))},
		{"P not a power of two", spec("gaussian", ok("P", int64(48)))},
		{"lengths missing", spec("gaussian", map[string]any{"K": int64(8)})},
		{"a negative length", spec("gaussian", ok("lengths", []any{int64(16), int64(-1)}))},
		{"batch = 0", spec("gaussian", ok("batch", int64(0)))},
		{"stride below a length", spec("gaussian", ok("stride", int64(39)))},
		{"unknown page-table kind", spec("gaussian", ok("pages", "random"))},
		{"unknown param", spec("gaussian", ok("lenghts", []any{int64(16)}))},
		{"relu positives above a row's length", spec("relu", ok("positives", int64(17)))},
		{"masked finite negative", spec("masked", ok("finite", int64(-1)))},
		{"straddle param on gaussian", spec("gaussian", ok("above", int64(2)))},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if err := agree(t, tt.spec); err == nil {
				t.Errorf("%s accepted", tt.name)
			}
		})
	}
}
