// Tests of DescribeFamilies against the parser it documents: the source's
// param reads, and NewCase's answer to each param per family.

package topk

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/paramtest"
)

// TestDescribeFamiliesMatchesParser checks the family documentation
// against the parser (paramtest.CheckFamilies), and that familyDocs
// documents no family that does not exist.
func TestDescribeFamiliesMatchesParser(t *testing.T) {
	paramtest.CheckFamilies(t, Kernel{}, ".", 7)
	for name := range familyDocs {
		if !slices.Contains(Families(), name) {
			t.Errorf("familyDocs has %q, which is no family", name)
		}
	}
}

// TestDescribeFamiliesRequired checks the Required marks: a spec with only
// the required params (valid values) draws for every family, and leaving
// out any one of them fails.
func TestDescribeFamiliesRequired(t *testing.T) {
	valid := map[string]any{"K": int64(4), "lengths": []any{int64(0), int64(7), int64(16)}}
	for _, fi := range (Kernel{}).DescribeFamilies() {
		var required []string
		for _, p := range fi.Params {
			if p.Required {
				required = append(required, p.Name)
			}
		}
		slices.Sort(required)
		if want := []string{"K", "lengths"}; !slices.Equal(required, want) {
			t.Errorf("family %s: required %v, want %v", fi.Name, required, want)
			continue
		}
		params := map[string]any{}
		for _, k := range required {
			params[k] = valid[k]
		}
		spec := difftest.CaseSpec{Kernel: KernelName, Family: fi.Name, Name: "c", Params: params}
		if _, err := NewCase(spec, 1, 1); err != nil {
			t.Errorf("family %s with only the required params: %v", fi.Name, err)
		}
		for _, drop := range required {
			p := map[string]any{}
			for k, v := range params {
				if k != drop {
					p[k] = v
				}
			}
			spec.Params = p
			_, err := NewCase(spec, 1, 1)
			if err == nil || !strings.Contains(err.Error(), strconv.Quote(drop)) {
				t.Errorf("family %s without %s: err = %v, want an error naming it", fi.Name, drop, err)
			}
		}
	}
}
