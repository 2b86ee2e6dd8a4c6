// Chained cases (docs/pipeline.md, the pipeline): a case whose kernel runs
// other kernels' cases in turn, each stage fed the implementation's output
// of the stage before and checked against the reference on that same
// input.
package difftest

import (
	"context"
	"fmt"
	"strings"
)

// Chain is an optional interface of a Kernel whose cases are chains of
// other registered kernels' cases (the pipeline of docs/pipeline.md: norm_rope_store →
// indexer_logits → topk_transform). CaseRun.RunCase runs such a case by
// calling RunChain instead of running the case itself; the kernel's
// Reference, Written, Equivalent and Check are not used for it.
type Chain interface {
	// RunChain runs case c stage by stage: it builds each stage's case
	// (from c's inputs and the outputs the implementation gave for the
	// stages before) and calls run on it. It returns the case's result:
	// the first failing stage's class, with a message that names the
	// stage ("stage 2 indexer_logits: mismatch …"), and the metrics of
	// the stages and of the chain as a whole. An error is an internal
	// fault of the kernel (not of the implementation) or the context's.
	RunChain(ctx context.Context, c *Case, run StageFunc) (Result, error)
}

// StageFunc runs one stage case on the implementation under test through
// the whole case pipeline of RunCase (validation, guards, poison, both
// runs, the reference on the same input, the check). A stage that breaks
// its kernel's contract is recorded with class InvalidCase. The error is
// an internal fault or the context's.
type StageFunc func(ctx context.Context, stage *Case) (StageResult, error)

// StageResult is what StageFunc leaves of one stage.
type StageResult struct {
	// Got holds the outputs of the implementation's first run (nil when
	// it failed before producing any).
	Got []*Tensor
	// Rec is the stage's record.
	Rec *Record
	// OnReference is set when the implementation does not offer the
	// stage's kernel (a serve program that implements only some of them):
	// the stage then ran on the reference instead, and Rec says so in a
	// warning. A chain none of whose stages the implementation offers is
	// not tested: its case is recorded as skipped (class unavailable).
	OnReference bool
}

// runChain is RunCase for a kernel that implements Chain.
func (cr *CaseRun) runChain(ctx context.Context, ch Chain, c *Case, rec *Record) (Outcome, error) {
	sum := InputDigest(c)
	rec.InputSHA256 = fmt.Sprintf("%x", sum[:])
	rec.Verdict = VerdictPass
	stages, fallbacks := 0, 0
	var kernels []string
	var failed *StageOutcome // the last stage the implementation ran and failed
	run := func(ctx context.Context, stage *Case) (StageResult, error) {
		k, ok := LookupKernel(stage.Kernel)
		if !ok {
			return StageResult{}, &InternalError{Case: c.ID, Err: fmt.Errorf("stage %s: unknown kernel %q", stage.ID, stage.Kernel)}
		}
		stages++
		kernels = append(kernels, stage.Kernel)
		srec := NewRecord(stage, cr.Impl.Name())
		if err := k.Validate(stage); err != nil {
			srec.Verdict, srec.Class, srec.Message = VerdictFail, InvalidCase, err.Error()
			return StageResult{Rec: srec}, nil
		}
		out, err := cr.RunCase(ctx, k, stage, srec)
		if err != nil {
			return StageResult{Rec: srec}, err
		}
		if srec.Failed() {
			failed = &StageOutcome{Kernel: k, Case: stage, Outcome: out}
		}
		onRef := false
		if srec.Verdict == VerdictSkip {
			why := srec.Message
			ref := &CaseRun{Impl: ReferenceImpl{}, Timeout: cr.Timeout}
			srec = NewRecord(stage, ReferenceImpl{}.Name())
			if out, err = ref.RunCase(ctx, k, stage, srec); err != nil {
				return StageResult{Rec: srec}, err
			}
			srec.Warnings = append(srec.Warnings, fmt.Sprintf("%s ran on the reference: the implementation does not offer it (%s)", stage.Kernel, SafeLine(why)))
			onRef = true
			fallbacks++
		}
		rec.KernelTime += srec.KernelTime
		return StageResult{Got: out.Got, Rec: srec, OnReference: onRef}, nil
	}
	res, err := ch.RunChain(ctx, c, run)
	if err != nil {
		return Outcome{}, err
	}
	rec.Metrics, rec.Worst = res.Metrics, res.Worst
	rec.Warnings = append(rec.Warnings, res.Warnings...)
	switch {
	case res.Failed():
		rec.Verdict, rec.Class, rec.Message = VerdictFail, res.Class, res.Message
		return Outcome{Stage: failed}, nil
	case stages > 0 && fallbacks == stages:
		rec.Verdict, rec.Class = VerdictSkip, Unavailable
		rec.Message = noStageOffered(kernels)
	}
	return Outcome{}, nil
}

// noStageOffered is the message of a chained case none of whose stage
// kernels the implementation offers.
func noStageOffered(kernels []string) string {
	return fmt.Sprintf("the implementation offers none of the chain's kernels (%s): not tested", strings.Join(kernels, ", "))
}
