package render

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/report"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// TestRunDiagnosis: Run with Config.Diagnose writes the diagnosis into the
// record; the table prints "behaves like NAME: FAULT" under the cause's title,
// JSON Lines a "diagnosis" list, JUnit the same line in the failure text;
// a passing case and a run without Diagnose carry none.
func TestRunDiagnosis(t *testing.T) {
	_, m, ok := difftest.FindMutant("fake-off-by-one")
	if !ok {
		t.Fatal("no fake-off-by-one")
	}
	items := []difftest.Item{
		{Index: 0, Seed: 1, SuiteCase: difftest.SuiteCase{Spec: difftest.CaseSpec{Kernel: fakekernel.Name, Family: "ramp", Name: "ramp"}}},
	}
	run := func(diag *triage.DiagnoseConfig) *report.Report {
		var hook func(context.Context, difftest.Kernel, *difftest.Case, difftest.Outcome, *difftest.Record)
		if diag != nil {
			hook = diag.DiagnoseRecord
		}
		rep := &report.Report{Header: difftest.Header{Suite: "test", Impl: "mutant:fake-off-by-one"}}
		sum, err := difftest.Run(context.Background(), difftest.Config{Items: items, Impl: difftest.MutantImpl{Kernel: fakekernel.Name, Mutant: m}, ImplName: "mutant:fake-off-by-one", Diagnose: hook,
			OnRecord: func(r *difftest.Record) error { rep.Records = append(rep.Records, r); return nil }})
		if err != nil {
			t.Fatal(err)
		}
		rep.Summary = &sum
		return rep
	}
	if r := run(nil).Records[0]; r.Diagnosis != nil || r.DiagnosisNote != "" {
		t.Errorf("diagnosed without Config.Diagnose: %v %q", r.Diagnosis, r.DiagnosisNote)
	}
	rep := run(&triage.DiagnoseConfig{})
	r := rep.Records[0]
	if !slices.Equal(r.Diagnosis, []string{"fake-off-by-one"}) || r.DiagnosisNote != "" {
		t.Fatalf("diagnosis %v %q", r.Diagnosis, r.DiagnosisNote)
	}
	line := "behaves like fake-off-by-one: the last element is one too large"
	texttest.Contains(t, "table", texttest.Render(t, func(w io.Writer) error { return WriteTable(w, rep) }), "\n  "+line+"\n")
	jl := texttest.Render(t, func(w io.Writer) error { return report.NewJSONLWriter(w).Record(r) })
	var back struct {
		Diagnosis []string `json:"diagnosis"`
	}
	if err := json.Unmarshal([]byte(jl), &back); err != nil || !slices.Equal(back.Diagnosis, []string{"fake-off-by-one"}) {
		t.Errorf("JSON line %s: %v", jl, err)
	}
	texttest.Contains(t, "JUnit", texttest.Render(t, func(w io.Writer) error { return report.WriteJUnit(w, rep) }), line)
}
