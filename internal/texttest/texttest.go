// Package texttest is the text side of the tests of every package that
// reads or writes text: it writes the small files a test hands to a
// command (a script, a suite, a report to merge), renders what a writer
// produces into a string, and checks that text (a table, a report page, a
// generated header) for the lines and phrases a test expects.
package texttest

import (
	"io"
	"os"
	"strings"
	"testing"
)

// Contains fails t (not fatally) once for every want that text does not
// contain, naming what the text is ("table", "README.md") and the
// missing string; when any is missing it logs text once, in full.
func Contains(t testing.TB, what, text string, wants ...string) {
	t.Helper()
	missing := false
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q", what, want)
			missing = true
		}
	}
	if missing {
		t.Logf("%s:\n%s", what, text)
	}
}

// WriteFile writes text to the file path with permission bits perm (0o755
// for a script), creating or truncating it, and returns path; a failure
// is fatal (t.Fatal with os.WriteFile's error, which names the path).
func WriteFile(t testing.TB, path, text string, perm os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), perm); err != nil {
		t.Fatal(err)
	}
	return path
}

// Render calls write with a buffer and returns what it wrote, as text; an
// error from write is fatal (t.Fatalf naming the error), so a test checks
// only the output of a writer that succeeded.
func Render(t testing.TB, write func(w io.Writer) error) string {
	t.Helper()
	var b strings.Builder
	if err := write(&b); err != nil {
		t.Fatalf("render: %v", err)
	}
	return b.String()
}
