package suite

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
)

const goodSuite = fakekernel.SuiteTOML

func TestParseSuite(t *testing.T) {
	cases, err := ParseSuite("good.toml", []byte(goodSuite))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 2 || cases[1].Spec.ID() != "fake_scatter/random-64" || cases[1].Spec.Params["slots"] != int64(80) {
		t.Fatalf("parsed %+v", cases)
	}
}

func TestParseSuiteErrors(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"syntax", "[[case]]\nkernel = \"fake_scatter\nfamily = 1\n", "suite bad.toml: line 2:"},
		{"unknown key", "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"a\"\nseed = 3\n", `suite bad.toml: unknown key "case.seed"`},
		{"unknown kernel", "[[case]]\nkernel = \"topk\"\nfamily = \"ramp\"\nname = \"a\"\n", `suite bad.toml: case topk/a: unknown kernel "topk"`},
		{"unknown family", "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"gauss\"\nname = \"a\"\n", `suite bad.toml: case fake_scatter/a: unknown fake_scatter family "gauss" (known: ramp, random)`},
		{"misspelt family", "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"rnadom\"\nname = \"a\"\n", `suite bad.toml: case fake_scatter/a: unknown fake_scatter family "rnadom" (did you mean "random"? known: ramp, random)`},
		{"duplicate", "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"a\"\n[[case]]\nkernel = \"fake_scatter\"\nfamily = \"random\"\nname = \"a\"\n", "suite bad.toml: case fake_scatter/a: duplicate case name"},
		{"no name", "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\n", "suite bad.toml: case #1: kernel and name are required"},
		{"space in name", "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"a b\"\n", "suite bad.toml: case fake_scatter/a b: name must not contain spaces or control characters"},
		{"empty", "# nothing\n", "suite bad.toml: no [[case]] entries"},
		{"wrong type", "[[case]]\nkernel = 3\n", "suite bad.toml:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSuite("bad.toml", []byte(tt.text))
			var se *difftest.SuiteError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *SuiteError", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %q, want prefix %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("err is not one line: %q", err)
			}
			if difftest.ExitCode(difftest.Summary{}, err) != difftest.ExitUsage {
				t.Errorf("exit code %d, want 2", difftest.ExitCode(difftest.Summary{}, err))
			}
		})
	}
}

func TestLoadSuiteFS(t *testing.T) {
	fsys := fstest.MapFS{
		"quick/a.toml": {Data: []byte(goodSuite)},
		"dup/a.toml":   {Data: []byte(goodSuite)},
		"dup/b.toml":   {Data: []byte("[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"ramp-8\"\n")},
	}
	s, err := LoadSuiteFS(fsys, "quick")
	if err != nil || len(s.Cases) != 2 || s.Cases[0].File != "quick/a.toml" {
		t.Fatalf("LoadSuiteFS(quick) = %+v, %v", s, err)
	}
	if _, err := LoadSuiteFS(fsys, "dup"); err == nil || err.Error() != "suite dup/b.toml: case fake_scatter/ramp-8: duplicate case name (also in dup/a.toml)" {
		t.Errorf("duplicate across files: %v", err)
	}
	if _, err := LoadSuiteFS(fsys, "nightly"); err == nil || err.Error() != "suite nightly: no such suite (suites: dup, quick)" {
		t.Errorf("unknown suite: %v", err)
	}
}

// A parameter the kernel does not know is found when the case is drawn,
// and names the file and case (exit 2); a generator that draws inputs its
// own contract rejects is a harness error (exit 125).
func TestGenerateCaseErrors(t *testing.T) {
	spec := func(params map[string]any) difftest.Item {
		return difftest.Item{Seed: 1, SuiteCase: difftest.SuiteCase{File: "x.toml", Spec: difftest.CaseSpec{Kernel: fakekernel.Name, Family: "ramp", Name: "a", Params: params}}}
	}
	if _, c, err := difftest.GenerateCase(spec(map[string]any{"n": int64(4)})); err != nil || c.Input("x").I32(3) != 4 {
		t.Fatalf("GenerateCase: %v", err)
	}
	_, _, err := difftest.GenerateCase(spec(map[string]any{"n": int64(4), "lenght": int64(3)}))
	if err == nil || err.Error() != `suite x.toml: case fake_scatter/a: unknown param(s) lenght` {
		t.Errorf("unknown param: %v", err)
	}
	_, _, err = difftest.GenerateCase(spec(map[string]any{"n": int64(4), "invalid": true}))
	if err == nil || !strings.Contains(err.Error(), "the generator drew inputs its own contract rejects (seed 1): invalid input: out_loc[0]: must be −1 or in [0, 4), got 4") || difftest.ExitCode(difftest.Summary{}, err) != difftest.ExitUntestable {
		t.Errorf("invalid generated case: %v", err)
	}
}

func TestGenerateCaseIsSeeded(t *testing.T) {
	it := difftest.Item{Seed: 7, SuiteCase: difftest.SuiteCase{Spec: difftest.CaseSpec{Kernel: fakekernel.Name, Family: "random", Name: "r", Params: map[string]any{"n": int64(32)}}}}
	_, a, _ := difftest.GenerateCase(it)
	_, b, _ := difftest.GenerateCase(it)
	it.Seed = 8
	_, c, _ := difftest.GenerateCase(it)
	if difftest.InputDigest(a) != difftest.InputDigest(b) {
		t.Error("same seed and id gave different inputs")
	}
	if difftest.InputDigest(a) == difftest.InputDigest(c) {
		t.Error("seeds 7 and 8 gave the same inputs")
	}
}

func TestItemsShardsAndRun(t *testing.T) {
	var s difftest.Suite
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		s.Cases = append(s.Cases, difftest.SuiteCase{Spec: difftest.CaseSpec{Kernel: "k", Name: n}})
	}
	all := s.Items(difftest.Selection{Seed: 3, Repeat: 2})
	if len(all) != 10 || all[5].Seed != 4 || all[5].Index != 5 || all[5].Spec.Name != "a" {
		t.Fatalf("items %+v", all)
	}
	seen := map[int]int{}
	for i := 0; i < 3; i++ {
		for _, it := range s.Items(difftest.Selection{Seed: 3, Repeat: 2, Shard: difftest.Shard{I: i, N: 3}}) {
			seen[it.Index]++
		}
	}
	for i := 0; i < 10; i++ {
		if seen[i] != 1 {
			t.Errorf("index %d in %d shards, want exactly 1", i, seen[i])
		}
	}
	sel := s.Items(difftest.Selection{Seed: 1, Run: regexp.MustCompile(`/[bd]$`)})
	if len(sel) != 2 || sel[0].Spec.Name != "b" || sel[1].Index != 3 {
		t.Errorf("--run selection %+v", sel)
	}
}

func TestParseShard(t *testing.T) {
	for _, ok := range []string{"0/1", "2/4"} {
		if _, err := difftest.ParseShard(ok); err != nil {
			t.Errorf("ParseShard(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"4/4", "1/0", "-1/2", "1", "1/2x", " 1/2"} {
		if _, err := difftest.ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
}

// TestFakeSuiteParses: fakekernel.Suite, the suite the harness's tests
// run, is what ParseSuite makes of its file (SuiteTOML and random-5).
func TestFakeSuiteParses(t *testing.T) {
	cases, err := ParseSuite("fake.toml", []byte(fakekernel.SuiteTOML+`
[[case]]
kernel = "fake_scatter"
family = "random"
name = "random-5"
[case.params]
n = 5
`))
	if err != nil {
		t.Fatal(err)
	}
	if want := fakekernel.Suite().Cases; !reflect.DeepEqual(cases, want) {
		t.Errorf("ParseSuite gives\n%+v\nfakekernel.Suite has\n%+v", cases, want)
	}
}
