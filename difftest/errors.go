package difftest

import (
	"errors"
	"fmt"
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
