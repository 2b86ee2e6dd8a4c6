package triage

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// diagKernel is the fake kernel with semantic variants: "p1" adds 10 to
// y[0], "p2" adds 20 to y[1] only when x[1] is even, "p1+p2" does both;
// "alias-off-by-one" is an alias of the mutant fake-off-by-one; "panics"
// panics; "slow" sleeps past any test budget.
type diagKernel struct{ fakeKernel }

func diagVariant(name string, parts []string, f func(c *Case, outs []*Tensor)) Variant {
	return Variant{Name: name, Doc: "does " + name, Parts: parts, Run: func(c *Case, outs []*Tensor) error {
		if err := fakeRun(c, outs, ""); err != nil {
			return err
		}
		f(c, outs)
		return nil
	}}
}

func p1(_ *Case, outs []*Tensor) { outs[0].SetI32(0, outs[0].I32(0)+10) }
func p2(c *Case, outs []*Tensor) {
	if c.Input("x").I32(1)%2 == 0 {
		outs[0].SetI32(1, outs[0].I32(1)+20)
	}
}

func (diagKernel) Variants() []Variant {
	return []Variant{
		diagVariant("p1", []string{"p1"}, p1),
		diagVariant("p2", nil, p2),
		diagVariant("p1+p2", []string{"p1", "p2"}, func(c *Case, outs []*Tensor) { p1(c, outs); p2(c, outs) }),
		{Name: "alias-off-by-one", Doc: "the off-by-one of a real kernel", Alias: "fake-off-by-one"},
		{Name: "panics", Doc: "panics", Run: func(*Case, []*Tensor) error { panic("boom") }},
	}
}

// diagnoseWith runs impl (a variant or mutant Run) as the implementation
// of c through the pipeline and diagnoses the failure.
func diagnoseWith(t *testing.T, k Kernel, c *Case, run func(*Case, []*Tensor) error, budget time.Duration) (*Record, Diagnosis) {
	t.Helper()
	rec := NewRecord(c, "impl")
	out, err := (&CaseRun{Impl: MutantImpl{Kernel: fakeName, Mutant: Mutant{Name: "impl", Run: run}}}).RunCase(context.Background(), k, c, rec)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Failed() {
		t.Fatal("the implementation passes")
	}
	return rec, Diagnose(context.Background(), k, c, out.Got, out.Want, budget)
}

func TestDiagnose(t *testing.T) {
	k := diagKernel{}
	even := newFakeCase("even", []int32{1, 2, 3, 4}, []int64{0, 1, -1, 2}, 4)
	odd := newFakeCase("odd", []int32{1, 3, 5, 7}, []int64{0, 1, -1, 2}, 4)
	variant := func(name string) func(*Case, []*Tensor) error {
		for _, v := range k.Variants() {
			if v.Name == name {
				return v.Run
			}
		}
		t.Fatalf("no variant %s", name)
		return nil
	}
	mutant := func(name string) func(*Case, []*Tensor) error {
		for _, m := range k.Mutants() {
			if m.Name == name {
				return m.Run
			}
		}
		t.Fatalf("no mutant %s", name)
		return nil
	}
	for _, tc := range []struct {
		why  string
		c    *Case
		run  func(*Case, []*Tensor) error
		want []string
	}{
		{"a mutant is itself; its alias is not run", even, mutant("fake-off-by-one"), []string{"fake-off-by-one"}},
		{"a mutant that writes an untouched byte (class guard) is itself", even, mutant("fake-write-negative"), []string{"fake-write-negative"}},
		{"a combination where both parts show is the combination", even, variant("p1+p2"), []string{"p1+p2"}},
		{"a combination where one part shows is that part", odd, variant("p1+p2"), []string{"p1"}},
		{"a single part is itself, not the combination", even, variant("p1"), []string{"p1"}},
		{"an unknown fault is nothing", even, func(c *Case, outs []*Tensor) error {
			fakeRun(c, outs, "")
			outs[0].SetI32(3, 99)
			return nil
		}, nil},
	} {
		t.Run(tc.why, func(t *testing.T) {
			_, d := diagnoseWith(t, k, tc.c, tc.run, 0)
			if !slices.Equal(d.Matches, tc.want) {
				t.Errorf("diagnosed as %v, want %v", d.Matches, tc.want)
			}
			// 3 mutants, then p1, p2, p1+p2 and panics (the alias is not run).
			if d.Candidates != 7 || d.Tried != 7 || d.Note != "" {
				t.Errorf("tried %d of %d candidates (%q), want 7 of 7", d.Tried, d.Candidates, d.Note)
			}
		})
	}
}

// TestDiagnoseBudget: a candidate that runs past the budget is abandoned
// and the note says how far the diagnosis got; what matched before stays.
func TestDiagnoseBudget(t *testing.T) {
	k := slowKernel{}
	c := newFakeCase("even", []int32{1, 2, 3, 4}, []int64{0, 1, -1, 2}, 4)
	start := time.Now()
	_, d := diagnoseWith(t, k, c, k.Mutants()[0].Run, 200*time.Millisecond)
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("diagnosis took %v with a 200ms budget", el)
	}
	if !slices.Equal(d.Matches, []string{"fake-off-by-one"}) {
		t.Errorf("matches %v", d.Matches)
	}
	if d.Tried != 3 || !strings.Contains(d.Note, "200ms budget was spent after 3 of 4 candidates") {
		t.Errorf("tried %d, note %q", d.Tried, d.Note)
	}
}

type slowKernel struct{ fakeKernel }

func (slowKernel) Variants() []Variant {
	return []Variant{{Name: "slow", Doc: "sleeps", Run: func(*Case, []*Tensor) error { time.Sleep(time.Minute); return nil }}}
}

// TestRunDiagnosis: Run with Config.Diagnose writes the diagnosis into the
// record; the table prints "behaves like NAME: FAULT" under the failure,
// JSON Lines a "diagnosis" list, JUnit the same line in the failure text;
// a passing case and a run without Diagnose carry none.
func TestRunDiagnosis(t *testing.T) {
	_, m, ok := FindMutant("fake-off-by-one")
	if !ok {
		t.Fatal("no fake-off-by-one")
	}
	items := []Item{
		{Index: 0, Seed: 1, SuiteCase: SuiteCase{Spec: CaseSpec{Kernel: fakeName, Family: "ramp", Name: "ramp"}}},
	}
	run := func(diag *DiagnoseConfig) *Report {
		rep := &Report{Header: Header{Suite: "test", Impl: "mutant:fake-off-by-one"}}
		sum, err := Run(context.Background(), Config{Items: items, Impl: MutantImpl{Kernel: fakeName, Mutant: m}, ImplName: "mutant:fake-off-by-one", Diagnose: diag,
			OnRecord: func(r *Record) error { rep.Records = append(rep.Records, r); return nil }})
		if err != nil {
			t.Fatal(err)
		}
		rep.Summary = &sum
		return rep
	}
	if r := run(nil).Records[0]; r.Diagnosis != nil || r.DiagnosisNote != "" {
		t.Errorf("diagnosed without Config.Diagnose: %v %q", r.Diagnosis, r.DiagnosisNote)
	}
	rep := run(&DiagnoseConfig{})
	r := rep.Records[0]
	if !slices.Equal(r.Diagnosis, []string{"fake-off-by-one"}) || r.DiagnosisNote != "" {
		t.Fatalf("diagnosis %v %q", r.Diagnosis, r.DiagnosisNote)
	}
	line := "behaves like fake-off-by-one: the last element is one too large"
	var tbl bytes.Buffer
	if err := WriteTable(&tbl, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tbl.String(), "\n    "+line+"\n") {
		t.Errorf("table has no %q:\n%s", line, tbl.String())
	}
	var jl bytes.Buffer
	if err := NewJSONLWriter(&jl).Record(r); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Diagnosis []string `json:"diagnosis"`
	}
	if err := json.Unmarshal(jl.Bytes(), &back); err != nil || !slices.Equal(back.Diagnosis, []string{"fake-off-by-one"}) {
		t.Errorf("JSON line %s: %v", jl.String(), err)
	}
	var ju bytes.Buffer
	if err := WriteJUnit(&ju, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ju.String(), line) {
		t.Errorf("JUnit has no %q:\n%s", line, ju.String())
	}
}

// TestDiagnoseTotalBudget: once the run's total budget is spent, a failing
// case is not diagnosed and says so.
func TestDiagnoseTotalBudget(t *testing.T) {
	cfg := &DiagnoseConfig{PerCase: time.Second, Total: time.Second}
	if got := cfg.take(); got != time.Second {
		t.Errorf("first budget %v", got)
	}
	cfg.charge(700 * time.Millisecond)
	if got := cfg.take(); got != 300*time.Millisecond {
		t.Errorf("second budget %v, want 300ms", got)
	}
	cfg.charge(400 * time.Millisecond)
	c := newFakeCase("even", []int32{1, 2}, []int64{0, 1}, 2)
	rec := NewRecord(c, "x")
	diagnoseRecord(context.Background(), cfg, fakeKernel{}, c, Outcome{Got: PoisonedTensors(c, PoisonA), Want: PoisonedTensors(c, PoisonA)}, rec)
	if rec.Diagnosis != nil || !strings.Contains(rec.DiagnosisNote, "budget is spent") {
		t.Errorf("diagnosis %v, note %q", rec.Diagnosis, rec.DiagnosisNote)
	}
}

// TestSelftestDiagnosis: the default subjects are each diagnosed as
// themselves; a subject diagnosed as another name, or as nothing, fails
// the selftest with a line saying so.
func TestSelftestDiagnosis(t *testing.T) {
	s := fakeSuite(t)
	rows, ok, err := Selftest(context.Background(), SelftestConfig{Suite: s, Seed: 1, Kernels: []string{fakeName}})
	if err != nil || !ok {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
	for _, r := range rows {
		want := []string{r.Mutant}
		if r.Mutant == "reference" {
			want = nil
		}
		if !slices.Equal(r.Diagnosis, want) || !slices.Equal(r.Expect, want) {
			t.Errorf("%s: diagnosed as %v, expects %v", r.Mutant, r.Diagnosis, r.Expect)
		}
	}
	_, offByOne, _ := FindMutant("fake-off-by-one")
	unknown := Mutant{Name: "unknown", Run: func(c *Case, outs []*Tensor) error {
		fakeRun(c, outs, "")
		outs[0].SetI32(0, 99)
		return nil
	}}
	subjects := []SelftestSubject{
		{Kernel: fakeName, Name: "fake-skip-last", Impl: MutantImpl{Kernel: fakeName, Mutant: offByOne}, Diagnose: []string{"fake-skip-last"}},
		{Kernel: fakeName, Name: "unknown", Impl: MutantImpl{Kernel: fakeName, Mutant: unknown}, Diagnose: []string{"unknown"}},
		{Kernel: fakeName, Name: "unchecked", Impl: MutantImpl{Kernel: fakeName, Mutant: unknown}},
	}
	rows, ok, err = Selftest(context.Background(), SelftestConfig{Suite: s, Seed: 1, Subjects: subjects})
	if err != nil || ok {
		t.Fatalf("ok=%v err=%v, want a failed selftest", ok, err)
	}
	if rows[0].OK() || rows[1].OK() || !rows[2].OK() {
		t.Errorf("OK: %v %v %v, want false false true", rows[0].OK(), rows[1].OK(), rows[2].OK())
	}
	var b bytes.Buffer
	if err := WriteSelftestTable(&b, rows, ok); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"fake-off-by-one (WRONG)",
		"mutant fake-skip-last, caught by fake_scatter/ramp-8 (seed 1), is diagnosed as fake-off-by-one, not as fake-skip-last",
		"mutant unknown, caught by fake_scatter/ramp-8 (seed 1), is diagnosed as nothing, not as unknown",
		"selftest FAILED: 3 of 3 mutants caught, reference passes; 0 of 2 diagnosed as themselves",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table has no %q:\n%s", want, b.String())
		}
	}
}
