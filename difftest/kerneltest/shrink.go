// The shrink helpers: a failing case to shrink, the checks of a shrunk
// case, and the shrink test of a mutant catalog.

package kerneltest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// FirstFailing returns the first case of specs (drawn at seed 1, Draw)
// that impl fails through the pipeline (RunCase), with its record; it
// fails t when impl passes them all.
func FirstFailing(t testing.TB, k difftest.Kernel, impl difftest.Impl, specs []difftest.CaseSpec) (*difftest.Case, *difftest.Record) {
	t.Helper()
	for _, spec := range specs {
		c := Draw(t, k, spec, 1)
		if rec, _ := RunCase(t, k, impl, c); rec.Failed() {
			return c, rec
		}
	}
	t.Fatalf("%s passes every case", impl.Name())
	return nil, nil
}

// CheckShrunk checks what every shrink test asks of res, the shrink of a
// case whose record under impl was orig: the shrunk case still fails with
// orig's class; it renders as a suite entry that draws the same inputs
// (triage.SuiteEntry checks the digest); and its capture, saved and read
// back, replays under impl to the same class, message and input digest.
// The sizes and the diagnosis are the kernel test's to check.
func CheckShrunk(t testing.TB, k difftest.Kernel, impl difftest.Impl, orig *difftest.Record, res *triage.ShrinkResult) {
	t.Helper()
	if res.Record.Class != orig.Class || !res.Record.Failed() {
		t.Errorf("shrunk case: %s %s, the original %s", res.Record.Verdict, res.Record.Class, orig.Class)
	}
	if _, err := triage.SuiteEntry(res.Shrunk, "shrunk"); err != nil {
		t.Errorf("suite entry: %v", err)
	}
	path, err := difftest.SaveCapture(t.TempDir(), res.Shrunk, res.Outcome, "")
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := difftest.ReadCapture(path)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := RunCase(t, k, impl, back)
	if again.Class != res.Record.Class || again.Message != res.Record.Message || again.InputSHA256 != res.Record.InputSHA256 {
		t.Errorf("replay: %s %q (%s), shrink said %s %q (%s)", again.Class, again.Message, again.InputSHA256, res.Record.Class, res.Record.Message, res.Record.InputSHA256)
	}
}

// ShrinkEach is the shrink test of k's mutant catalog: for every mutant m
// (a subtest each) it shrinks m's first failing case of specs
// (FirstFailing over the specs m.Applies to, as the selftest runs them:
// on the others m is the correct kernel, so the first failing case is the
// same) with triage.Shrink under cfg(m), whose Impl it sets to
// m; checks what every shrink must hold (CheckShrunk); and calls check
// for the kernel's own bounds on the shrunk case and its diagnosis. It
// logs a table: mutant, case, original size, shrunk size
// (triage.Reducer.SizeOf), attempts, time (go test -v).
func ShrinkEach(t *testing.T, k difftest.Kernel, specs []difftest.CaseSpec, cfg func(m difftest.Mutant) triage.ShrinkConfig, check func(t *testing.T, m difftest.Mutant, res *triage.ShrinkResult)) {
	t.Helper()
	var table []string
	for _, m := range k.Mutants() {
		t.Run(m.Name, func(t *testing.T) {
			impl := difftest.MutantImpl{Kernel: k.Name(), Mutant: m}
			applies := slices.DeleteFunc(slices.Clone(specs), func(s difftest.CaseSpec) bool { return !m.AppliesTo(s) })
			c, rec := FirstFailing(t, k, impl, applies)
			sc := cfg(m)
			sc.Impl = impl
			res, err := triage.Shrink(context.Background(), k, c, sc)
			if err != nil {
				t.Fatal(err)
			}
			table = append(table, fmt.Sprintf("%-24s %-52s %-48s %-44s %6d %8v", m.Name, strings.TrimPrefix(c.ID, k.Name()+"/"),
				res.OriginalSize, res.ShrunkSize, res.Attempts, res.Elapsed.Round(time.Millisecond)))
			check(t, m, res)
			CheckShrunk(t, k, impl, rec, res)
		})
	}
	t.Logf("mutant, case, original size, shrunk size, attempts, time:\n%s", strings.Join(table, "\n"))
}
