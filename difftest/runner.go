// The case pipeline of docs/running.md: validate, hash, poison, run, check
// inputs, guards and canaries, rerun with the other poison, check for
// unwritten bytes and nondeterminism, compare with the reference.
package difftest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"
)

// InputDigest returns the SHA-256 over every input of c in contract
// order: for each tensor its name, a newline, and its Tensor.Digest. Two
// cases with equal digests hand byte-identical inputs to an
// implementation.
func InputDigest(c *Case) [32]byte {
	h := sha256.New()
	for _, t := range c.Inputs {
		d := t.Digest()
		h.Write([]byte(t.Name + "\n"))
		h.Write(d[:])
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// InternalError is a fault of the harness or of a kernel contract's Go
// code (a reference that fails on a validated case, a comparator that
// panics): nothing the run says can be trusted, so the CLI exits 125.
type InternalError struct {
	Case string
	Err  error
}

// Error returns "internal error in case ID: ...".
func (e *InternalError) Error() string {
	if e.Case == "" {
		return "internal error: " + e.Err.Error()
	}
	return fmt.Sprintf("internal error in case %s: %v", e.Case, e.Err)
}

// Unwrap returns the underlying error.
func (e *InternalError) Unwrap() error { return e.Err }

// CaseRun is the pipeline for one implementation.
type CaseRun struct {
	Impl    Impl
	Timeout time.Duration // per run of the implementation; 0 = none
}

// Outcome is what RunCase leaves besides the record: the outputs of the
// first run (nil when the implementation failed) and the reference's.
type Outcome struct {
	Got, Want []*Tensor
	// Stage, for a chained case (Chain) that failed in a stage the
	// implementation ran, is that stage: its kernel, case and outcome,
	// which the diagnosis reads (Got and Want are then nil).
	Stage *StageOutcome
}

// StageOutcome is the failing stage of a chained case.
type StageOutcome struct {
	Kernel  Kernel
	Case    *Case
	Outcome Outcome
}

// RunCase runs the validated case c of kernel k through the pipeline and
// fills rec's verdict, class, message, metrics, worst elements, input
// digest and kernel time (the caller sets identity fields and the replay
// command). It returns an *InternalError when the kernel's own Go code
// fails (Reference errs on a validated case, Written lists bytes outside
// an output, Check or Equivalent panics), and ctx.Err() when ctx is
// cancelled from outside.
func (cr *CaseRun) RunCase(ctx context.Context, k Kernel, c *Case, rec *Record) (out Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &InternalError{Case: c.ID, Err: fmt.Errorf("panic: %v (%s)", p, panicFrame(debug.Stack()))}
		}
	}()
	if ch, ok := k.(Chain); ok {
		return cr.runChain(ctx, ch, c, rec)
	}
	digests := make([][32]byte, len(c.Inputs))
	for i, t := range c.Inputs {
		digests[i] = t.Digest()
	}
	sum := InputDigest(c)
	rec.InputSHA256 = hex.EncodeToString(sum[:])
	rec.Verdict = VerdictPass

	// The reference runs beside the implementation.
	type refResult struct {
		want []*Tensor
		err  error
	}
	refc := make(chan refResult, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				refc <- refResult{err: fmt.Errorf("reference panicked: %v (%s)", p, panicFrame(debug.Stack()))}
			}
		}()
		want := PoisonedTensors(c, PoisonA)
		refc <- refResult{want, k.Reference(c, want)}
	}()
	reference := func() ([]*Tensor, error) {
		r := <-refc
		if r.err != nil {
			return nil, &InternalError{Case: c.ID, Err: fmt.Errorf("reference: %w", r.err)}
		}
		return r.want, nil
	}

	written, untouched, err := Untouched(k, c)
	if err != nil {
		return out, &InternalError{Case: c.ID, Err: err}
	}

	fail := func(class Class, msg string) {
		if rec.Verdict == VerdictFail {
			return
		}
		rec.Verdict, rec.Class, rec.Message = VerdictFail, class, msg
	}

	var skipped *RunError // the implementation does not offer this case
	// One run: returns the outputs, or records the failure and returns nil.
	runOnce := func(p Poison) ([]*Tensor, error) {
		bufs := NewBuffers(c, p)
		info, rerr := RunGuarded(ctx, cr.Impl, k, c, bufs, cr.Timeout)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if p == PoisonA {
			rec.KernelTime = info.KernelTime
		}
		for _, w := range info.Warnings {
			if !slices.Contains(rec.Warnings, w) {
				rec.Warnings = append(rec.Warnings, w)
			}
		}
		if rerr != nil {
			if rerr.Class == Unavailable {
				if rerr.Skip {
					skipped = rerr
					return nil, nil
				}
				return nil, rerr
			}
			fail(rerr.Class, rerr.Msg)
			return nil, nil
		}
		for i, t := range c.Inputs {
			if t.Digest() != digests[i] {
				fail(InputModified, fmt.Sprintf("input %s changed during the run (SHA-256 differs)", t.Name))
				break
			}
		}
		if gerr := CheckGuards(bufs, p); gerr != nil {
			fail(Guard, gerr.Error())
		}
		outs := TensorsOf(bufs)
		if cerr := CheckCanary(outs, untouched, p); cerr != nil {
			fail(Guard, cerr.Error())
		}
		return outs, nil
	}

	got, err := runOnce(PoisonA)
	if skipped != nil {
		reference()
		rec.Verdict, rec.Class, rec.Message = VerdictSkip, Unavailable, skipped.Msg
		return out, nil
	}
	if err != nil || got == nil {
		// Drain the reference so it does not outlive the case.
		if _, rerr := reference(); rerr != nil && err == nil {
			return out, rerr
		}
		return out, err
	}
	out.Got = got
	if rec.Verdict == VerdictPass {
		again, err := runOnce(PoisonB)
		if err != nil {
			reference()
			return out, err
		}
		if again != nil && rec.Verdict == VerdictPass {
			if n, first := checkUnwritten(got, again, written); n > 0 {
				fail(Unwritten, fmt.Sprintf("%s; %d byte(s) unwritten in all", first, n))
			} else if eerr := k.Equivalent(c, got, again); eerr != nil {
				fail(Nondeterministic, "runs with poison A and B disagree: "+eerr.Error())
			}
		}
	}

	want, err := reference()
	if err != nil {
		return out, err
	}
	out.Want = want
	res := k.Check(c, got, want)
	rec.Metrics, rec.Worst = res.Metrics, res.Worst
	rec.Warnings = append(rec.Warnings, res.Warnings...)
	if res.Failed() {
		if rec.Verdict == VerdictFail {
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("the comparison with the reference also fails (%s): %s", res.Class, res.Message))
		}
		fail(res.Class, res.Message)
	}
	if rec.Verdict == VerdictFail && rec.Class == Pass {
		return out, &InternalError{Case: c.ID, Err: errors.New("a failure without a class")}
	}
	return out, nil
}

// MarshalParams renders a case's parameter struct for the record.
func MarshalParams(c *Case) json.RawMessage {
	b, err := json.Marshal(c.Params)
	if err != nil {
		b, _ = json.Marshal(fmt.Sprintf("unprintable params: %v", err))
	}
	return b
}
