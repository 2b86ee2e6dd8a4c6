// Fuzz targets for every parser of input the harness does not write
// itself: suite TOML, a capture file's header, a JSON Lines report
// record, a serve protocol frame, and the escaping of text for the
// terminal and XML. Each must return an error or a value that keeps its
// invariants, never panic, and never allocate from an unchecked size.
//
//	go test -run '^$' -fuzz FuzzParseSuite -fuzztime 20s -fuzzminimizetime 1s ./difftest/suite
//
// (The engine minimizes each new interesting input for up to 60 s by
// default, during which its exec count stands still.)

package suite

import (
	"strings"
	"testing"
	"unicode"

	"github.com/kerneldiff/kerneldiff/difftest"
)

func FuzzParseSuite(f *testing.F) {
	for _, s := range []string{
		"[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"a\"\n[case.params]\nn = 4\nslots = 8\n",
		"[[case]]\nkernel = \"fake_scatter\"\nfamily = \"random\"\nname = \"m-{n}\"\n[case.params]\nslots = 64\n[case.matrix]\nn = [1, 2, 3]\n",
		"[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"a\"\nmatrix = 5\n",
		"[case]\nkernel = 1\n",
		"[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"a\"\n[case.params]\nn = 1099511627776\n",
		strings.Repeat("[", 200),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cases, err := ParseSuite("fuzz.toml", data)
		if err != nil {
			if _, ok := err.(*difftest.SuiteError); !ok {
				t.Fatalf("error of type %T, want *SuiteError: %v", err, err)
			}
			return
		}
		if len(cases) == 0 || len(cases) > MaxSuiteCases {
			t.Fatalf("%d cases accepted", len(cases))
		}
		seen := map[string]bool{}
		for _, c := range cases {
			id := c.Spec.ID()
			if seen[id] {
				t.Fatalf("case %q twice", id)
			}
			seen[id] = true
			if c.Spec.Name == "" || strings.IndexFunc(c.Spec.Name, unicode.IsSpace) >= 0 || strings.IndexFunc(c.Spec.Name, unicode.IsControl) >= 0 {
				t.Fatalf("case name %q accepted", c.Spec.Name)
			}
		}
	})
}
