// Package paramtest holds test helpers for kernel packages: it lets a
// kernel's tests check that what it documents about its suite parameters
// (difftest.FamilyDescriber) matches what its parser reads (CheckFamilies
// is the whole check, written once for every kernel).
package paramtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
)

// readers are the difftest.Params methods whose first argument is a key.
var readers = map[string]bool{"Int": true, "Ints": true, "Float": true, "Bool": true, "String": true, "Tables": true}

// SourceParamKeys returns, sorted and without repeats, every string-literal
// key passed as the first argument of a difftest.Params reader (Int, Ints,
// Float, Bool, String, Tables) in the non-test Go files of dir. A key built at run
// time is not seen. Errors are those of listing or parsing the files.
func SourceParamKeys(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var keys []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, err
		}
		var bad error
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !readers[sel.Sel.Name] {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			k, err := strconv.Unquote(lit.Value)
			if err != nil && bad == nil {
				bad = fmt.Errorf("%s: %v", fset.Position(lit.Pos()), err)
			}
			if err == nil && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
			return true
		})
		if bad != nil {
			return nil, bad
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// CheckFamilies checks a kernel's family documentation
// (difftest.FamilyDescriber) against the kernel: the described families are
// k.Families() in that order, each family's doc and each param's doc is
// one non-empty line, no param is described twice, every described param
// is read somewhere in the kernel's source folder dir (SourceParamKeys,
// at least minKeys keys found), and, for every key the source reads and
// every one of unknown (keys of other kernels), a mistyped value (["?"])
// is a type error of a read key exactly when the key is described for the
// family, and the "unknown param" error otherwise. The case is checked with
// the kernel's CheckSpec where it has one, else drawn with NewCase.
func CheckFamilies(t testing.TB, k difftest.Kernel, dir string, minKeys int, unknown ...string) {
	t.Helper()
	fd, ok := k.(difftest.FamilyDescriber)
	if !ok {
		t.Fatalf("%s does not describe its families", k.Name())
	}
	keys, err := SourceParamKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < minKeys {
		t.Fatalf("found only %d param keys in the source: %v", len(keys), keys)
	}
	check := func(spec difftest.CaseSpec) error {
		if sc, ok := k.(difftest.SpecChecker); ok {
			return sc.CheckSpec(spec)
		}
		_, err := k.NewCase(spec, 1, 1)
		return err
	}
	var names []string
	for _, fi := range fd.DescribeFamilies() {
		names = append(names, fi.Name)
		if fi.Doc == "" || strings.Contains(fi.Doc, "\n") {
			t.Errorf("family %s: doc must be one non-empty line, got %q", fi.Name, fi.Doc)
		}
		described := map[string]bool{}
		for _, p := range fi.Params {
			if described[p.Name] {
				t.Errorf("family %s: param %s described twice", fi.Name, p.Name)
			}
			described[p.Name] = true
			if p.Doc == "" || strings.Contains(p.Doc, "\n") {
				t.Errorf("family %s param %s: doc must be one non-empty line, got %q", fi.Name, p.Name, p.Doc)
			}
			if !slices.Contains(keys, p.Name) {
				t.Errorf("family %s: param %q is described but the source never reads it", fi.Name, p.Name)
			}
		}
		for _, key := range append(slices.Clone(keys), unknown...) {
			spec := difftest.CaseSpec{Kernel: k.Name(), Family: fi.Name, Name: "c", Params: map[string]any{key: []any{"?"}}}
			err := check(spec)
			if err == nil {
				t.Fatalf("family %s, %s = [\"?\"]: accepted", fi.Name, key)
			}
			read := !strings.Contains(err.Error(), "unknown param")
			if read != described[key] {
				t.Errorf("family %s param %q: the parser reads it = %v, described = %v (error: %v)", fi.Name, key, read, described[key], err)
			}
		}
	}
	if !slices.Equal(names, k.Families()) {
		t.Errorf("described families %v, want Families() %v", names, k.Families())
	}
}

// CheckFamilyDocs checks the families k describes (difftest.FamilyDescriber)
// against the kernel's own tables: each family's doc is doc(family), and
// each param is marked Required exactly when required(family, param).
func CheckFamilyDocs(t testing.TB, k difftest.Kernel, doc func(family string) string, required func(family, param string) bool) {
	t.Helper()
	fd, ok := k.(difftest.FamilyDescriber)
	if !ok {
		t.Fatalf("%s does not describe its families", k.Name())
	}
	for _, fi := range fd.DescribeFamilies() {
		if want := doc(fi.Name); fi.Doc != want {
			t.Errorf("family %s: doc %q, want %q", fi.Name, fi.Doc, want)
		}
		for _, p := range fi.Params {
			if want := required(fi.Name, p.Name); p.Required != want {
				t.Errorf("family %s param %s: required = %v, want %v", fi.Name, p.Name, p.Required, want)
			}
		}
	}
}

// SuiteSpecs reads one kernel's file of an embedded suite,
// fixtures/suites/SUITE/FILE (path from the kernel's folder, as its tests
// run), with the harness's parser (suite.ParseSuite: [case.matrix]
// tables come back expanded, in suite order; unknown keys and duplicate
// names are errors), and checks that it holds cases, all of kernel.
func SuiteSpecs(t testing.TB, suite, file, kernel string) []difftest.CaseSpec {
	t.Helper()
	return suiteSpecs(t, suite, file, kernel, true)
}

// KernelSpecs is SuiteSpecs for a file shared by several kernels (such as
// v41.toml, the DeepSeek-V4.1 formats): it returns kernel's cases, in
// suite order, skips the others, and fails when kernel has none there.
func KernelSpecs(t testing.TB, suite, file, kernel string) []difftest.CaseSpec {
	t.Helper()
	return suiteSpecs(t, suite, file, kernel, false)
}

func suiteSpecs(t testing.TB, suiteName, file, kernel string, only bool) []difftest.CaseSpec {
	t.Helper()
	path := filepath.Join("..", "..", "fixtures", "suites", suiteName, file)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := suite.ParseSuite(path, raw)
	if err != nil {
		t.Fatal(err)
	}
	var specs []difftest.CaseSpec
	for _, sc := range cases {
		if sc.Spec.Kernel != kernel {
			if only {
				t.Fatalf("%s: case %q: kernel %q, want %q", path, sc.Spec.Name, sc.Spec.Kernel, kernel)
			}
			continue
		}
		specs = append(specs, sc.Spec)
	}
	if len(specs) == 0 {
		t.Fatalf("%s: no %s cases", path, kernel)
	}
	return specs
}

// InputDigests draws each of specs with k at seed 7 (key
// rng.CaseKey(7, spec ID)) and lists every input's digest, one line
// "NAME TENSOR DIGEST" each in order, for a kernel's golden file of input
// digests (a changed line is a generator change).
func InputDigests(t testing.TB, k difftest.Kernel, specs []difftest.CaseSpec) string {
	t.Helper()
	var b strings.Builder
	for _, spec := range specs {
		c, err := k.NewCase(spec, 7, rng.CaseKey(7, spec.ID()))
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range c.Inputs {
			fmt.Fprintf(&b, "%s %s %x\n", spec.Name, in.Name, in.Digest())
		}
	}
	return b.String()
}
