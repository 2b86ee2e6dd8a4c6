// Package paramtest holds test helpers for kernel packages: it lets a
// kernel's tests check that what it documents about its suite parameters
// (difftest.FamilyDescriber) matches what its parser reads.
package paramtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
