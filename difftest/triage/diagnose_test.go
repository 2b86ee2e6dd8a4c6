package triage

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// diagKernel is the fake kernel with semantic variants: "p1" adds 10 to
// y[0], "p2" adds 20 to y[1] only when x[1] is even, "p1+p2" does both;
// "alias-off-by-one" is an alias of the mutant fake-off-by-one; "panics"
// panics; "slow" sleeps past any test budget.
type diagKernel struct{ fakekernel.Kernel }

func diagVariant(name string, parts []string, f func(c *difftest.Case, outs []*difftest.Tensor)) Variant {
	return Variant{Name: name, Doc: "does " + name, Parts: parts, Run: func(c *difftest.Case, outs []*difftest.Tensor) error {
		if err := fakekernel.Run(c, outs, ""); err != nil {
			return err
		}
		f(c, outs)
		return nil
	}}
}

func p1(_ *difftest.Case, outs []*difftest.Tensor) { outs[0].SetI32(0, outs[0].I32(0)+10) }
func p2(c *difftest.Case, outs []*difftest.Tensor) {
	if c.Input("x").I32(1)%2 == 0 {
		outs[0].SetI32(1, outs[0].I32(1)+20)
	}
}

func (diagKernel) Variants() []Variant {
	return []Variant{
		diagVariant("p1", []string{"p1"}, p1),
		diagVariant("p2", nil, p2),
		diagVariant("p1+p2", []string{"p1", "p2"}, func(c *difftest.Case, outs []*difftest.Tensor) { p1(c, outs); p2(c, outs) }),
		{Name: "alias-off-by-one", Doc: "the off-by-one of a real kernel", Alias: "fake-off-by-one"},
		{Name: "panics", Doc: "panics", Run: func(*difftest.Case, []*difftest.Tensor) error { panic("boom") }},
	}
}

// diagnoseWith runs impl (a variant or mutant Run) as the implementation
// of c through the pipeline and diagnoses the failure.
func diagnoseWith(t *testing.T, k difftest.Kernel, c *difftest.Case, run func(*difftest.Case, []*difftest.Tensor) error, budget time.Duration) (*difftest.Record, Diagnosis) {
	t.Helper()
	rec := difftest.NewRecord(c, "impl")
	out, err := (&difftest.CaseRun{Impl: difftest.MutantImpl{Kernel: fakekernel.Name, Mutant: difftest.Mutant{Name: "impl", Run: run}}}).RunCase(context.Background(), k, c, rec)
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
	even := fakekernel.NewCase("even", []int32{1, 2, 3, 4}, []int64{0, 1, -1, 2}, 4)
	odd := fakekernel.NewCase("odd", []int32{1, 3, 5, 7}, []int64{0, 1, -1, 2}, 4)
	variant := func(name string) func(*difftest.Case, []*difftest.Tensor) error {
		for _, v := range k.Variants() {
			if v.Name == name {
				return v.Run
			}
		}
		t.Fatalf("no variant %s", name)
		return nil
	}
	mutant := func(name string) func(*difftest.Case, []*difftest.Tensor) error {
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
		c    *difftest.Case
		run  func(*difftest.Case, []*difftest.Tensor) error
		want []string
	}{
		{"a mutant is itself; its alias is not run", even, mutant("fake-off-by-one"), []string{"fake-off-by-one"}},
		{"a mutant that writes an untouched byte (class guard) is itself", even, mutant("fake-write-negative"), []string{"fake-write-negative"}},
		{"a combination where both parts show is the combination", even, variant("p1+p2"), []string{"p1+p2"}},
		{"a combination where one part shows is that part", odd, variant("p1+p2"), []string{"p1"}},
		{"a single part is itself, not the combination", even, variant("p1"), []string{"p1"}},
		{"an unknown fault is nothing", even, func(c *difftest.Case, outs []*difftest.Tensor) error {
			fakekernel.Run(c, outs, "")
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
	c := fakekernel.NewCase("even", []int32{1, 2, 3, 4}, []int64{0, 1, -1, 2}, 4)
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

type slowKernel struct{ fakekernel.Kernel }

func (slowKernel) Variants() []Variant {
	return []Variant{{Name: "slow", Doc: "sleeps", Run: func(*difftest.Case, []*difftest.Tensor) error { time.Sleep(time.Minute); return nil }}}
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
	c := fakekernel.NewCase("even", []int32{1, 2}, []int64{0, 1}, 2)
	rec := difftest.NewRecord(c, "x")
	diagnoseRecord(context.Background(), cfg, fakekernel.Kernel{}, c, difftest.Outcome{Got: difftest.PoisonedTensors(c, difftest.PoisonA), Want: difftest.PoisonedTensors(c, difftest.PoisonA)}, rec)
	if rec.Diagnosis != nil || !strings.Contains(rec.DiagnosisNote, "budget is spent") {
		t.Errorf("diagnosis %v, note %q", rec.Diagnosis, rec.DiagnosisNote)
	}
}

// TestSelftestDiagnosis: the default subjects are each diagnosed as
// themselves; a subject diagnosed as another name, or as nothing, fails
// the selftest with a line saying so.
func TestSelftestDiagnosis(t *testing.T) {
	s := fakekernel.Suite()
	rows, ok, err := Selftest(context.Background(), SelftestConfig{Suite: s, Seed: 1, Kernels: []string{fakekernel.Name}})
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
	_, offByOne, _ := difftest.FindMutant("fake-off-by-one")
	unknown := difftest.Mutant{Name: "unknown", Run: func(c *difftest.Case, outs []*difftest.Tensor) error {
		fakekernel.Run(c, outs, "")
		outs[0].SetI32(0, 99)
		return nil
	}}
	subjects := []SelftestSubject{
		{Kernel: fakekernel.Name, Name: "fake-skip-last", Impl: difftest.MutantImpl{Kernel: fakekernel.Name, Mutant: offByOne}, Diagnose: []string{"fake-skip-last"}},
		{Kernel: fakekernel.Name, Name: "unknown", Impl: difftest.MutantImpl{Kernel: fakekernel.Name, Mutant: unknown}, Diagnose: []string{"unknown"}},
		{Kernel: fakekernel.Name, Name: "unchecked", Impl: difftest.MutantImpl{Kernel: fakekernel.Name, Mutant: unknown}},
	}
	rows, ok, err = Selftest(context.Background(), SelftestConfig{Suite: s, Seed: 1, Subjects: subjects})
	if err != nil || ok {
		t.Fatalf("ok=%v err=%v, want a failed selftest", ok, err)
	}
	if rows[0].OK() || rows[1].OK() || !rows[2].OK() {
		t.Errorf("OK: %v %v %v, want false false true", rows[0].OK(), rows[1].OK(), rows[2].OK())
	}
	texttest.Contains(t, "table", texttest.Render(t, func(w io.Writer) error { return WriteSelftestTable(w, rows, ok) }),
		"fake-off-by-one (WRONG)",
		"mutant fake-skip-last, caught by fake_scatter/ramp-8 (seed 1), is diagnosed as fake-off-by-one, not as fake-skip-last",
		"mutant unknown, caught by fake_scatter/ramp-8 (seed 1), is diagnosed as nothing, not as unknown",
		"selftest FAILED: 3 of 3 mutants caught, reference passes; 0 of 2 diagnosed as themselves",
	)
}

// screenKernel is diagKernel with a CandidateScreen that rejects every
// candidate named in no, and counts the candidates that still run.
type screenKernel struct {
	diagKernel
	no  map[string]bool
	ran map[string]bool
}

func (k screenKernel) ScreenCandidate(_ *difftest.Case, name string, _ []*difftest.Tensor) bool {
	return k.no[name]
}

func (k screenKernel) Variants() []Variant {
	vs := k.diagKernel.Variants()
	for i := range vs {
		if run := vs[i].Run; run != nil {
			name := vs[i].Name
			vs[i].Run = func(c *difftest.Case, outs []*difftest.Tensor) error {
				k.ran[name] = true
				return run(c, outs)
			}
		}
	}
	return vs
}

// TestDiagnoseScreen: a candidate the kernel's CandidateScreen rejects is
// not run and not named, though it would match; it still counts as tried;
// the others run as before.
func TestDiagnoseScreen(t *testing.T) {
	c := fakekernel.NewCase("even", []int32{1, 2, 3, 4}, []int64{0, 1, -1, 2}, 4)
	open := screenKernel{no: map[string]bool{}, ran: map[string]bool{}}
	run := diagKernel{}.Variants()[2].Run // p1+p2, as the implementation
	if _, d := diagnoseWith(t, open, c, run, 0); !slices.Equal(d.Matches, []string{"p1+p2"}) || !open.ran["p1+p2"] {
		t.Fatalf("unscreened: diagnosed as %v, ran %v", d.Matches, open.ran)
	}
	shut := screenKernel{no: map[string]bool{"p1+p2": true}, ran: map[string]bool{}}
	_, d := diagnoseWith(t, shut, c, run, 0)
	if len(d.Matches) != 0 || shut.ran["p1+p2"] || !shut.ran["p1"] || d.Tried != d.Candidates {
		t.Errorf("p1+p2 screened out: diagnosed as %v, ran %v, tried %d of %d", d.Matches, shut.ran, d.Tried, d.Candidates)
	}
}
