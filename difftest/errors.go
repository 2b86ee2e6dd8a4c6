package difftest

import (
	"context"
	"errors"
	"fmt"
	"syscall"
)

// ErrInvalidInput is the sentinel every *InputError wraps: a case whose
// inputs break the kernel contract. Such a case is rejected before any
// implementation runs; from a suite or capture file it exits 2.
var ErrInvalidInput = errors.New("invalid input")

// InputError reports one broken rule of a kernel contract, modelled on
// strconv.NumError: which tensor, which index, which rule.
//
//	seq_lens[3]: must be ≥ 0, got -1
type InputError struct {
	Tensor string // contract name of the tensor ("seq_lens"), or the parameter ("P")
	Index  string // element index such as "[3]" or "[2][17]"; empty for a whole-tensor rule
	Rule   string // the rule and the offending value
}

// Error returns "invalid input: TENSOR[INDEX]: RULE".
func (e *InputError) Error() string {
	return fmt.Sprintf("%s: %s%s: %s", ErrInvalidInput, e.Tensor, e.Index, e.Rule)
}

// Unwrap returns ErrInvalidInput.
func (e *InputError) Unwrap() error { return ErrInvalidInput }

// Inputf builds an *InputError; index is formatted as "[i]" per value.
func Inputf(tensor string, index []int, format string, args ...any) *InputError {
	idx := ""
	for _, i := range index {
		idx += fmt.Sprintf("[%d]", i)
	}
	return &InputError{Tensor: tensor, Index: idx, Rule: fmt.Sprintf(format, args...)}
}

// Interrupted is the cause a run is cancelled with when a person stops it
// with a signal (SIGINT, SIGTERM, SIGHUP; docs/interfaces.md as amended): the
// finished cases are reported and flushed, temporary files are removed,
// and the exit code is 128 + the signal number, which `git bisect run`
// takes as "stop" rather than "skip this commit". Pass it to a
// context.CancelCauseFunc; Run reports it as the reason the run stopped.
type Interrupted struct {
	Signal syscall.Signal
}

// Error returns "interrupted by SIGINT" (SIGTERM, SIGHUP; other signals by
// number).
func (e *Interrupted) Error() string { return "interrupted by " + SignalName(e.Signal) }

// Unwrap returns context.Canceled, so errors.Is(err, context.Canceled)
// holds for an interrupted run.
func (e *Interrupted) Unwrap() error { return context.Canceled }

// ExitCode is 128 + the signal number: 130 for SIGINT, 143 for SIGTERM,
// 129 for SIGHUP.
func (e *Interrupted) ExitCode() int { return 128 + int(e.Signal) }

// SignalName names the signals a person stops a run with the way a shell
// user writes them ("SIGINT"); any other signal is "signal N".
func SignalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return fmt.Sprintf("signal %d", int(s))
}

// InterruptedBy returns the *Interrupted cause of ctx, if ctx was
// cancelled with one.
func InterruptedBy(ctx context.Context) (*Interrupted, bool) {
	var in *Interrupted
	if ctx.Err() == nil || !errors.As(context.Cause(ctx), &in) {
		return nil, false
	}
	return in, true
}
