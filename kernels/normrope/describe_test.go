// Tests of DescribeFamilies against the parser it documents: the source's
// param reads, and CheckSpec's answer to each param per family.

package normrope

import (
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/paramtest"
)

// TestDescribeFamiliesMatchesParser checks the family documentation
// against CheckSpec (paramtest.CheckFamilies), each family's doc against
// FamilyDoc, and that no param is marked required (plan has a default for
// every param).
func TestDescribeFamiliesMatchesParser(t *testing.T) {
	paramtest.CheckFamilies(t, Kernel{}, ".", 15, "K") // K: a topk param, unknown here
	paramtest.CheckFamilyDocs(t, Kernel{}, FamilyDoc, func(string, string) bool { return false })
}

// TestDescribeFamiliesNoneRequired checks that no param is required: every
// family draws from an empty params table, except the constructed FP8
// and FP4 families, which draw once their configuration (not a missing
// param) is given.
func TestDescribeFamiliesNoneRequired(t *testing.T) {
	direct := map[string]any{"norm": NormRMS, "hadamard": false, "store": StoreFP8, "scale_fmt": ScalePlain}
	for _, name := range Families() {
		spec := difftest.CaseSpec{Kernel: KernelName, Family: name, Name: "c", Params: map[string]any{}}
		err := CheckSpec(spec)
		if families[name].needs == nil && err != nil {
			t.Errorf("family %s with no params: %v", name, err)
		}
		spec.Params = direct
		if name == "fp4-blocks" {
			spec.Params = map[string]any{"norm": NormRMS, "hadamard": false, "store": StoreFP4, "scale_fmt": ScaleUE8M0}
		}
		if err := CheckSpec(spec); err != nil {
			t.Errorf("family %s with %v: %v", name, spec.Params, err)
		}
	}
}
