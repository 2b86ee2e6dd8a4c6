// Diagnosis of a failing case (docs/failures.md): which known bug the
// implementation's output looks like. Every catalog mutant of the case's
// kernel (docs/mutants.md) and every named semantic variant (what a real implementation
// does differently from the contract: PyTorch's topk order, truncating
// conversions, …) runs on the same inputs; a candidate whose output
// differs from the reference's and is the same result as the
// implementation's, by the kernel's matching rule, is named: "behaves like
// topk-page-row0: translates every row through page_table row 0". The
// diagnosis is a hint next to the verdict, never a verdict: a case with no
// match says nothing.

package triage

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// Variant is a named semantic variant of a kernel: an implementation that
// is not the contract but is what some real implementation does (the
// PyTorch fallback's NaN order, a conversion by truncation). The diagnosis
// runs it like a catalog mutant.
type Variant struct {
	// Name is unique among the kernel's mutants and variants, e.g.
	// "torch-nan-largest".
	Name string
	// Doc is one line: what it does differently, and which real
	// implementation does it.
	Doc string
	// Alias, when set, names the catalog mutant whose outputs this variant
	// has on every case: the diagnosis does not run the variant but the
	// mutant, and names the mutant. Run may then be nil.
	Alias string
	// Parts, for a combination of other variants, lists their names; nil
	// for a variant that is one behaviour. When a combination and some of
	// its parts (alone or in a smaller combination) match, only the
	// smallest matching combinations are named (see Diagnose).
	Parts []string
	// Run computes the variant's outputs into outs (pre-filled with
	// PoisonA, the canary), like Mutant.Run. It may return an error or
	// panic on a case it cannot handle: that is no match.
	Run func(c *difftest.Case, outs []*difftest.Tensor) error
	// Accepts, for a variant that is a declared precision rather than one
	// output (Run nil), is that alternative contract's check: whether the
	// implementation's outputs got pass case c under it (want: the
	// reference's outputs), e.g. the contract's check with accum_bits 8.
	// It returns false where the case already declares that precision or
	// a coarser one. A panic is no match.
	Accepts func(c *difftest.Case, got, want []*difftest.Tensor) bool
	// Precision marks an Accepts variant: the diagnosis says "passes as
	// NAME: DOC" rather than "behaves like NAME: DOC".
	Precision bool
}

// VariantProvider is an optional interface of a Kernel: the named
// semantic variants the diagnosis tries besides the kernel's mutants.
type VariantProvider interface {
	Variants() []Variant
}

// CandidateMatcher is an optional interface of a Kernel, preferred to
// Matcher by the diagnosis: MatchCandidate reports whether got, the
// implementation's outputs of case c, pass the own check of the candidate
// named name (a catalog mutant or a variant), whose outputs on c are cand:
// the candidate's order with the contract's freedoms (any choice among
// keys tied at the K-th under that order, an unspecified output order,
// either NaN sign or payload where the candidate does not fix it), and the
// candidate's precision with the contract's derived tolerance. So an
// implementation that reproduces a candidate's fault with another tie
// choice or another f32 summation order is still recognised.
type CandidateMatcher interface {
	MatchCandidate(c *difftest.Case, name string, cand, got []*difftest.Tensor) bool
}

// CandidateScreen is an optional interface of a Kernel with a
// CandidateMatcher, for kernels whose candidates are costly to run on
// large cases: ScreenCandidate reports whether got, the implementation's
// outputs of case c, can be told not to match the candidate named name
// without running it: from some of the candidate's output elements,
// computed alone, one that neither equals got's nor passes the
// candidate's own check (MatchCandidate's rule) there. It must not reject
// a candidate that would match; false means "run it".
type CandidateScreen interface {
	ScreenCandidate(c *difftest.Case, name string, got []*difftest.Tensor) bool
}

// Matcher is an optional interface of a Kernel: Match reports whether two
// implementations' outputs of case c (in c.Outputs order, each as long as
// its OutputSpec) are the same result for the diagnosis. Kernels without
// one compare every byte of every output.
type Matcher interface {
	Match(c *difftest.Case, a, b []*difftest.Tensor) bool
}

// DefaultDiagnoseBudget is the time a failing case's diagnosis may take
// when DiagnoseConfig gives none: enough for every candidate of the
// default suite's largest cases on a 2-core machine.
const DefaultDiagnoseBudget = 10 * time.Second

// DefaultDiagnoseTotal is the time all diagnoses of one run may take
// together when DiagnoseConfig gives none: a run with many failures does
// not spend more than this on hints.
const DefaultDiagnoseTotal = 2 * time.Minute

// DiagnoseConfig turns the diagnosis of failing cases on (Config.Diagnose).
// Zero durations mean the defaults.
type DiagnoseConfig struct {
	PerCase time.Duration // each failing case; DefaultDiagnoseBudget when 0
	Total   time.Duration // the whole run; DefaultDiagnoseTotal when 0

	mu    sync.Mutex
	spent time.Duration
}

// take returns the budget of the next case: min(PerCase, what is left of
// Total), or 0 when Total is spent.
func (d *DiagnoseConfig) take() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	per, total := d.PerCase, d.Total
	if per <= 0 {
		per = DefaultDiagnoseBudget
	}
	if total <= 0 {
		total = DefaultDiagnoseTotal
	}
	return min(per, max(total-d.spent, 0))
}

func (d *DiagnoseConfig) charge(t time.Duration) {
	d.mu.Lock()
	d.spent += t
	d.mu.Unlock()
}

// Candidate is one implementation the diagnosis tries: a catalog mutant
// or a semantic variant of one kernel.
type Candidate struct {
	Name  string
	Doc   string   // the mutant's Fault, or the variant's Doc
	Parts []string // a combination's parts; nil otherwise
	Run   func(c *difftest.Case, outs []*difftest.Tensor) error
	// Accepts and Precision as in Variant: a declared precision's check,
	// run on the implementation's outputs instead of Run.
	Accepts   func(c *difftest.Case, got, want []*difftest.Tensor) bool
	Precision bool
}

// Candidates returns what the diagnosis tries for kernel k, in order: its
// catalog mutants, then its variants that are not aliases of a mutant.
// A variant named like a mutant, or an alias naming no mutant, is left out
// (kernel tests check that neither happens).
func Candidates(k difftest.Kernel) []Candidate {
	var cs []Candidate
	names := map[string]bool{}
	for _, m := range k.Mutants() {
		cs = append(cs, Candidate{Name: m.Name, Doc: m.Fault, Run: m.Run})
		names[m.Name] = true
	}
	if vp, ok := k.(VariantProvider); ok {
		for _, v := range vp.Variants() {
			if v.Alias != "" || names[v.Name] || v.Run == nil && v.Accepts == nil {
				continue
			}
			names[v.Name] = true
			cs = append(cs, Candidate{Name: v.Name, Doc: v.Doc, Parts: v.Parts, Run: v.Run, Accepts: v.Accepts, Precision: v.Precision})
		}
	}
	return cs
}

// DescribeCandidate returns the one-line description of the named mutant
// or variant of the named kernel ("" when this build has none): the
// table prints it next to a diagnosis read back from a report.
func DescribeCandidate(kernel, name string) string {
	k, ok := difftest.LookupKernel(kernel)
	if !ok {
		return ""
	}
	if _, chain := k.(difftest.Chain); chain {
		// A chained case is diagnosed by its stages' candidates.
		for _, sk := range difftest.Kernels() {
			if _, ok := sk.(difftest.Chain); !ok {
				if d := DescribeCandidate(sk.Name(), name); d != "" {
					return d
				}
			}
		}
		return ""
	}
	for _, m := range k.Mutants() {
		if m.Name == name {
			return m.Fault
		}
	}
	if vp, ok := k.(VariantProvider); ok {
		for _, v := range vp.Variants() {
			if v.Name == name {
				return v.Doc
			}
		}
	}
	return ""
}

// isPrecision reports whether name is a declared-precision variant
// (Variant.Precision) of the named kernel.
func isPrecision(kernel, name string) bool {
	k, ok := difftest.LookupKernel(kernel)
	if !ok {
		return false
	}
	if _, chain := k.(difftest.Chain); chain {
		for _, sk := range difftest.Kernels() {
			if _, ok := sk.(difftest.Chain); !ok && isPrecision(sk.Name(), name) {
				return true
			}
		}
		return false
	}
	if vp, ok := k.(VariantProvider); ok {
		for _, v := range vp.Variants() {
			if v.Name == name {
				return v.Precision
			}
		}
	}
	return false
}

// Diagnosis is what Diagnose found for one failing case.
type Diagnosis struct {
	// Matches are the names of the candidates that reproduce the
	// implementation's output, in Candidates order, combinations reduced
	// to the smallest that match.
	Matches []string
	// Tried counts the candidates that ran to the end (matching or not);
	// Candidates is how many there are.
	Tried, Candidates int
	// Note, when set, says why the diagnosis is incomplete: the budget ran
	// out (the candidates not tried are unknown, not non-matches).
	Note    string
	Elapsed time.Duration
}

// Diagnose runs every candidate of kernel k (Candidates) on case c and
// returns those whose output is the same result as got (the
// implementation's first-run outputs) by k's Matcher, or bytewise for a
// kernel without one, and which fail the case themselves: a byte outside
// k.Written left the canary, or k.Check against want (the reference's
// outputs) fails. So a candidate that passes is never named, not even
// where it equals an implementation that failed for another reason (a
// guard band, a second run that disagrees). Check runs only for the
// candidates whose output equals got.
//
// A candidate is also a match when k's CandidateMatcher says got passes
// the candidate's own check (its order with the contract's freedoms, its
// precision with the contract's tolerance), and a declared precision
// (Candidate.Accepts) when got fails c by its comparison alone and passes
// that precision's check. Precisions run first (each is one check of
// got), then the other candidates in order; one that a smaller matching
// combination covers is not run.
//
// A kernel with a CandidateScreen has each candidate screened first: one
// it tells apart from a few of its output elements is no match and does
// not run. A candidate gets fresh outputs filled with PoisonA (got's
// poison, also the canary of in-out outputs); an error, a panic or an
// output of the wrong size is no match. A combination (Candidate.Parts) is dropped when
// a candidate made of a proper subset of its parts also matches.
// Candidates run one after another until budget (≤ 0: no limit) is spent
// or ctx is done; a candidate still running then is abandoned (in-process
// code cannot be stopped; its buffers are its own) and Note says how far
// it got. got or want nil gives no diagnosis.
func Diagnose(ctx context.Context, k difftest.Kernel, c *difftest.Case, got, want []*difftest.Tensor, budget time.Duration) Diagnosis {
	return diagnose(ctx, k, c, got, want, budget, nil)
}

// diagnose is Diagnose over the candidates named in only (all when nil).
func diagnose(ctx context.Context, k difftest.Kernel, c *difftest.Case, got, want []*difftest.Tensor, budget time.Duration, only []string) Diagnosis {
	start := time.Now()
	cands := Candidates(k)
	if only != nil {
		cands = slices.DeleteFunc(cands, func(c Candidate) bool { return !slices.Contains(only, c.Name) })
	}
	d := Diagnosis{Candidates: len(cands)}
	if got == nil || want == nil {
		return d
	}
	same := func(a, b []*difftest.Tensor) bool { return sameOutputs(k, c, a, b) }
	var deadline <-chan time.Time
	if budget > 0 {
		t := time.NewTimer(budget)
		defer t.Stop()
		deadline = t.C
	}
	// Declared precisions first: each is one check of got, and a case
	// whose budget runs out among the mutants still says which precision
	// it passes as.
	order := make(map[string]int, len(cands))
	for i, cand := range cands {
		order[cand.Name] = i
	}
	slices.SortStableFunc(cands, func(a, b Candidate) int {
		return cmpBool(a.Run != nil, b.Run != nil)
	})
	var matched []Candidate
	for _, cand := range cands {
		if coveredBySmaller(cand, matched) {
			d.Tried++ // would be dropped below: a smaller combination matched
			continue
		}
		if cand.Run == nil {
			if checkOnly(k, c, got, want) && accepts(cand, c, got, want) {
				matched = append(matched, cand)
			}
			d.Tried++
			continue
		}
		if screened(k, c, cand.Name, got) {
			d.Tried++ // told apart from a few of its elements: no match
			continue
		}
		outs, ok, stop := runCandidate(ctx, deadline, c, cand)
		if stop != "" {
			d.Note = fmt.Sprintf("diagnosis incomplete: %s after %d of %d candidates", stop, d.Tried, len(cands))
			if budget > 0 && stop == "budget spent" {
				d.Note = fmt.Sprintf("diagnosis incomplete: the %v budget was spent after %d of %d candidates", budget, d.Tried, len(cands))
			}
			break
		}
		d.Tried++
		if ok && (same(outs, got) || matchCandidate(k, c, cand.Name, outs, got)) && failsOn(k, c, outs, want) {
			matched = append(matched, cand)
		}
	}
	slices.SortFunc(matched, func(a, b Candidate) int { return order[a.Name] - order[b.Name] })
	for _, m := range matched {
		if !coveredBySmaller(m, matched) {
			d.Matches = append(d.Matches, m.Name)
		}
	}
	d.Elapsed = time.Since(start)
	return d
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// partsOf is a candidate's set of behaviours: its Parts, or itself.
func partsOf(c Candidate) []string {
	if len(c.Parts) == 0 {
		return []string{c.Name}
	}
	return c.Parts
}

// coveredBySmaller reports whether another matching candidate is made of
// a proper subset of m's parts.
func coveredBySmaller(m Candidate, matched []Candidate) bool {
	mp := partsOf(m)
	for _, o := range matched {
		op := partsOf(o)
		if o.Name == m.Name || len(op) >= len(mp) {
			continue
		}
		sub := true
		for _, p := range op {
			sub = sub && slices.Contains(mp, p)
		}
		if sub {
			return true
		}
	}
	return false
}

// runCandidate runs one candidate on fresh PoisonA outputs in its own
// goroutine. ok is false when it failed (error, panic, outputs resized);
// stop is non-empty ("budget spent", "stopped") when the deadline or ctx
// came first.
func runCandidate(ctx context.Context, deadline <-chan time.Time, c *difftest.Case, cand Candidate) (outs []*difftest.Tensor, ok bool, stop string) {
	outs = difftest.PoisonedTensors(c, difftest.PoisonA)
	sizes := make([]int, len(outs))
	for i, t := range outs {
		sizes[i] = len(t.Data)
	}
	done := make(chan bool, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- false
			}
		}()
		done <- cand.Run(c, outs) == nil
	}()
	select {
	case r := <-done:
		for i, t := range outs {
			r = r && len(t.Data) == sizes[i]
		}
		return outs, r, ""
	case <-deadline:
		return nil, false, "budget spent"
	case <-ctx.Done():
		return nil, false, "stopped"
	}
}

// failsOn reports whether a candidate's outputs fail case c as an
// implementation's would: a byte outside k.Written (and k.Unspecified)
// changed from the canary (PoisonA), or k.Check against want fails. A Check that panics
// counts as not failing (no match).
func failsOn(k difftest.Kernel, c *difftest.Case, outs, want []*difftest.Tensor) (fails bool) {
	defer func() {
		if recover() != nil {
			fails = false
		}
	}()
	if len(k.Written(c)) != len(outs) {
		return false
	}
	if canaryBroken(k, c, outs) {
		return true
	}
	return k.Check(c, outs, want).Failed()
}

// checkOnly reports whether got fails case c through k.Check alone: every
// byte outside k.Written kept the canary (PoisonA). A declared precision
// explains only such a failure.
func checkOnly(k difftest.Kernel, c *difftest.Case, got, want []*difftest.Tensor) bool {
	return !canaryBroken(k, c, got) && failsOn(k, c, got, want)
}

// canaryBroken reports whether a byte of outs outside k.Written and
// k.Unspecified changed from the canary (PoisonA), as the runner checks
// it; lists that do not fit the outputs count as broken.
func canaryBroken(k difftest.Kernel, c *difftest.Case, outs []*difftest.Tensor) bool {
	written := k.Written(c)
	if len(written) != len(outs) || len(outs) != len(c.Outputs) {
		return true
	}
	var unspecified [][]difftest.Range
	if us, ok := k.(difftest.Unspecifier); ok {
		if unspecified = us.Unspecified(c); unspecified != nil && len(unspecified) != len(outs) {
			return true
		}
	}
	untouched := make([][]difftest.Range, len(outs))
	for i, o := range c.Outputs {
		owned := written[i]
		if unspecified != nil {
			owned = append(append([]difftest.Range(nil), written[i]...), unspecified[i]...)
		}
		var err error
		if untouched[i], err = difftest.Complement(o.Name, o.Bytes(), owned); err != nil {
			return true
		}
	}
	return difftest.CheckCanary(outs, untouched, difftest.PoisonA) != nil
}

// accepts runs a precision candidate's check on got; a panic or a
// candidate without Accepts is no match.
func accepts(cand Candidate, c *difftest.Case, got, want []*difftest.Tensor) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return cand.Accepts != nil && cand.Accepts(c, got, want)
}

// matchCandidate applies k's CandidateMatcher (false for a kernel without
// one, or when it panics): got passes the named candidate's own check.
func matchCandidate(k difftest.Kernel, c *difftest.Case, name string, cand, got []*difftest.Tensor) (ok bool) {
	m, has := k.(CandidateMatcher)
	if !has || len(cand) != len(got) || len(got) != len(c.Outputs) {
		return false
	}
	for i := range got {
		if cand[i] == nil || got[i] == nil || len(cand[i].Data) != len(got[i].Data) {
			return false
		}
	}
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return m.MatchCandidate(c, name, cand, got)
}

// screened applies k's CandidateScreen (false for a kernel without one,
// or when it panics): the candidate named name cannot match got.
func screened(k difftest.Kernel, c *difftest.Case, name string, got []*difftest.Tensor) (no bool) {
	s, has := k.(CandidateScreen)
	if !has || len(got) != len(c.Outputs) {
		return false
	}
	defer func() {
		if recover() != nil {
			no = false
		}
	}()
	return s.ScreenCandidate(c, name, got)
}

// sameOutputs applies k's Matcher, or compares every byte.
func sameOutputs(k difftest.Kernel, c *difftest.Case, a, b []*difftest.Tensor) bool {
	if len(a) != len(b) || len(a) != len(c.Outputs) {
		return false
	}
	for i := range a {
		if a[i] == nil || b[i] == nil || len(a[i].Data) != len(b[i].Data) {
			return false
		}
	}
	if m, ok := k.(Matcher); ok {
		return m.Match(c, a, b)
	}
	for i := range a {
		if !bytes.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}

// DiagnosisLines renders a record's diagnosis for the table and JUnit:
// one "behaves like NAME: DOC" per match (DOC from DescribeCandidate,
// left out when this build does not know the name), and the note when
// the diagnosis is incomplete. Names and notes are escaped (SafeText).
func DiagnosisLines(r *difftest.Record) []string {
	var lines []string
	for _, name := range r.Diagnosis {
		l := "behaves like " + difftest.SafeText(name)
		if isPrecision(r.Kernel, name) {
			l = "passes as " + difftest.SafeText(name)
		}
		if doc := DescribeCandidate(r.Kernel, name); doc != "" {
			l += ": " + difftest.SafeText(doc)
		}
		lines = append(lines, l)
	}
	if r.DiagnosisNote != "" {
		lines = append(lines, difftest.SafeLine(r.DiagnosisNote))
	}
	return lines
}

// diagnoseRecord diagnoses a failing case within cfg's budgets and
// records the result; a chained case's diagnosis is its failing stage's
// (Outcome.Stage), named by that stage kernel's candidates. A case without outputs (a crash, a time-out) is not
// diagnosed and says nothing; one reached after the run's total budget is
// spent says so in its note.
func diagnoseRecord(ctx context.Context, cfg *DiagnoseConfig, k difftest.Kernel, c *difftest.Case, out difftest.Outcome, rec *difftest.Record) {
	if s := out.Stage; out.Got == nil && s != nil && s.Case != nil {
		k, c, out = s.Kernel, s.Case, s.Outcome // a chain: its failing stage
	}
	if out.Got == nil || out.Want == nil {
		return
	}
	budget := cfg.take()
	if budget <= 0 {
		rec.DiagnosisNote = "not diagnosed: the run's diagnosis budget is spent (--diagnose)"
		return
	}
	d := Diagnose(ctx, k, c, out.Got, out.Want, budget)
	cfg.charge(d.Elapsed)
	rec.Diagnosis, rec.DiagnosisNote = d.Matches, d.Note
}

// DiagnoseRecord is the run's diagnosis hook (difftest.Config.Diagnose):
// it diagnoses a failing case within d's budgets and records the result
// in rec.Diagnosis and rec.DiagnosisNote.
func (d *DiagnoseConfig) DiagnoseRecord(ctx context.Context, k difftest.Kernel, c *difftest.Case, out difftest.Outcome, rec *difftest.Record) {
	diagnoseRecord(ctx, d, k, c, out, rec)
}
