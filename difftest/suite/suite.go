// Suites: lists of cases in TOML files (docs/interfaces.md `--suite NAME|FILE`).
//
// A suite file holds an array of tables named "case":
//
//	[[case]]
//	kernel = "topk_transform"
//	family = "gaussian"
//	name   = "gaussian-b30-l8192"
//	[case.params]
//	batch = 30
//	lengths = [8191, 8192, 8193]
//
// A [[case]] with a [case.matrix] table stands for one case per
// combination of the matrix's lists, its name a template such as
// "needle-l{lengths}-k{K}" (suite_matrix.go).
//
// A named suite is every *.toml file in one folder of an fs.FS (the
// embedded fixtures/suites/NAME/), read in lexical order.

package suite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"unicode"

	"github.com/BurntSushi/toml"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

type suiteFile struct {
	Case []suiteEntry `toml:"case"`
}

// ParseSuite decodes one suite file and checks every case before any
// runs: its size and nesting (MaxSuiteBytes, MaxSuiteDepth, before the
// TOML parser sees it), the TOML syntax, the type of each value ([[case]]
// tables; kernel, family and name strings; params a table), no key other
// than kernel, family, name, params and matrix, then each [[case]]
// expanded into its cases (one, or one per combination of its
// [case.matrix] lists, first key outermost, with the name rendered from
// its template; see suite_matrix.go and fixtures/suites/README.md), then
// for every case a registered kernel, one of its families, a non-empty
// name without spaces (it may hold "/": "gaussian/v32/N=9"), no repeated
// case id within the file, and then, in file order, each case's
// parameters (CheckCaseSpec), so a typo in the last case of a long suite
// stops the run before its first case. The cases come back in file
// order, a matrix's combinations where its [[case]] stands. Every error
// is a *SuiteError naming the first offending case (for a matrix or
// template error, the case as written: kernel/name-template) and wrapping
// ErrMatrix for those.
func ParseSuite(file string, data []byte) ([]difftest.SuiteCase, error) {
	if err := checkSuiteBounds(data); err != nil {
		return nil, &difftest.SuiteError{File: file, Err: err}
	}
	var sf suiteFile
	md, err := toml.Decode(string(data), &sf)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &difftest.SuiteError{File: file, Err: fmt.Errorf("line %d: %s", pe.Position.Line, pe.Message)}
		}
		if serr := suiteSchemaError(data); serr != nil {
			err = serr // in the suite's terms, not Go's
		}
		return nil, &difftest.SuiteError{File: file, Err: err}
	}
	if err := suiteSchemaError(data); err != nil {
		return nil, &difftest.SuiteError{File: file, Err: err}
	}
	for _, key := range md.Undecoded() {
		// Keys under [case.params] are the kernel's to judge, those under
		// [case.matrix] expandEntry's.
		if len(key) >= 2 && key[0] == "case" && (key[1] == "params" || key[1] == "matrix") {
			continue
		}
		return nil, &difftest.SuiteError{File: file, Err: fmt.Errorf("unknown key %q (a case has kernel, family, name, [case.params] and [case.matrix])", key.String())}
	}
	if len(sf.Case) == 0 {
		return nil, &difftest.SuiteError{File: file, Err: errors.New("no [[case]] entries")}
	}
	orders, err := matrixOrders(md, sf.Case)
	if err != nil {
		return nil, &difftest.SuiteError{File: file, Err: err}
	}
	var specs []expandedCase
	for i, e := range sf.Case {
		if e.Name == "" || e.Kernel == "" {
			return nil, &difftest.SuiteError{File: file, Case: fmt.Sprintf("#%d", i+1), Err: errors.New("kernel and name are required")}
		}
		cases, err := expandEntry(e, orders[i], MaxSuiteCases-len(specs))
		if err != nil {
			return nil, &difftest.SuiteError{File: file, Case: e.Kernel + "/" + e.Name, Err: err}
		}
		specs = append(specs, cases...)
	}
	out := make([]difftest.SuiteCase, 0, len(specs))
	seen := map[string]string{} // case id → the matrix combination that gave it
	for _, ec := range specs {
		spec := ec.spec
		id := spec.ID()
		if strings.IndexFunc(spec.Name, unicode.IsSpace) >= 0 || strings.IndexFunc(spec.Name, unicode.IsControl) >= 0 {
			return nil, &difftest.SuiteError{File: file, Case: id, Err: errors.New("name must not contain spaces or control characters")}
		}
		k, ok := difftest.LookupKernel(spec.Kernel)
		if !ok {
			return nil, &difftest.SuiteError{File: file, Case: id, Err: errors.New(difftest.UnknownName("kernel", spec.Kernel, difftest.KernelNames()))}
		}
		if !contains(k.Families(), spec.Family) {
			return nil, &difftest.SuiteError{File: file, Case: id, Err: errors.New(difftest.UnknownName(spec.Kernel+" family", spec.Family, k.Families()))}
		}
		if prev, dup := seen[id]; dup {
			if prev != "" || ec.combo != "" {
				return nil, &difftest.SuiteError{File: file, Case: id, Err: fmt.Errorf("duplicate case name (%s and %s give it: the name template must tell every combination apart)", orWritten(prev), orWritten(ec.combo))}
			}
			return nil, &difftest.SuiteError{File: file, Case: id, Err: errors.New("duplicate case name")}
		}
		seen[id] = ec.combo
		out = append(out, difftest.SuiteCase{Spec: spec, File: file})
	}
	for _, sc := range out {
		k, _ := difftest.LookupKernel(sc.Spec.Kernel)
		if err := CheckCaseSpec(k, sc.Spec); err != nil {
			return nil, &difftest.SuiteError{File: file, Case: sc.Spec.ID(), Err: err}
		}
	}
	return out, nil
}

// CheckCaseSpec reports the error k.NewCase would return for spec, without
// running the case: through k's SpecChecker when it implements one (no
// input is drawn), otherwise by drawing the case once under seed 0 and
// discarding it (the time and memory of one generation). The error is the
// kernel's own; ParseSuite wraps it in a *SuiteError.
func CheckCaseSpec(k difftest.Kernel, spec difftest.CaseSpec) error {
	if sc, ok := k.(difftest.SpecChecker); ok {
		return sc.CheckSpec(spec)
	}
	_, err := k.NewCase(spec, 0, rng.CaseKey(0, spec.ID()))
	return err
}

// LoadSuiteFile reads a suite from a file on disk (--suite FILE). The file
// must be a regular file of at most MaxSuiteBytes: a FIFO or a device
// (/dev/zero, /dev/stdin) is refused by its type, a larger file by its
// size, before anything is read.
func LoadSuiteFile(file string) (*difftest.Suite, error) {
	data, err := difftest.ReadFileLimit(file, MaxSuiteBytes)
	if err != nil {
		if errors.Is(err, difftest.ErrNotRegular) || errors.Is(err, difftest.ErrTooLarge) {
			err = fmt.Errorf("%w (a suite is a TOML file of at most %d bytes, MaxSuiteBytes)", err, MaxSuiteBytes)
		}
		return nil, &difftest.SuiteError{File: file, Err: err}
	}
	cases, err := ParseSuite(file, data)
	if err != nil {
		return nil, err
	}
	return &difftest.Suite{Name: file, Cases: cases}, nil
}

// LoadSuiteFS reads the named suite: every NAME/*.toml file of fsys in
// lexical order. Case ids must be unique across the files.
func LoadSuiteFS(fsys fs.FS, name string) (*difftest.Suite, error) {
	files, err := fs.Glob(fsys, path.Join(name, "*.toml"))
	if err != nil {
		return nil, &difftest.SuiteError{File: name, Err: err}
	}
	if len(files) == 0 {
		return nil, &difftest.SuiteError{File: name, Err: fmt.Errorf("no such suite (suites: %s)", strings.Join(SuiteNames(fsys), ", "))}
	}
	sort.Strings(files)
	s := &difftest.Suite{Name: name}
	where := map[string]string{}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, &difftest.SuiteError{File: f, Err: err}
		}
		cases, err := ParseSuite(f, data)
		if err != nil {
			return nil, err
		}
		for _, sc := range cases {
			id := sc.Spec.ID()
			if prev, dup := where[id]; dup {
				return nil, &difftest.SuiteError{File: f, Case: id, Err: fmt.Errorf("duplicate case name (also in %s)", prev)}
			}
			where[id] = f
		}
		s.Cases = append(s.Cases, cases...)
	}
	return s, nil
}

// SuiteNames lists the suites of fsys: folders holding *.toml files.
func SuiteNames(fsys fs.FS) []string {
	files, _ := fs.Glob(fsys, "*/*.toml")
	seen := map[string]bool{}
	var names []string
	for _, f := range files {
		d := path.Dir(f)
		if !seen[d] {
			seen[d] = true
			names = append(names, d)
		}
	}
	sort.Strings(names)
	return names
}

// orWritten names where a case came from: its matrix combination, or
// "a [[case]] written out" for a case without a matrix.
func orWritten(combo string) string {
	if combo == "" {
		return "a [[case]] written out"
	}
	return "[case.matrix] " + combo
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Resolve resolves a --suite value, for every subcommand that takes one:
// a folder is a suite of capture files (LoadCaptureDir); a value with a
// path separator or a .toml suffix, or an existing file, is a TOML suite
// file (LoadSuiteFile); anything else names a suite of embedded, the
// folders of *.toml files in an fs.FS (LoadSuiteFS; the CLI passes
// fixtures.Suites()).
func Resolve(name string, embedded fs.FS) (*difftest.Suite, error) {
	if st, err := os.Stat(name); err == nil && st.IsDir() {
		return LoadCaptureDir(name)
	}
	if strings.ContainsRune(name, os.PathSeparator) || strings.HasSuffix(name, ".toml") {
		return LoadSuiteFile(name)
	}
	if st, err := os.Stat(name); err == nil && !st.IsDir() {
		return LoadSuiteFile(name)
	}
	return LoadSuiteFS(embedded, name)
}
