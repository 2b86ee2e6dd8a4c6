package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	runJSON, benchJSON := filepath.Join(dir, "run.jsonl"), filepath.Join(dir, "bench.json")
	if code, _, stderr := run(t, "run", "--impl", "mutant:topk-tie-hole", "--suite", small, "--json", runJSON); code != 1 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	if code, _, stderr := run(t, "bench", "--impl", "test-timed", "--baseline", "test-timed-slow", "--suite", small, "--runs", "6", "--warmup", "0", "--json", benchJSON); code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	svg := filepath.Join(dir, "needle.svg")
	os.WriteFile(svg, []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>`), 0o644)
	out := filepath.Join(dir, "report.html")
	code, stdout, stderr := run(t, "report", runJSON, benchJSON, svg, "-o", out, "--title", "t1")
	if code != 0 || !strings.Contains(stdout, "difftest report: "+out+" (testdata/small.toml: 1 passed, 2 failed (mismatch 2)") || !strings.Contains(stdout, "bench testdata/small.toml: 3 results") {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	texttest.Contains(t, "report", string(page), "<title>t1</title>", "Failures (", "--impl mutant:topk-tie-hole", "Bench: testdata/small.toml (test-timed vs test-timed-slow)", "geomean", "needle.svg", "data:image/svg&#43;xml;base64,")
	bad := filepath.Join(dir, "notes.txt")
	os.WriteFile(bad, []byte("hello"), 0o644)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"report", runJSON}, "usage: difftest report"},
		{[]string{"report", "-o", out}, "usage: difftest report"},
		{[]string{"report", bad, "-o", out}, "not a JSON Lines report"},
		{[]string{"report", filepath.Join(dir, "none.jsonl"), "-o", out}, "no such file"},
		{[]string{"report", dir, "-o", out}, "is a folder"},
		{[]string{"report", runJSON, "-o", dir}, "is a folder, not a file"},
	} {
		if code, _, stderr := run(t, tc.args...); code != 2 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", tc.args, code, stderr, tc.msg)
		}
	}
}
