package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/kernels/topk"
)

func TestListFamilies(t *testing.T) {
	code, stdout, stderr := run(t, "list", "families")
	if code != 0 {
		t.Fatalf("list families: exit %d\n%s", code, stderr)
	}
	lines := strings.Split(stdout, "\n")
	find := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimLeft(l, " "), prefix) {
				return i
			}
		}
		t.Errorf("no line starting %q in\n%s", prefix, stdout)
		return -1
	}
	if find("topk_transform") < 0 {
		return
	}
	for _, f := range topk.Families() {
		find(f + " ")
	}
	find("K (required)")
	find("lengths (required)")
	// lowcontrast's own param follows its family line, before the next family.
	if i, j := find("lowcontrast "), find("span "); i < 0 || j != i+1 {
		t.Errorf("span at line %d, want right after lowcontrast (line %d)\n%s", j, i, stdout)
	}
	if strings.Contains(stdout, "P (required)") {
		t.Errorf("P is optional (default 64)\n%s", stdout)
	}
}

// TestCommonParams checks the factoring of the params: a param every
// family has goes to the common block with its most frequent description;
// a family's differing description and its own params stay with it.
func TestCommonParams(t *testing.T) {
	k := difftest.ParamInfo{Name: "K", Doc: "picks", Required: true}
	n1 := difftest.ParamInfo{Name: "n", Doc: "default 1"}
	n2 := difftest.ParamInfo{Name: "n", Doc: "default 2"}
	own := difftest.ParamInfo{Name: "own", Doc: "only b"}
	tests := []struct {
		name  string
		infos []difftest.FamilyInfo
		want  []difftest.ParamInfo
	}{
		{"none", nil, nil},
		{"one family: all common", []difftest.FamilyInfo{{Name: "a", Params: []difftest.ParamInfo{k, n1}}}, []difftest.ParamInfo{k, n1}},
		{"param of one family only stays out", []difftest.FamilyInfo{
			{Name: "a", Params: []difftest.ParamInfo{k}},
			{Name: "b", Params: []difftest.ParamInfo{k, own}},
		}, []difftest.ParamInfo{k}},
		{"majority description wins", []difftest.FamilyInfo{
			{Name: "a", Params: []difftest.ParamInfo{k, n2}},
			{Name: "b", Params: []difftest.ParamInfo{k, n1}},
			{Name: "c", Params: []difftest.ParamInfo{n1, k}},
		}, []difftest.ParamInfo{k, n1}},
		{"tie: first seen", []difftest.FamilyInfo{
			{Name: "a", Params: []difftest.ParamInfo{n2}},
			{Name: "b", Params: []difftest.ParamInfo{n1}},
		}, []difftest.ParamInfo{n2}},
	}
	for _, tc := range tests {
		if got := commonParams(tc.infos); !slices.Equal(got, tc.want) {
			t.Errorf("%s: commonParams = %v, want %v", tc.name, got, tc.want)
		}
	}
}
