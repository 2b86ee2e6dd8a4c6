// Checking a suite entry of topk_transform without drawing its inputs
// (difftest.SpecChecker): the parameter half of NewCase on its own.

package topk

import (
	"fmt"

	"github.com/kerneldiff/kerneldiff/difftest"
)

var _ difftest.SpecChecker = Kernel{}

// CheckSpec returns the error NewCase would return for spec, and nil when
// NewCase would succeed: a kernel other than topk_transform, an unknown
// family, or a parameter that is unknown, mistyped or outside the ranges
// NewCase documents (the family's own parameters included). It runs
// NewCase's parameter decoding (readConfig) and nothing else: no tensor is
// allocated and no input drawn, so checking a whole suite costs
// microseconds per case.
func (Kernel) CheckSpec(spec difftest.CaseSpec) error {
	if spec.Kernel != KernelName {
		return fmt.Errorf("case %s: kernel %q is not %s", spec.ID(), spec.Kernel, KernelName)
	}
	fam, ok := familyByName(spec.Family)
	if !ok {
		return fmt.Errorf("case %s: unknown family %q (known: %v)", spec.ID(), spec.Family, Families())
	}
	if fam.literal != nil {
		// A literal entry's inputs are in the entry: NewCase builds them
		// without drawing (small: what one pastes) and validates them.
		_, err := NewCase(spec, 0, 0)
		return err
	}
	_, err := readConfig(spec, fam)
	return err
}
