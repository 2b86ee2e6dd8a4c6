// Tests of the suite file checks around the TOML parser (issue 9 items 4
// and 10): hostile suite files are refused by type, size or nesting
// within seconds, and mistyped values are explained in the suite's terms.

package suite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/boundtest"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// cheap runs f and fails when it takes more than 10 s or allocates more
// than 64 MB.
func cheap(t *testing.T, f func()) {
	t.Helper()
	boundtest.Within(t, t.Name(), 10*time.Second, 64<<20, f)
}

// TestLoadSuiteFileBounded: --suite of a device, a FIFO, a huge file or a
// file nested too deep for the parser is a *SuiteError naming the file and
// the rule, quickly and cheaply.
func TestLoadSuiteFileBounded(t *testing.T) {
	dir := t.TempDir()
	head := "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"deep\"\n[case.params]\n"
	write := func(name, text string) string {
		p := texttest.WriteFile(t, filepath.Join(dir, name), text, 0o644)
		return p
	}
	fifo := boundtest.FIFO(t, filepath.Join(dir, "fifo.toml"))
	sparse := write("sparse.toml", "")
	if err := os.Truncate(sparse, 64<<30); err != nil {
		t.Fatal(err)
	}
	bigText := head + "n = 8\n" + strings.Repeat("# padding\n", MaxSuiteBytes/10)
	big := write("big.toml", bigText)
	for _, tc := range []struct {
		name, path, want string
	}{
		{"/dev/zero", "/dev/zero", "suite /dev/zero: not a regular file (a character device) (a suite is a TOML file of at most 1048576 bytes, MaxSuiteBytes)"},
		{"FIFO", fifo, "not a regular file (a FIFO) (a suite is a TOML file"},
		{"folder", dir, "not a regular file (a folder)"},
		{"sparse 64 GiB", sparse, "file too large: 68719476736 bytes, above the limit of 1048576 bytes (a suite is a TOML file of at most 1048576 bytes, MaxSuiteBytes)"},
		{"just over 1 MiB", big, fmt.Sprintf("file too large: %d bytes, above the limit of 1048576 bytes", len(bigText))},
		// The parser's cost is quadratic in the key path: 40 KB nested
		// 10,000 deep took gigabytes.
		{"inline tables 10,000 deep (40 KB)", write("inline.toml", head+"x = "+strings.Repeat("{a=", 10000)+"1"+strings.Repeat("}", 10000)+"\n"),
			"line 6: key path 9 deep, above the limit of 8 for a suite file (MaxSuiteDepth; case.params.KEY is 3)"},
		{"dotted key of 10,000 parts", write("dotted.toml", head+strings.Repeat("a.", 9999)+"a = 1\n"),
			"line 6: key path 10002 deep, above the limit of 8"},
		{"table header of 10,000 parts", write("header.toml", head+"["+strings.Repeat("a.", 9999)+"a]\n"),
			"line 6: table header key path 10000 deep, above the limit of 8"},
		{"arrays 10,000 deep", write("arrays.toml", head+"n = "+strings.Repeat("[", 10000)+strings.Repeat("]", 10000)+"\n"),
			"line 6: arrays and inline tables nested 9 deep, above the limit of 8"},
		{"arrays of inline tables", write("mixed.toml", head+"n = "+strings.Repeat("[{a = ", 5)+"1"+strings.Repeat("}]", 5)+"\n"),
			"line 6: arrays and inline tables nested 9 deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			cheap(t, func() { _, err = LoadSuiteFile(tc.path) })
			t.Log(err)
			var se *difftest.SuiteError
			if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), "suite "+tc.path+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a *SuiteError naming %s and saying %q", err, tc.path, tc.want)
			}
		})
	}
}

// TestCheckSuiteBounds: the pre-scan reads strings, comments, headers and
// keys as TOML does, so brackets, dots and quotes inside them do not count
// and real depth at the limit passes.
func TestCheckSuiteBounds(t *testing.T) {
	pass := []struct{ reason, text string }{
		{"the default shape", "[[case]]\nname = \"a.b.c.d.e.f.g.h.i\"\n[case.params]\nlengths = [1, 2, 3]\n"},
		{"depth 8 exactly", "[case.params]\nx = {a = {b = {c = {d = {e = 1}}}}}\n"},
		{"dotted key at the limit", "[case]\na.b.c.d.e.f.g = 1\n"},
		{"brackets and dots in strings", "[case]\nname = \"[[[{{{.a.b.c.d.e.f.g.h.i.j\"\nx = '{{{{{{{{{{[[[[[[[[['\n"},
		{"escaped quote in a basic string", "[case]\nname = \"a\\\"{{{{{{{{{\"\n"},
		{"multi-line strings", "[case]\ns = \"\"\"\n{{{{{{{{{{\n\"\"\"\"\"\nt = '''\n[[[[[[[[[[.'.'.'\n'''\n"},
		{"comments", "[case] # {{{{{{{{{{ [[[[[[[[[[ a.b.c.d.e.f.g.h.i\n# {{{{{{{{{{\nx = 1 # [[[[[[[[[[\n"},
		{"quoted keys with dots", "[case]\n\"a.b.c.d.e.f.g.h.i\" = 1\n'j.k.l.m.n.o.p.q' = 2\n"},
		{"quoted header parts", "[\"a.b.c.d.e.f.g.h.i\".x]\n"},
		{"arrays across lines", "[case.params]\nlengths = [\n  1, # one\n  [2, [3]],\n]\n"},
		{"an empty inline table", "[case.params]\nx = {}\ny = {a = {}, b = [{}, {}]}\n"},
		{"malformed input is the parser's to report", "[case\nx = \"unterminated\ny = {a = \n"},
	}
	for _, tc := range pass {
		if err := checkSuiteBounds([]byte(tc.text)); err != nil {
			t.Errorf("%s: %v", tc.reason, err)
		}
	}
	fail := []struct{ reason, text, want string }{
		{"depth 9", "[case.params]\nx = {a = {b = {c = {d = {e = {f = 1}}}}}}\n", "line 2: key path 9 deep"},
		{"dotted keys inside inline tables", "[case.params]\nx = {a.b.c = {d.e.f = 1}}\n", "line 2: key path 9 deep"},
		{"a header after a multi-line string counts lines", "s = '''\n\n\n'''\n[a.b.c.d.e.f.g.h.i]\n", "line 5: table header key path 9 deep"},
		{"keys after a comma", "[case.params]\nx = {a = 1, b.c.d.e.f.g = 2}\n", "line 2: key path 9 deep"},
	}
	for _, tc := range fail {
		err := checkSuiteBounds([]byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.reason, err, tc.want)
		}
	}
}

// TestParseSuiteTypeErrors: a value of the wrong type is explained in the
// suite's terms (what the file holds, what it must hold), never in Go's
// ("map[string]interface {}; destination has type slice").
func TestParseSuiteTypeErrors(t *testing.T) {
	for _, tc := range []struct {
		reason, text, want string
	}{
		{"[case] instead of [[case]]", "[case]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"a\"\n",
			"suite s.toml: [case] is one table; write each case as [[case]] (double brackets: an array of tables, one entry per case)"},
		{"case as a string", "case = \"ramp\"\n", `suite s.toml: case = the string "ramp": write each case as an [[case]] table`},
		{"case as an array of integers", "case = [1, 2]\n", "suite s.toml: case #1 is the integer 1: write each case as an [[case]] table"},
		{"name as an integer", "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"a\"\n[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = 5\n",
			"suite s.toml: case #2: name = the integer 5: must be a string, in quotes"},
		{"params as a number", "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"a\"\nparams = 3\n",
			"suite s.toml: case #1: params = the integer 3: must be a table, [case.params] after the case's keys"},
		{"kernel as an array", "[[case]]\nkernel = [\"fake_scatter\"]\nname = \"a\"\n",
			`suite s.toml: case #1: kernel = the array ["fake_scatter"]: must be a string, in quotes`},
	} {
		_, err := ParseSuite("s.toml", []byte(tc.text))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: got\n\t%v\nwant\n\t%s", tc.reason, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "interface") || strings.Contains(err.Error(), "destination")) {
			t.Errorf("%s: names Go types: %v", tc.reason, err)
		}
	}
}
