package difftest_test

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kerneldiff/kerneldiff/"

// layers ranks every package under difftest/ (paths relative to the
// module). A package may import only project packages of a lower rank: the
// leaves at the bottom, then the core, then the packages beside it, which
// import the core and never the reverse, nor a sibling of the same or a
// higher rank. A new package under difftest/ must be given its rank here.
var layers = map[string]int{
	"difftest/detmath":     0, // leaves: no project import
	"difftest/numeric":     0,
	"difftest/bench/stats": 0, // stdlib only (checked below)
	"difftest/filekind":    0,
	"difftest/registry":    0,
	"difftest/rng":         1,
	"difftest":             2, // the core
	"difftest/suite":       3,
	"difftest/proc":        3,
	"difftest/bench":       3,
	"difftest/triage":      4, // diagnosis reads suites (shrink)
	"difftest/paramtest":   4, // the kernels' test helpers read their suite files
	"difftest/report":      5, // JUnit names diagnoses
	"difftest/kerneltest":  5, // the kernels' test helpers check shrunk cases (triage)
}

// stdlibOnly are the packages that import nothing outside the standard
// library.
var stdlibOnly = []string{"difftest/detmath", "difftest/numeric", "difftest/bench/stats", "difftest/filekind", "difftest/registry"}

// TestLayers reads the imports of every package under difftest/ (go/build,
// without its tests) and fails when one imports a package of the same or a
// higher layer, a package outside difftest/ of this module (kernels,
// bridge, cuda, cmd), or, for a stdlib-only leaf, anything outside the
// standard library; and when a package under difftest/ has no layer.
func TestLayers(t *testing.T) {
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if d.Name() == "testdata" {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if _, none := err.(*build.NoGoError); none {
			return nil
		}
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(filepath.Join("difftest", path))
		seen[rel] = true
		rank, ok := layers[rel]
		if !ok {
			t.Errorf("%s has no layer: give it a rank in layers", rel)
			return nil
		}
		for _, imp := range pkg.Imports {
			if slices.Contains(stdlibOnly, rel) && strings.Contains(strings.Split(imp, "/")[0], ".") {
				t.Errorf("%s imports %s: it imports the standard library only", rel, imp)
			}
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			depRank, ok := layers[dep]
			switch {
			case !ok:
				t.Errorf("%s imports %s, which is not under difftest/ (the harness knows no kernel, bridge, cuda or command)", rel, dep)
			case depRank >= rank:
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only lower layers", rel, rank, dep, depRank)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range layers {
		if !seen[p] {
			t.Errorf("layers names %s, which has no Go files under difftest/", p)
		}
	}
}
