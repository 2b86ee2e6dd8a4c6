package normrope

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// TestShrinkEveryMutant (issue 11 item 4): every store mutant's first
// failing default-suite case (seed 1) shrinks, within a minute, to one
// token (the issue asks for one to eight) in one page with one freqs row
// and x_stride 128, still fails with the same class, is still diagnosed
// as the mutant, renders as a suite entry that draws the same inputs, and
// its capture replays to the same verdict. The table
// is logged (go test -v -run TestShrinkEveryMutant).
func TestShrinkEveryMutant(t *testing.T) {
	specs := loadSuite(t, "default")
	var table []string
	for _, m := range Mutants() {
		t.Run(m.Name, func(t *testing.T) {
			impl := difftest.MutantImpl{Kernel: KernelName, Mutant: m}
			var c *difftest.Case
			var rec *difftest.Record
			for _, spec := range specs {
				x, err := NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
				if err != nil {
					t.Fatal(err)
				}
				r := difftest.NewRecord(x, impl.Name())
				if _, err := (&difftest.CaseRun{Impl: impl}).RunCase(context.Background(), Kernel{}, x, r); err != nil {
					t.Fatal(err)
				}
				if r.Failed() {
					c, rec = x, r
					break
				}
			}
			if c == nil {
				t.Fatal("passes the default suite")
			}
			res, err := triage.Shrink(context.Background(), Kernel{}, c, triage.ShrinkConfig{Impl: impl, Budget: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			table = append(table, fmt.Sprintf("%-24s %-52s %4d tokens → %d, %6d attempts, %v", m.Name, strings.TrimPrefix(c.ID, KernelName+"/"),
				c.Input(NameX).Shape[0], res.Shrunk.Input(NameX).Shape[0], res.Attempts, res.Elapsed.Round(time.Millisecond)))
			s := res.Shrunk
			p, _ := paramsOf(s)
			if x, f := s.Input(NameX), s.Input(NameFreqs); x.Shape[0] != 1 || x.Shape[1] != Dim || f.Shape[0] != 1 || p.NumPages != 1 || res.Note != "" {
				t.Errorf("shrunk to %s (%s); want one token, x_stride 128, max_pos 1, one page", Kernel{}.SizeOf(s), res.Note)
			}
			if res.Record.Class != rec.Class || !res.Record.Failed() {
				t.Errorf("shrunk case: %s %s, the original %s", res.Record.Verdict, res.Record.Class, rec.Class)
			}
			if !slices.Contains(res.FinalDiagnosis, m.Name) {
				t.Errorf("diagnosis %v → %v, want %s", res.Diagnosis, res.FinalDiagnosis, m.Name)
			}
			// The suite entry draws the same inputs (SuiteEntry checks it).
			if _, err := triage.SuiteEntry(s, "shrunk"); err != nil {
				t.Errorf("suite entry: %v", err)
			}
			path, err := difftest.SaveCapture(t.TempDir(), s, res.Outcome)
			if err != nil {
				t.Fatal(err)
			}
			back, _, err := difftest.ReadCapture(path)
			if err != nil {
				t.Fatal(err)
			}
			again := difftest.NewRecord(back, impl.Name())
			if _, err := (&difftest.CaseRun{Impl: impl}).RunCase(context.Background(), Kernel{}, back, again); err != nil {
				t.Fatal(err)
			}
			if again.Class != res.Record.Class || again.Message != res.Record.Message || again.InputSHA256 != res.Record.InputSHA256 {
				t.Errorf("replay: %s %q, shrink said %s %q", again.Class, again.Message, res.Record.Class, res.Record.Message)
			}
		})
	}
	t.Logf("mutant, case, tokens, attempts, time:\n%s", strings.Join(table, "\n"))
}
