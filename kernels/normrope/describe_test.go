// Tests of DescribeFamilies against the parser it documents: the source's
// param reads, and CheckSpec's answer to each param per family.

package normrope

import (
	"slices"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/paramtest"
)

// sourceParamKeys returns every string-literal key passed to a
// difftest.Params reader in the package's non-test files.
func sourceParamKeys(t *testing.T) []string {
	t.Helper()
	keys, err := paramtest.SourceParamKeys(".")
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestDescribeFamiliesCoversFamilies(t *testing.T) {
	var names []string
	for _, fi := range (Kernel{}).DescribeFamilies() {
		names = append(names, fi.Name)
		if fi.Doc == "" || fi.Doc != FamilyDoc(fi.Name) {
			t.Errorf("family %s: doc %q, want FamilyDoc's %q", fi.Name, fi.Doc, FamilyDoc(fi.Name))
		}
		seen := map[string]bool{}
		for _, p := range fi.Params {
			if seen[p.Name] {
				t.Errorf("family %s: param %s described twice", fi.Name, p.Name)
			}
			seen[p.Name] = true
			if p.Doc == "" || strings.Contains(p.Doc, "\n") {
				t.Errorf("family %s param %s: doc must be one non-empty line, got %q", fi.Name, p.Name, p.Doc)
			}
			if p.Required {
				t.Errorf("family %s param %s: marked required, but plan has a default for every param", fi.Name, p.Name)
			}
		}
	}
	if !slices.Equal(names, Families()) {
		t.Errorf("described families %v, want Families() %v", names, Families())
	}
}

// TestDescribeFamiliesMatchesParser checks, for every family, that each
// key the parser reads is described for that family exactly when plan
// reads it there: a mistyped value of a read key is a type error naming
// it, of an unread key the "unknown param" error.
func TestDescribeFamiliesMatchesParser(t *testing.T) {
	keys := sourceParamKeys(t)
	if len(keys) < 15 {
		t.Fatalf("found only %d param keys in the source: %v", len(keys), keys)
	}
	for _, fi := range (Kernel{}).DescribeFamilies() {
		described := map[string]bool{}
		for _, p := range fi.Params {
			described[p.Name] = true
			if !slices.Contains(keys, p.Name) {
				t.Errorf("family %s: param %q is described but the source never reads it", fi.Name, p.Name)
			}
		}
		for _, k := range append(keys, "K") { // K: a topk param, unknown here
			spec := difftest.CaseSpec{Kernel: KernelName, Family: fi.Name, Name: "c", Params: map[string]any{k: []any{"?"}}}
			err := CheckSpec(spec)
			if err == nil {
				t.Fatalf("family %s, %s = [\"?\"]: CheckSpec succeeded", fi.Name, k)
			}
			read := !strings.Contains(err.Error(), "unknown param")
			if read != described[k] {
				t.Errorf("family %s param %q: plan reads it = %v, described = %v (error: %v)", fi.Name, k, read, described[k], err)
			}
		}
	}
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
