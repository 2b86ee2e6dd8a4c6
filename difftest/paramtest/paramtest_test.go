package paramtest

import (
	"slices"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
	"github.com/kerneldiff/kerneldiff/internal/tbrecord"
)

func TestSourceParamKeys(t *testing.T) {
	got, err := SourceParamKeys("testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	// "N" once although read twice; "skip" is not a reader's key; the
	// non-literal key and the _test.go file's key are not seen.
	want := []string{"N", "preset", "runs"}
	if !slices.Equal(got, want) {
		t.Errorf("SourceParamKeys = %q, want %q", got, want)
	}
}

func TestSourceParamKeysMissingDir(t *testing.T) {
	got, err := SourceParamKeys("testdata/none")
	if err != nil || len(got) != 0 {
		t.Errorf("SourceParamKeys(missing dir) = %q, %v; want no keys, no error", got, err)
	}
}

// described is fake_scatter with its families described: ramp (n
// required) and random (nothing required).
type described struct{ fakekernel.Kernel }

func (described) DescribeFamilies() []difftest.FamilyInfo {
	return []difftest.FamilyInfo{
		{Name: "ramp", Doc: "x = 1, 2, …", Params: []difftest.ParamInfo{{Name: "n", Doc: "elements", Required: true}}},
		{Name: "random", Doc: "random x", Params: []difftest.ParamInfo{{Name: "n", Doc: "elements"}, {Name: "slots", Doc: "cache slots"}}},
	}
}

// CheckFamilyDocs passes the tables the description follows and names
// each family and param that departs from them; a kernel without a
// description fails at once.
func TestCheckFamilyDocs(t *testing.T) {
	docs := map[string]string{"ramp": "x = 1, 2, …", "random": "random x"}
	doc := func(f string) string { return docs[f] }
	required := func(f, p string) bool { return f == "ramp" && p == "n" }
	if r := tbrecord.Run(t, func(tb testing.TB) { CheckFamilyDocs(tb, described{}, doc, required) }); len(r.Errs) != 0 {
		t.Errorf("the tables it follows: %q", r.Errs)
	}
	docs["random"] = "drawn x"
	never := func(string, string) bool { return false }
	r := tbrecord.Run(t, func(tb testing.TB) { CheckFamilyDocs(tb, described{}, doc, never) })
	want := []string{`family ramp param n: required = true, want false`, `family random: doc "random x", want "drawn x"`}
	if !slices.Equal(r.Errs, want) || r.Stopped {
		t.Errorf("errors %q, want %q", r.Errs, want)
	}
	r = tbrecord.Run(t, func(tb testing.TB) { CheckFamilyDocs(tb, fakekernel.Kernel{}, doc, required) })
	if !r.Stopped || !slices.Equal(r.Errs, []string{"fake_scatter does not describe its families"}) {
		t.Errorf("no description: %q", r.Errs)
	}
}
