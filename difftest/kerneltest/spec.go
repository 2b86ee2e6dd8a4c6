// The helpers of a kernel's suite-entry tests: CheckSpec against NewCase,
// and a case rendered as a suite entry and read back.

package kerneltest

import (
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// CheckSpecAgrees requires k's CheckSpec (difftest.SpecChecker) to answer
// spec as NewCase does: the same error, or nil exactly when NewCase draws
// the case (seed 1, key rng.CaseKey(1, spec ID)). It returns CheckSpec's
// error, for the caller's own expectations of it.
func CheckSpecAgrees(t testing.TB, k difftest.Kernel, spec difftest.CaseSpec) error {
	t.Helper()
	sc, ok := k.(difftest.SpecChecker)
	if !ok {
		t.Fatalf("%s has no CheckSpec", k.Name())
	}
	checkErr := sc.CheckSpec(spec)
	_, drawErr := k.NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
	if (checkErr == nil) != (drawErr == nil) || (checkErr != nil && checkErr.Error() != drawErr.Error()) {
		t.Errorf("%s %v: CheckSpec %v, NewCase %v", spec.ID(), spec.Params, checkErr, drawErr)
	}
	return checkErr
}

// SuiteEntry renders c as a suite entry named name (triage.SuiteEntry,
// which checks that the entry draws c's inputs), requires each of want in
// its text, reads it back (suite.ParseSuite: one case) and requires k's
// CheckSpec to accept it. It returns the entry.
func SuiteEntry(t testing.TB, k difftest.Kernel, c *difftest.Case, name string, want ...string) string {
	t.Helper()
	entry, err := triage.SuiteEntry(c, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(entry, w) {
			t.Errorf("entry has no %q:\n%.600s", w, entry)
		}
	}
	cases, err := suite.ParseSuite(name+".toml", []byte(entry))
	if err != nil || len(cases) != 1 {
		t.Fatalf("ParseSuite: %d cases, %v", len(cases), err)
	}
	if err := CheckSpecAgrees(t, k, cases[0].Spec); err != nil {
		t.Errorf("CheckSpec: %v", err)
	}
	return entry
}
