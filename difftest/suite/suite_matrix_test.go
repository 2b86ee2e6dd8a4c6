package suite

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// ids returns the case ids of cases, in order.
func ids(cases []difftest.SuiteCase) []string {
	var out []string
	for _, c := range cases {
		out = append(out, c.Spec.ID())
	}
	return out
}

// A matrix expands into the cartesian product of its lists, the first
// key outermost, at the place of its [[case]] in the file; each case gets
// the scalar params and one value of every list, and its name from the
// template.
func TestParseSuiteMatrix(t *testing.T) {
	const text = `
[[case]]
kernel = "fake_scatter"
family = "ramp"
name = "first"

[[case]]
kernel = "fake_scatter"
name = "{family}-n{n}-s{slots}"
[case.params]
slots = 32
[case.matrix]
family = ["ramp", "random"]
n = [8, 16, 4]

[[case]]
kernel = "fake_scatter"
family = "ramp"
name = "last"
`
	cases, err := ParseSuite("m.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"fake_scatter/first",
		"fake_scatter/ramp-n8-s32", "fake_scatter/ramp-n16-s32", "fake_scatter/ramp-n4-s32",
		"fake_scatter/random-n8-s32", "fake_scatter/random-n16-s32", "fake_scatter/random-n4-s32",
		"fake_scatter/last",
	}
	if got := ids(cases); !reflect.DeepEqual(got, want) {
		t.Fatalf("ids:\n got %q\nwant %q", got, want)
	}
	c := cases[5] // random-n16-s32
	if c.Spec.Family != "random" || !reflect.DeepEqual(c.Spec.Params, map[string]any{"n": int64(16), "slots": int64(32)}) || c.File != "m.toml" {
		t.Errorf("case 5 = %+v", c)
	}
	// Each case has its own params map: a kernel that edits one cannot
	// change another.
	cases[1].Spec.Params["n"] = int64(99)
	if cases[2].Spec.Params["n"] != int64(16) {
		t.Error("expanded cases share their params map")
	}
}

// A matrix gives exactly the cases written out by hand: kernel, family,
// name, params and their Go types (the input digests depend on them).
func TestParseSuiteMatrixEqualsWrittenOut(t *testing.T) {
	const matrix = `
[[case]]
kernel = "fake_scatter"
family = "random"
name = "r/{size}/invalid={invalid}"
[case.matrix]
size = [{name = "small", n = 4, slots = 4}, {name = "wide", n = 8, slots = 64}, {name = "default", n = 16}]
invalid = [false, true]
`
	const written = `
[[case]]
kernel = "fake_scatter"
family = "random"
name = "r/small/invalid=false"
[case.params]
n = 4
slots = 4
invalid = false
[[case]]
kernel = "fake_scatter"
family = "random"
name = "r/small/invalid=true"
[case.params]
n = 4
slots = 4
invalid = true
[[case]]
kernel = "fake_scatter"
family = "random"
name = "r/wide/invalid=false"
[case.params]
n = 8
slots = 64
invalid = false
[[case]]
kernel = "fake_scatter"
family = "random"
name = "r/wide/invalid=true"
[case.params]
n = 8
slots = 64
invalid = true
[[case]]
kernel = "fake_scatter"
family = "random"
name = "r/default/invalid=false"
[case.params]
n = 16
invalid = false
[[case]]
kernel = "fake_scatter"
family = "random"
name = "r/default/invalid=true"
[case.params]
n = 16
invalid = true
`
	m, err := ParseSuite("s.toml", []byte(matrix))
	if err != nil {
		t.Fatal(err)
	}
	w, err := ParseSuite("s.toml", []byte(written))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m, w) {
		t.Errorf("matrix gave\n%+v\nwritten out:\n%+v", m, w)
	}
}

// The axis order is the order the file writes the keys in, whichever
// TOML form holds them.
func TestParseSuiteMatrixOrderForms(t *testing.T) {
	tests := []struct{ name, text string }{
		{"inline table", "[[case]]\nkernel = \"fake_scatter\"\nname = \"{n}-{family}\"\nmatrix = {n = [1, 2], family = [\"ramp\", \"random\"]}\n"},
		{"dotted keys", "[[case]]\nkernel = \"fake_scatter\"\nname = \"{n}-{family}\"\nmatrix.n = [1, 2]\nmatrix.family = [\"ramp\", \"random\"]\n"},
		{"inline array of tables", "case = [{kernel = \"fake_scatter\", family = \"ramp\", name = \"x\"}, {kernel = \"fake_scatter\", name = \"{n}-{family}\", matrix = {n = [1, 2], family = [\"ramp\", \"random\"]}}]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cases, err := ParseSuite("o.toml", []byte(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			got := ids(cases)
			if got[0] == "fake_scatter/x" {
				got = got[1:]
			}
			want := []string{"fake_scatter/1-ramp", "fake_scatter/1-random", "fake_scatter/2-ramp", "fake_scatter/2-random"}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ids %q, want %q", got, want)
			}
		})
	}
}

// How values are written into names, and the entries of tables.
func TestExpandEntryNames(t *testing.T) {
	e := suiteEntry{
		Kernel: "k", Family: "f", Name: "l{lengths}-e{eps}-{on}-{s}-{v}",
		Params: map[string]any{"eps": 1e-06, "on": true, "s": "neox"},
		Matrix: map[string]any{
			"lengths": []any{[]any{int64(1000)}, []any{int64(4500), int64(10)}},
			"v":       []any{map[string]any{"name": "v4/ue8m0", "preset": "v4", "scale_fmt": "ue8m0"}},
		},
	}
	got, err := expandEntry(e, []string{"lengths", "v"}, MaxSuiteCases)
	if err != nil {
		t.Fatal(err)
	}
	want := []expandedCase{
		{spec: difftest.CaseSpec{Kernel: "k", Family: "f", Name: "l1000-e1e-06-true-neox-v4/ue8m0", Params: map[string]any{
			"eps": 1e-06, "on": true, "s": "neox", "lengths": []any{int64(1000)}, "preset": "v4", "scale_fmt": "ue8m0"}},
			combo: `lengths = [1000], v "v4/ue8m0"`},
		{spec: difftest.CaseSpec{Kernel: "k", Family: "f", Name: "l4500,10-e1e-06-true-neox-v4/ue8m0", Params: map[string]any{
			"eps": 1e-06, "on": true, "s": "neox", "lengths": []any{int64(4500), int64(10)}, "preset": "v4", "scale_fmt": "ue8m0"}},
			combo: `lengths = [4500, 10], v "v4/ue8m0"`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("expandEntry:\n got %+v\nwant %+v", got, want)
	}
}

// Every matrix and template error is one line naming the file, the case
// as written and the rule, wraps ErrMatrix, and exits 2; errors found
// after the expansion name the expanded case.
func TestParseSuiteMatrixErrors(t *testing.T) {
	const head = "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\n"
	tests := []struct {
		name, text, want string
		matrix           bool // wraps ErrMatrix
	}{
		// Name templates.
		{"unknown template key", head + "name = \"r-{N}\"\n[case.matrix]\nn = [1, 2]\n",
			`suite bad.toml: case fake_scatter/r-{N}: matrix: name "r-{N}": unknown template key {N} (keys: family, n)`, true},
		{"unknown template key without a matrix", head + "name = \"r-{n}\"\n",
			`suite bad.toml: case fake_scatter/r-{n}: matrix: name "r-{n}": unknown template key {n} (keys: family)`, true},
		{"unclosed brace", head + "name = \"r-{n\"\n[case.matrix]\nn = [1]\n",
			`suite bad.toml: case fake_scatter/r-{n: matrix: name "r-{n": a "{" without its "}" (braces in a name are template keys, e.g. {K})`, true},
		{"stray closing brace", head + "name = \"r-n}\"\n",
			`suite bad.toml: case fake_scatter/r-n}: matrix: name "r-n}": a "}" without its "{" (braces in a name are template keys, e.g. {K})`, true},
		{"empty braces", head + "name = \"r-{}\"\n[case.matrix]\nn = [1]\n",
			`suite bad.toml: case fake_scatter/r-{}: matrix: name "r-{}": "{}" is not a template key (write {KEY}, KEY a parameter, family, or a matrix key of tables)`, true},
		{"table in a name", head + "name = \"r-{n}\"\n[case.params]\nn = {a = 1}\n",
			`suite bad.toml: case fake_scatter/r-{n}: matrix: name "r-{n}": {n} is {a = 1}, which cannot be written into a name`, true},
		// Lists.
		{"empty list", head + "name = \"r-{n}\"\n[case.matrix]\nn = []\n",
			`suite bad.toml: case fake_scatter/r-{n}: matrix: n: the list is empty; give at least one value`, true},
		{"not a list", head + "name = \"r-{n}\"\n[case.matrix]\nn = 5\n",
			`suite bad.toml: case fake_scatter/r-{n}: matrix: n: want a list of values, got 5 (write n = [5] for one value)`, true},
		{"a table, not a list", head + "name = \"r-{n}\"\n[case.matrix.n]\nx = 1\n",
			`suite bad.toml: case fake_scatter/r-{n}: matrix: n: want a list of values, got a table (write n = [value, …] or n = [{…}, …])`, true},
		{"empty matrix", head + "name = \"r\"\n[case.matrix]\n",
			`suite bad.toml: case fake_scatter/r: matrix: [case.matrix] is empty: give at least one key with a list of values, or leave the table out`, true},
		{"mixed list", head + "name = \"r-{s}\"\n[case.matrix]\ns = [{n = 1}, 2]\n",
			`suite bad.toml: case fake_scatter/r-{s}: matrix: s: value 2 is a plain value, value 1 a table; a list holds plain values or tables, not both`, true},
		{"empty entry", head + "name = \"r-{s}\"\n[case.matrix]\ns = [{}]\n",
			`suite bad.toml: case fake_scatter/r-{s}: matrix: s: entry 1 is an empty table; an entry sets at least one parameter`, true},
		{"entry with only a name", head + "name = \"r-{s}\"\n[case.matrix]\ns = [{name = \"a\"}]\n",
			`suite bad.toml: case fake_scatter/r-{s}: matrix: s: entry 1 has only a name; an entry sets at least one parameter`, true},
		{"entry name not a string", head + "name = \"r-{s}\"\n[case.matrix]\ns = [{name = 3, n = 1}]\n",
			`suite bad.toml: case fake_scatter/r-{s}: matrix: s: entry 1: name must be a non-empty string, got 3`, true},
		{"too many combinations", head + "name = \"r-{a}{b}{c}{d}{e}\"\n[case.matrix]\na = [0,1,2,3,4,5,6,7,8,9]\nb = [0,1,2,3,4,5,6,7,8,9]\nc = [0,1,2,3,4,5,6,7,8,9]\nd = [0,1,2,3,4,5,6,7,8,9]\ne = [0,1,2,3,4,5,6,7,8,9]\n",
			`suite bad.toml: case fake_scatter/r-{a}{b}{c}{d}{e}: matrix: more than 10000 combinations (MaxMatrixCases); split the case`, true},
		// One setting, one place.
		{"matrix key also a param", head + "name = \"r-{n}\"\n[case.params]\nn = 8\n[case.matrix]\nn = [1, 2]\n",
			`suite bad.toml: case fake_scatter/r-{n}: matrix: n: param n is also given in [case.params]; give each parameter in one place`, true},
		{"entry key also a param", head + "name = \"r-{s}\"\n[case.params]\nn = 8\n[case.matrix]\ns = [{name = \"a\", n = 1}]\n",
			`suite bad.toml: case fake_scatter/r-{s}: matrix: s: param n is also given in [case.params]; give each parameter in one place`, true},
		{"family twice", head + "name = \"r-{family}\"\n[case.matrix]\nfamily = [\"ramp\", \"random\"]\n",
			`suite bad.toml: case fake_scatter/r-{family}: matrix: family: family is also given as the case's family "ramp"; give it in one place`, true},
		{"two keys set one param", head + "name = \"r-{n}-{s}\"\n[case.matrix]\nn = [1, 2]\ns = [{name = \"a\", n = 3}]\n",
			`suite bad.toml: case fake_scatter/r-{n}-{s}: matrix: s: param n is also set by matrix key n; each setting comes from one key`, true},
		{"case key as a matrix key", head + "name = \"r\"\n[case.matrix]\nname = [\"a\", \"b\"]\n",
			`suite bad.toml: case fake_scatter/r: matrix: name: "name" is a key of the case itself, not a parameter; only parameters and family take a list`, true},
		{"case key in an entry", head + "name = \"r\"\n[case.matrix]\ns = [{kernel = \"x\"}]\n",
			`suite bad.toml: case fake_scatter/r: matrix: s: "kernel" in a matrix entry is a key of the case itself, not a parameter`, true},
		{"family not a string", "[[case]]\nkernel = \"fake_scatter\"\nname = \"r-{family}\"\n[case.matrix]\nfamily = [1]\n",
			`suite bad.toml: case fake_scatter/r-{family}: matrix: family: value 1 must be a string, got 1`, true},
		// Labels of tables.
		{"named entries, no key in the name", head + "name = \"r-{n}\"\n[case.matrix]\ns = [{name = \"a\", n = 1}, {name = \"b\", n = 2}]\n",
			`suite bad.toml: case fake_scatter/r-{n}: matrix: s: its entries have names, but the case name has no {s}`, true},
		{"some entries named", head + "name = \"r-{n}\"\n[case.matrix]\ns = [{name = \"a\", n = 1}, {n = 2}]\n",
			`suite bad.toml: case fake_scatter/r-{n}: matrix: s: entry 2 has no name; name every entry of the list or none`, true},
		{"unnamed tables, key in the name", head + "name = \"r-{s}\"\n[case.matrix]\ns = [{n = 1}, {n = 2}]\n",
			`suite bad.toml: case fake_scatter/r-{s}: matrix: name "r-{s}": unknown template key {s} (keys: family, n)`, true},
		// Found on the expanded cases.
		{"duplicate ids", head + "name = \"r\"\n[case.matrix]\nn = [1, 2]\n",
			`suite bad.toml: case fake_scatter/r: duplicate case name ([case.matrix] n = 1 and [case.matrix] n = 2 give it: the name template must tell every combination apart)`, false},
		{"duplicate of a written case", head + "name = \"r2\"\n" + head + "name = \"r{n}\"\n[case.matrix]\nn = [1, 2]\n",
			`suite bad.toml: case fake_scatter/r2: duplicate case name (a [[case]] written out and [case.matrix] n = 2 give it: the name template must tell every combination apart)`, false},
		{"space in a rendered name", head + "name = \"r-{s}\"\n[case.params]\ns = \"a b\"\n",
			`suite bad.toml: case fake_scatter/r-a b: name must not contain spaces or control characters`, false},
		{"unknown family from the matrix", "[[case]]\nkernel = \"fake_scatter\"\nname = \"r-{family}\"\n[case.matrix]\nfamily = [\"ramp\", \"gauss\"]\n",
			`suite bad.toml: case fake_scatter/r-gauss: unknown fake_scatter family "gauss" (known: ramp, random)`, false},
		{"bad param of one combination", head + "name = \"r-{n}\"\n[case.matrix]\nn = [8, \"eight\"]\n",
			`suite bad.toml: case fake_scatter/r-eight: param "n": must be an integer, got the string "eight"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cases, err := ParseSuite("bad.toml", []byte(tt.text))
			var se *difftest.SuiteError
			if !errors.As(err, &se) {
				t.Fatalf("ParseSuite = %d cases, %v; want a *SuiteError", len(cases), err)
			}
			if err.Error() != tt.want {
				t.Errorf("err  %s\nwant %s", err, tt.want)
			}
			if errors.Is(err, ErrMatrix) != tt.matrix {
				t.Errorf("errors.Is(err, ErrMatrix) = %v, want %v", !tt.matrix, tt.matrix)
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

// A matrix of the largest allowed size expands quickly, and one more
// value is refused before anything is built.
func TestParseSuiteMatrixBound(t *testing.T) {
	// 100 × 100 = MaxMatrixCases: accepted, in order.
	var ns, ss []string
	for i := range 100 {
		ns = append(ns, strconv.Itoa(i))
		ss = append(ss, strconv.Itoa(100+i))
	}
	text := "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"r-{n}-{slots}\"\n[case.matrix]\n" +
		"n = [" + strings.Join(ns, ", ") + "]\nslots = [" + strings.Join(ss, ", ") + "]\n"
	start := time.Now()
	cases, err := ParseSuite("big.toml", []byte(text))
	if err != nil || len(cases) != MaxMatrixCases || cases[101].Spec.Name != "r-1-101" || cases[MaxMatrixCases-1].Spec.Name != "r-99-199" {
		t.Fatalf("ParseSuite(100×100) = %d cases, %v", len(cases), err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("ParseSuite(100×100) took %v", d)
	}
	// One value more is refused before any case is built.
	_, err = ParseSuite("big.toml", []byte(strings.Replace(text, "199]", "199, 200]", 1)))
	if !errors.Is(err, ErrMatrix) || !strings.Contains(err.Error(), "matrix: more than 10000 combinations (MaxMatrixCases)") {
		t.Errorf("ParseSuite(100×101) = %v", err)
	}
}

// {KEY} of a list of named tables is the entry's name, even where the
// entries also set a parameter KEY; a list of unnamed tables is not a
// template key itself, but the parameters it sets are.
func TestParseSuiteMatrixLabels(t *testing.T) {
	const text = `
[[case]]
kernel = "fake_scatter"
family = "random"
name = "{n}/{slots}"
[case.matrix]
n = [{name = "four", n = 4}, {name = "eight", n = 8, slots = 64}]
shape = [{slots = 16}]
`
	_, err := ParseSuite("l.toml", []byte(text))
	// slots is set by both n's second entry and shape.
	if err == nil || err.Error() != `suite l.toml: case fake_scatter/{n}/{slots}: matrix: shape: param slots is also set by matrix key n; each setting comes from one key` {
		t.Fatalf("ParseSuite = %v", err)
	}
	cases, err := ParseSuite("l.toml", []byte(strings.Replace(text, ", slots = 64", ", invalid = false", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(cases), []string{"fake_scatter/four/16", "fake_scatter/eight/16"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ids %q, want %q", got, want)
	}
	if p := cases[1].Spec.Params; !reflect.DeepEqual(p, map[string]any{"n": int64(8), "invalid": false, "slots": int64(16)}) {
		t.Errorf("params of eight/16: %v", p)
	}
}

// A file of many matrices stops at MaxSuiteCases cases in all, before the
// [[case]] that would pass it is expanded, within a second.
func TestParseSuiteMaxSuiteCases(t *testing.T) {
	var ns []string
	for i := range 100 {
		ns = append(ns, strconv.Itoa(i))
	}
	list := "[" + strings.Join(ns, ", ") + "]"
	var b strings.Builder
	for i := range 12 { // 12 × 10,000 > MaxSuiteCases
		fmt.Fprintf(&b, "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"f%d-{n}-{slots}\"\n[case.matrix]\nn = %s\nslots = %s\n", i, list, list)
	}
	start := time.Now()
	_, err := ParseSuite("many.toml", []byte(b.String()))
	want := "suite many.toml: case fake_scatter/f10-{n}-{slots}: matrix: the file expands into more than 100000 cases (MaxSuiteCases); this [[case]] alone gives 10000"
	if err == nil || err.Error() != want || !errors.Is(err, ErrMatrix) {
		t.Errorf("err  %v\nwant %s", err, want)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
	// A written-out case past the bound is refused too.
	e := suiteEntry{Kernel: "fake_scatter", Family: "ramp", Name: "one"}
	if _, err := expandEntry(e, nil, 0); err == nil || !strings.Contains(err.Error(), "more than 100000 cases (MaxSuiteCases)") {
		t.Errorf("expandEntry(budget 0) = %v", err)
	}
}

// A matrix that sets only the family gives cases without params, as
// written out; a duplicate from named tables names the entries.
func TestParseSuiteMatrixFamilyOnly(t *testing.T) {
	m, err := ParseSuite("f.toml", []byte("[[case]]\nkernel = \"fake_scatter\"\nname = \"{family}\"\n[case.matrix]\nfamily = [\"ramp\", \"random\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := ParseSuite("f.toml", []byte("[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"ramp\"\n[[case]]\nkernel = \"fake_scatter\"\nfamily = \"random\"\nname = \"random\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m, w) {
		t.Errorf("matrix %+v\nwritten %+v", m, w)
	}
	_, err = ParseSuite("f.toml", []byte("[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"x-{s}\"\n[case.matrix]\ns = [{name = \"a\", n = 1}, {name = \"a\", n = 2}]\n"))
	if want := `suite f.toml: case fake_scatter/x-a: duplicate case name ([case.matrix] s "a" and [case.matrix] s "a" give it: the name template must tell every combination apart)`; err == nil || err.Error() != want {
		t.Errorf("err  %v\nwant %s", err, want)
	}
}
