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
// family, or a parameter that is unknown, mistyped or out of range (K ≥ 1;
// P a power of two; lengths non-empty, each in [0, 2³¹−1]; batch in
// [1, 65536]; stride ≥ every length with batch·stride ≤ 2²⁸; page ids
// within the int32 slot range; the family's own parameters). It decodes
// the parameters exactly as NewCase does (readConfig) and allocates no
// tensor, so a whole suite is checked in microseconds per case.
func (Kernel) CheckSpec(spec difftest.CaseSpec) error {
	if spec.Kernel != KernelName {
		return fmt.Errorf("case %s: kernel %q is not %s", spec.ID(), spec.Kernel, KernelName)
	}
	fam, ok := familyByName(spec.Family)
	if !ok {
		return fmt.Errorf("case %s: unknown family %q (known: %v)", spec.ID(), spec.Family, Families())
	}
	_, err := readConfig(spec, fam)
	return err
}
