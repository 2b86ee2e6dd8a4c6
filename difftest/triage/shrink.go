// Shrinking a failing case to a small reproducer (docs/failures.md): greedy
// reduction in the manner of delta debugging (A. Zeller and R.
// Hildebrandt, "Simplifying and Isolating Failure-Inducing Input", IEEE
// TSE 28(2), 2002) and of test-case reducers such as C-Reduce: the kernel
// proposes smaller or simpler versions of the case (fewer rows or tokens,
// shorter rows, simpler values, an identity page table, one page, the
// smallest K), and a proposal is kept when the implementation still fails
// it with the same class and the same diagnosis. A shrunk case is a
// capture: it need not come from any input generator.

package triage

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
)

// Reduction is one proposed smaller or simpler version of a case.
type Reduction struct {
	// What says in a few words what it changes: "drop rows 64–128",
	// "row 0: delete positions [512, 1024)", "identity page table".
	What string
	// Key names the reduction's pass and granularity ("row0/del/64"):
	// after a kept reduction, Shrink resumes the new case's reductions at
	// the one with the same Key and ordinal among that Key, so a pass does
	// not start over from its coarsest step after each success.
	Key string
	// Build returns the new case. An error (the proposal does not apply to
	// this case) skips it without an attempt.
	Build func() (*difftest.Case, error)
}

// Reducer is an optional interface of a Kernel: what `difftest shrink`
// needs to shrink its cases.
type Reducer interface {
	// Reductions lists the proposals for case c, the most promising (the
	// largest cut) first. Each Build returns a case of the same kernel
	// whose inputs Validate may reject (the attempt is then not made).
	Reductions(c *difftest.Case) []Reduction
	// SizeOf describes c's size in the kernel's terms, e.g. "2 rows × 1025
	// scores (L ≤ 1025), K 512, P 1024".
	SizeOf(c *difftest.Case) string
}

// DefaultShrinkBudget is the total time Shrink spends when ShrinkConfig
// gives none.
const DefaultShrinkBudget = 5 * time.Minute

// ShrinkConfig configures Shrink.
type ShrinkConfig struct {
	Impl    difftest.Impl
	Timeout time.Duration // per run of the implementation (each attempt runs it twice); 0 = none
	Budget  time.Duration // all attempts together; 0 = DefaultShrinkBudget
	// Log, when set, receives one line per attempt and per kept step.
	Log func(line string)
	// Enough, when set, stops shrinking as soon as the current case is
	// small enough by the caller's measure (a test's stated bounds), with
	// the Note "small enough".
	Enough func(c *difftest.Case) bool
}

// ShrinkResult is what Shrink found.
type ShrinkResult struct {
	Original *difftest.Case
	Shrunk   *difftest.Case   // the smallest case found; Original when nothing was kept
	Record   *difftest.Record // the shrunk case's failing record under the implementation
	Outcome  difftest.Outcome // the shrunk case's outputs (for SaveCapture)
	Class    difftest.Class
	// Diagnosis is the original case's diagnosis, every name of which each
	// kept step keeps; FinalDiagnosis the shrunk case's full diagnosis (it
	// may name more: on a small case more faults coincide).
	Diagnosis, FinalDiagnosis  []string
	Attempts                   int      // proposals run through the pipeline
	Steps                      []string // the kept reductions, in order
	OriginalSize, ShrunkSize   string   // Reducer.SizeOf
	OriginalBytes, ShrunkBytes int      // bytes of all input tensors
	Elapsed                    time.Duration
	// Note, when set, says why shrinking stopped before it ran out of
	// proposals: the budget was spent, Enough held, or it was stopped.
	Note string
}

// ErrShrinkPasses is returned (wrapped) by Shrink for a case the
// implementation does not fail: there is nothing to shrink.
var ErrShrinkPasses = errors.New("the case does not fail")

// ErrNoReducer is returned (wrapped) by Shrink for a kernel that does not
// implement Reducer.
var ErrNoReducer = errors.New("the kernel cannot shrink its cases")

// Shrink reduces case c of kernel k. It first runs c through the pipeline
// (CaseRun) under cfg.Impl: a pass is ErrShrinkPasses; otherwise the
// failure class and the diagnosis (Diagnose, without a time limit) are the
// target. Then, in rounds, it tries k's Reductions of the current case in
// order. A proposal is kept when it validates, is not a case seen before,
// has no more input bytes, and fails under cfg.Impl with the target class,
// still diagnosed as every name of the original diagnosis (only those
// candidates run per attempt; on a smaller case more faults can coincide,
// so the shrunk case's full diagnosis, FinalDiagnosis, may name more).
// After a kept one, the new case's proposals are tried from the one with
// the kept Key and ordinal. It stops after a round keeps nothing, when
// cfg.Budget is spent, when cfg.Enough says the case is small enough, or
// when ctx is done (the Note says which), and returns the smallest case
// found with its record and full diagnosis (after ctx is done, the
// diagnosis of the smallest case is cut short too). Errors:
// ErrShrinkPasses, ErrNoReducer, an *InternalError from the pipeline on
// the original case, a *RunError of class Unavailable, or ctx's error on
// the original case. (An internal error on a proposal skips that
// proposal: it is logged.)
func Shrink(ctx context.Context, k difftest.Kernel, c *difftest.Case, cfg ShrinkConfig) (*ShrinkResult, error) {
	start := time.Now()
	red, ok := k.(Reducer)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoReducer, k.Name())
	}
	budget := cfg.Budget
	if budget <= 0 {
		budget = DefaultShrinkBudget
	}
	deadline := start.Add(budget)
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			cfg.Log(fmt.Sprintf(format, args...))
		}
	}
	cr := &difftest.CaseRun{Impl: cfg.Impl, Timeout: cfg.Timeout}
	run := func(x *difftest.Case) (*difftest.Record, difftest.Outcome, error) {
		rec := difftest.NewRecord(x, cfg.Impl.Name())
		out, err := cr.RunCase(ctx, k, x, rec)
		return rec, out, err
	}
	rec, out, err := run(c)
	if err != nil {
		return nil, err
	}
	if !rec.Failed() {
		return nil, fmt.Errorf("%w under %s (%s passes)", ErrShrinkPasses, cfg.Impl.Name(), c.ID)
	}
	res := &ShrinkResult{Original: c, Shrunk: c, Record: rec, Outcome: out, Class: rec.Class,
		OriginalSize: red.SizeOf(c), OriginalBytes: inputBytes(c)}
	res.Diagnosis = Diagnose(ctx, k, c, out.Got, out.Want, 0).Matches
	logf("original: %s (%d input bytes): %s: %s", res.OriginalSize, res.OriginalBytes, rec.Class, difftest.SafeLine(rec.Message))
	if len(res.Diagnosis) > 0 {
		logf("original diagnosis: %v (every kept step must keep it)", res.Diagnosis)
	}

	seen := map[[32]byte]bool{caseDigest(c): true}
	cur := c
	stopped := func() bool {
		switch {
		case cfg.Enough != nil && cfg.Enough(cur):
			res.Note = "small enough"
		case ctx.Err() != nil:
			res.Note = "stopped: " + context.Cause(ctx).Error()
		case time.Now().After(deadline):
			res.Note = fmt.Sprintf("the %v budget was spent", budget)
		default:
			return false
		}
		return true
	}
	resumeKey, resumeOrd := "", 0
	for {
		list := red.Reductions(cur)
		first := resumeAt(list, resumeKey, resumeOrd)
		resumeKey = ""
		kept := false
		for i := first; i < len(list) && !kept; i++ {
			if stopped() {
				break
			}
			r := list[i]
			next, berr := r.Build()
			if berr != nil || next == nil {
				continue
			}
			d := caseDigest(next)
			if seen[d] || inputBytes(next) > inputBytes(cur) {
				continue
			}
			seen[d] = true
			if verr := k.Validate(next); verr != nil {
				logf("  skip   %s: invalid: %s", r.What, difftest.SafeLine(verr.Error()))
				continue
			}
			res.Attempts++
			nrec, nout, rerr := run(next)
			if rerr != nil {
				var re *difftest.RunError
				if ctx.Err() != nil {
					stopped() // the Note says so; the smallest case so far is returned
					break
				}
				if errors.As(rerr, &re) && re.Class == difftest.Unavailable {
					return nil, rerr
				}
				// A reference or comparator fault on a reduced case is the
				// kernel's bug, not this case's: skip the proposal.
				logf("  error  %s: %s", r.What, difftest.SafeLine(rerr.Error()))
				continue
			}
			why := ""
			switch {
			case !nrec.Failed():
				why = "passes"
			case nrec.Class != res.Class:
				why = "fails as " + string(nrec.Class)
			case len(res.Diagnosis) > 0:
				// Only the target candidates run: each must still match.
				got := diagnose(ctx, k, next, nout.Got, nout.Want, 0, res.Diagnosis).Matches
				if !slices.Equal(got, res.Diagnosis) {
					why = fmt.Sprintf("diagnosed as %v of %v", got, res.Diagnosis)
				}
			}
			if why != "" {
				logf("  no     %s: %s", r.What, why)
				continue
			}
			logf("  kept   %s: %s", r.What, red.SizeOf(next))
			res.Steps = append(res.Steps, r.What)
			cur, res.Record, res.Outcome = next, nrec, nout
			resumeKey, resumeOrd = r.Key, ordinal(list, i)
			kept = true
		}
		if res.Note != "" || !kept && first == 0 {
			break
		}
	}
	res.Shrunk = cur
	res.ShrunkSize, res.ShrunkBytes = red.SizeOf(cur), inputBytes(cur)
	res.FinalDiagnosis = Diagnose(ctx, k, cur, res.Outcome.Got, res.Outcome.Want, 0).Matches
	res.Elapsed = time.Since(start)
	return res, nil
}

// resumeAt is the index of the reduction with the given key and ordinal
// among that key (the last of that key when there are fewer; the start
// when the key is gone or empty).
func resumeAt(list []Reduction, key string, ord int) int {
	if key == "" {
		return 0
	}
	at, n := -1, 0
	for i, r := range list {
		if r.Key != key {
			continue
		}
		at = i
		if n == ord {
			return i
		}
		n++
	}
	return max(at, 0)
}

// ordinal is the position of list[i] among the reductions of its Key.
func ordinal(list []Reduction, i int) int {
	n := 0
	for _, r := range list[:i] {
		if r.Key == list[i].Key {
			n++
		}
	}
	return n
}

// caseDigest identifies a case's inputs and params: proposals that
// change only a parameter (K, a page size, a configuration switch) are new
// cases too.
func caseDigest(c *difftest.Case) [32]byte {
	in := difftest.InputDigest(c)
	return sha256.Sum256(append(in[:], difftest.MarshalParams(c)...))
}

// inputBytes is the size of every input tensor of c.
func inputBytes(c *difftest.Case) int {
	n := 0
	for _, t := range c.Inputs {
		n += len(t.Data)
	}
	return n
}

// SuiteEntryWriter is an optional interface of a Kernel: SuiteEntry
// renders case c as one [[case]] table of a suite file (kernel, family,
// name, params) from which NewCase rebuilds exactly c's inputs, with the
// inputs embedded in the params (a shrunk case is not any generator's
// draw).
type SuiteEntryWriter interface {
	SuiteEntry(c *difftest.Case, name string) (string, error)
}

// ErrNoSuiteEntry is wrapped by SuiteEntry's error for a kernel without
// SuiteEntryWriter, or a case too large to embed.
var ErrNoSuiteEntry = errors.New("no suite entry")

// SuiteEntry renders c as a suite entry named name through its kernel's
// SuiteEntryWriter. The entry is checked: parsed back (ParseSuite) and
// drawn (GenerateCase), its inputs must have c's digest. Errors wrap
// ErrNoSuiteEntry when the kernel has no writer; others are internal
// faults of the writer.
func SuiteEntry(c *difftest.Case, name string) (string, error) {
	k, ok := difftest.LookupKernel(c.Kernel)
	if !ok {
		return "", fmt.Errorf("%w: unknown kernel %q", ErrNoSuiteEntry, c.Kernel)
	}
	w, ok := k.(SuiteEntryWriter)
	if !ok {
		return "", fmt.Errorf("%w: kernel %s cannot embed its inputs in a suite file", ErrNoSuiteEntry, c.Kernel)
	}
	entry, err := w.SuiteEntry(c, name)
	if err != nil {
		return "", err
	}
	cases, err := suite.ParseSuite(name+".toml", []byte(entry))
	if err != nil {
		return "", &difftest.InternalError{Case: c.ID, Err: fmt.Errorf("the suite entry does not parse: %w", err)}
	}
	if len(cases) != 1 {
		return "", &difftest.InternalError{Case: c.ID, Err: fmt.Errorf("the suite entry holds %d cases", len(cases))}
	}
	_, back, err := difftest.GenerateCase(difftest.Item{Seed: c.Seed, SuiteCase: cases[0]})
	if err != nil {
		return "", &difftest.InternalError{Case: c.ID, Err: fmt.Errorf("the suite entry does not draw: %w", err)}
	}
	if difftest.InputDigest(back) != difftest.InputDigest(c) {
		return "", &difftest.InternalError{Case: c.ID, Err: errors.New("the suite entry draws other inputs than the case")}
	}
	return entry, nil
}
