// The selftest of docs/mutants.md: the suite must catch every catalog
// mutant, and the reference must pass every case.

package triage

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// SelftestRow is one line of the selftest: a mutant (or the reference)
// and what became of it.
type SelftestRow struct {
	Kernel  string         `json:"kernel"`
	Mutant  string         `json:"mutant"` // catalog name, or "reference"
	Fault   string         `json:"fault,omitempty"`
	Caught  bool           `json:"caught"` // for the reference: it failed a case
	Case    string         `json:"case,omitempty"`
	Seed    uint64         `json:"seed,omitempty"`
	Class   difftest.Class `json:"class,omitempty"` // the check that caught it
	Message string         `json:"message,omitempty"`
	Cases   int            `json:"cases"` // cases run
	Elapsed time.Duration  `json:"elapsed_ns"`
	// Diagnosis is what Diagnose named on the case that caught the
	// mutant; DiagnosisNote why it is incomplete, if it is.
	Diagnosis     []string `json:"diagnosis,omitempty"`
	DiagnosisNote string   `json:"diagnosis_note,omitempty"`
	// Expect, when set, lists the names any one of which the diagnosis
	// must contain (SelftestSubject.Diagnose).
	Expect []string `json:"expect_diagnosis,omitempty"`
}

// OK reports whether the row is as it must be: a mutant caught, the
// reference not; and, for a row with Expect, the catching case diagnosed
// as one of Expect.
func (r SelftestRow) OK() bool {
	if r.Caught == (r.Mutant == "reference") {
		return false
	}
	return !r.Caught || len(r.Expect) == 0 || r.diagnosedAsExpected()
}

func (r SelftestRow) diagnosedAsExpected() bool {
	for _, e := range r.Expect {
		if slices.Contains(r.Diagnosis, e) {
			return true
		}
	}
	return false
}

// SelftestConfig configures Selftest.
type SelftestConfig struct {
	Suite    *difftest.Suite
	Seed     uint64
	Timeout  time.Duration // per run
	Parallel int           // rows run at once; < 1 means 1
	Kernels  []string      // kernels to test; empty means every registered kernel
	// Progress, when set, is called as each row ends.
	Progress func(done, total int)
	// Subjects, when set, replaces the default subjects (per kernel, the
	// reference and every catalog mutant): for example the cuda
	// implementation and its -DKD_FAULT builds. Kernels still filters.
	Subjects []SelftestSubject
	// DiagnoseBudget is the time the diagnosis of each caught subject's
	// case may take; ≤ 0 means no limit.
	DiagnoseBudget time.Duration
}

// SelftestSubject is one implementation the selftest runs on the suite's
// cases of one kernel. A subject named "reference" must pass every case;
// any other must fail one.
type SelftestSubject struct {
	Kernel string // the kernel whose cases it runs
	Name   string // "reference", or the mutant or fault build name
	Fault  string // one line: what is wrong ("" for the reference)
	Impl   difftest.Impl
	// Diagnose, when set, lists the names (the mutant itself, or a
	// listed equivalent) one of which Diagnose must name on the case that
	// caught the subject; a subject diagnosed as nothing or only as others
	// fails the selftest. Nil does not check the diagnosis (it is still
	// reported).
	Diagnose []string
}

// DefaultSelftestSubjects returns, per registered kernel in name order,
// the reference and then the kernel's catalog mutants, each of which must
// be diagnosed as itself on the case that catches it (a variant that is
// an alias of a mutant is never run by the diagnosis, so the mutant's own
// name is the one to expect).
func DefaultSelftestSubjects() []SelftestSubject {
	var subs []SelftestSubject
	for _, k := range difftest.Kernels() {
		subs = append(subs, SelftestSubject{Kernel: k.Name(), Name: "reference", Impl: difftest.ReferenceImpl{}})
		for _, m := range k.Mutants() {
			subs = append(subs, SelftestSubject{Kernel: k.Name(), Name: m.Name, Fault: m.Fault, Impl: difftest.MutantImpl{Kernel: k.Name(), Mutant: m},
				Diagnose: []string{m.Name}})
		}
	}
	return subs
}

// Selftest runs each subject (by default DefaultSelftestSubjects: per
// registered kernel the reference, which must pass all of the suite's
// cases of that kernel, and each catalog mutant, which stops at its first
// failing case, the one that caught it). A kernel with mutants but no
// case in the suite leaves them uncaught. Rows come back in subject
// order. ok is true only when every row is OK. The error is a
// *SuiteError or *InternalError that stopped the selftest.
func Selftest(ctx context.Context, cfg SelftestConfig) (rows []SelftestRow, ok bool, err error) {
	type job struct {
		k    difftest.Kernel
		impl difftest.Impl
		row  SelftestRow
	}
	subjects := cfg.Subjects
	if subjects == nil {
		subjects = DefaultSelftestSubjects()
	}
	var jobs []job
	for _, sub := range subjects {
		if len(cfg.Kernels) > 0 && !slices.Contains(cfg.Kernels, sub.Kernel) {
			continue
		}
		k, found := difftest.LookupKernel(sub.Kernel)
		if !found {
			return nil, false, &difftest.InternalError{Err: fmt.Errorf("selftest subject %s: unknown kernel %q", sub.Name, sub.Kernel)}
		}
		jobs = append(jobs, job{k, sub.Impl, SelftestRow{Kernel: sub.Kernel, Mutant: sub.Name, Fault: sub.Fault, Expect: sub.Diagnose}})
	}
	rows = make([]SelftestRow, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, max(cfg.Parallel, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rows[i], errs[i] = selftestRow(ctx, cfg, j.k, j.impl, j.row)
			if cfg.Progress != nil {
				mu.Lock()
				done++
				cfg.Progress(done, len(jobs))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return rows, false, e
		}
	}
	ok = len(rows) > 0
	for _, r := range rows {
		ok = ok && r.OK()
	}
	return rows, ok, nil
}

func selftestRow(ctx context.Context, cfg SelftestConfig, k difftest.Kernel, impl difftest.Impl, row SelftestRow) (SelftestRow, error) {
	start := time.Now()
	cr := &difftest.CaseRun{Impl: impl, Timeout: cfg.Timeout}
	for i, sc := range cfg.Suite.Cases {
		if sc.Spec.Kernel != k.Name() {
			continue
		}
		if mi, ok := impl.(difftest.MutantImpl); ok && !mi.Mutant.AppliesTo(sc.Spec) {
			continue
		}
		_, c, err := difftest.GenerateCase(difftest.Item{Index: i, Seed: cfg.Seed, SuiteCase: sc})
		if err != nil {
			return row, err
		}
		rec := difftest.NewRecord(c, impl.Name())
		out, err := cr.RunCase(ctx, k, c, rec)
		if err != nil {
			return row, err
		}
		row.Cases++
		if rec.Failed() {
			row.Caught, row.Case, row.Seed, row.Class, row.Message = true, rec.Case, rec.Seed, rec.Class, rec.Message
			if row.Mutant != "reference" {
				dk, dc := k, c
				if s := out.Stage; out.Got == nil && s != nil && s.Case != nil {
					dk, dc, out = s.Kernel, s.Case, s.Outcome // a chain: its failing stage
				}
				d := Diagnose(ctx, dk, dc, out.Got, out.Want, cfg.DiagnoseBudget)
				row.Diagnosis, row.DiagnosisNote = d.Matches, d.Note
			}
			break
		}
	}
	row.Elapsed = time.Since(start)
	return row, nil
}

func refWord(rows []SelftestRow) string {
	for _, r := range rows {
		if r.Mutant == "reference" && r.Caught {
			return "fails"
		}
	}
	return "passes"
}

// WriteSelftestTable prints the rows as an aligned table
//
//	KERNEL          MUTANT              CAUGHT  CASE                      CHECK     DIAGNOSED AS
//	topk_transform  reference           passed  (41 cases)                -         -
//	topk_transform  topk-tie-hole       yes     topk_transform/ties-k     mismatch  topk-tie-hole
//
// (DIAGNOSED AS: what Diagnose named on the catching case, "nothing" when
// it named none, marked "(WRONG)" when the row expects another name),
// followed by one line per row that is not OK, and a verdict line.
func WriteSelftestTable(w io.Writer, rows []SelftestRow, ok bool) error {
	table := [][]string{{"KERNEL", "MUTANT", "CAUGHT", "CASE", "CHECK", "DIAGNOSED AS", "TIME"}}
	var bad []string
	caught, mutants, expect, diagnosed := 0, 0, 0, 0
	for _, r := range rows {
		status, where, check := "no", fmt.Sprintf("(%d cases)", r.Cases), "-"
		if r.Mutant == "reference" {
			status = "passed"
			if r.Caught {
				status = "FAILED"
			}
		} else {
			mutants++
			if r.Caught {
				status = "yes"
				caught++
			} else {
				status = "NO"
			}
		}
		if len(r.Expect) > 0 && r.Mutant != "reference" {
			expect++
			if r.Caught && r.diagnosedAsExpected() {
				diagnosed++
			}
		}
		diag := "-"
		if r.Caught {
			where, check = r.Case, string(r.Class)
			if r.Mutant != "reference" {
				diag = strings.Join(r.Diagnosis, ", ")
				if diag == "" {
					diag = "nothing"
				}
				if len(r.Expect) > 0 && !r.diagnosedAsExpected() {
					diag += " (WRONG)"
				}
			}
		}
		table = append(table, []string{r.Kernel, r.Mutant, status, where, check, difftest.SafeText(diag), difftest.FormatDuration(r.Elapsed)})
		if !r.OK() {
			switch {
			case r.Mutant == "reference":
				bad = append(bad, fmt.Sprintf("the %s reference fails %s (seed %d): %s: %s", r.Kernel, r.Case, r.Seed, r.Class, difftest.SafeLine(r.Message)))
			case !r.Caught:
				bad = append(bad, fmt.Sprintf("mutant %s (%s) passed all %d cases of %s", r.Mutant, r.Fault, r.Cases, r.Kernel))
			default:
				what := "nothing"
				if len(r.Diagnosis) > 0 {
					what = strings.Join(r.Diagnosis, ", ")
				}
				if r.DiagnosisNote != "" {
					what += " (" + r.DiagnosisNote + ")"
				}
				bad = append(bad, fmt.Sprintf("mutant %s, caught by %s (seed %d), is diagnosed as %s, not as %s", r.Mutant, r.Case, r.Seed, difftest.SafeLine(what), strings.Join(r.Expect, " or ")))
			}
		}
	}
	widths := difftest.ColumnWidths(table)
	var b strings.Builder
	for _, row := range table {
		b.WriteString(strings.TrimRight(difftest.PadRow(row, widths), " ") + "\n")
	}
	if len(bad) > 0 {
		b.WriteString("\n")
		for _, l := range bad {
			b.WriteString(l + "\n")
		}
	}
	verdict := "selftest passed"
	if !ok {
		verdict = "selftest FAILED"
	}
	fmt.Fprintf(&b, "\n%s: %d of %d mutants caught, reference %s", verdict, caught, mutants, refWord(rows))
	if expect > 0 {
		fmt.Fprintf(&b, "; %d of %d diagnosed as themselves", diagnosed, expect)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
