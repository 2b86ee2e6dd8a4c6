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
	infos := Kernel{}.DescribeFamilies()
	var names []string
	for _, fi := range infos {
		names = append(names, fi.Name)
		if fi.Doc == "" || strings.Contains(fi.Doc, "\n") {
			t.Errorf("family %s: doc must be one non-empty line, got %q", fi.Name, fi.Doc)
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
		}
	}
	if !slices.Equal(names, Families()) {
		t.Errorf("described families %v, want Families() %v", names, Families())
	}
	for name := range familyDocs {
		if !slices.Contains(Families(), name) {
			t.Errorf("familyDocs has %q, which is no family", name)
		}
	}
}

// TestDescribeFamiliesMatchesParser checks, for every family, that each
// key the parser reads anywhere is described for that family exactly when
// NewCase reads it there: a mistyped value of a read key is a type error
// naming it, of an unread key the "unknown param" error.
func TestDescribeFamiliesMatchesParser(t *testing.T) {
	keys := sourceParamKeys(t)
	if len(keys) < 7 {
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
		for _, k := range keys {
			spec := difftest.CaseSpec{Kernel: KernelName, Family: fi.Name, Name: "c", Params: map[string]any{k: []any{"?"}}}
			_, err := NewCase(spec, 1, 1)
			if err == nil {
				t.Fatalf("family %s, %s = [\"?\"]: NewCase succeeded", fi.Name, k)
			}
			read := !strings.Contains(err.Error(), "unknown param")
			if read != described[k] {
				t.Errorf("family %s param %q: NewCase reads it = %v, described = %v (error: %v)", fi.Name, k, read, described[k], err)
			}
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
