// Package texttest checks the text a command or a renderer wrote (a
// table, a report page, a generated header) for the lines and phrases a
// test expects, in the tests of every package that writes such text.
package texttest

import (
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
