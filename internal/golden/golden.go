// Package golden compares text a test computes with a committed golden
// file, line by line: the pinned input digests of the generators
// (fixtures, kernels/topk, kernels/normrope).
package golden

import (
	"os"
	"strings"
	"testing"
)

// Check compares got with the file at path, line by line. With update set
// (a test's -update flag) it first rewrites the file with got. A missing
// file, or one with another number of lines, is one error; otherwise each
// differing line is an error (the first 10 shown as got/want pairs),
// followed by one error with the count and hint, the action the change
// asks for. It returns the number of differing lines (−1 for a missing
// file or a different line count).
func Check(t testing.TB, path, got string, update bool, hint string) int {
	t.Helper()
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%v (write it with -update)", err)
		return -1
	}
	g, w := strings.Split(got, "\n"), strings.Split(string(data), "\n")
	if len(g) != len(w) {
		t.Errorf("%d lines, %s has %d: %s", len(g), path, len(w), hint)
		return -1
	}
	bad := 0
	for i := range g {
		if g[i] != w[i] {
			if bad++; bad <= 10 {
				t.Errorf("%s line %d changed:\n got %s\nwant %s", path, i+1, g[i], w[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d lines of %s differ: %s", bad, len(w), path, hint)
	}
	return bad
}
