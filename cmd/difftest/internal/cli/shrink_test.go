package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// TestShrinkMutant: shrink a suite case under an in-process mutant, then
// shrink its saved capture again; the outputs name the steps, the size
// removed, the diagnosis and a replay line that replays the capture to the
// same failure.
func TestShrinkMutant(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := run(t, "shrink", "--suite", small, "--run", "^topk_transform/gaussian-k8$", "--impl", "mutant:topk-page-row0", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	capture := filepath.Join(dir, "topk_transform__gaussian-k8-shrunk__seed1.safetensors")
	texttest.Contains(t, "stdout", out,
		"shrunk topk_transform/gaussian-k8 (seed 1) under mutant:topk-page-row0 in ",
		"  from 5 rows, L ≤ 40 (62 scores), stride 40, K 8, P 2",
		"  to   2 rows, L ≤ 1 (1 scores), stride 1, K 8, P 1",
		"  diagnosis: topk-page-row0, topk-page-off-by-one (the original: topk-page-row0)\n", // both explain the two rows left
		"    drop rows ",
		"capture: "+capture+"\n",
		"replay:  difftest replay --impl mutant:topk-page-row0 "+capture+"\n",
	)
	if !strings.Contains(errs, "shrink:   kept   drop rows") || strings.Contains(errs, "shrink:   no ") {
		t.Errorf("stderr without -v should list the kept steps only:\n%s", errs)
	}
	code, rout, _ := run(t, "replay", "--impl", "mutant:topk-page-row0", capture)
	if code != 1 || !strings.Contains(rout, "behaves like topk-page-row0") {
		t.Errorf("replay: exit %d\n%s", code, rout)
	}
	// The suite entry: its replay line runs it, to the same failure; the
	// reference passes it.
	entry := filepath.Join(dir, "gaussian-k8-shrunk.toml")
	line := "replay:  difftest run --suite " + entry + " --seed 1 --impl mutant:topk-page-row0 --run '^topk_transform/gaussian-k8-shrunk$'\n"
	if !strings.Contains(out, "suite:   "+entry+"\n") || !strings.Contains(out, line) {
		t.Errorf("stdout has no suite entry and its replay line %q:\n%s", line, out)
	}
	data, err := os.ReadFile(entry)
	if err != nil || !strings.Contains(string(data), `family = "literal"`) {
		t.Fatalf("%s: %v\n%s", entry, err, data)
	}
	code, sout, _ := run(t, "run", "--suite", entry, "--impl", "mutant:topk-page-row0")
	if code != 1 || !strings.Contains(sout, "behaves like topk-page-row0") {
		t.Errorf("run the suite entry: exit %d\n%s", code, sout)
	}
	if code, sout, _ = run(t, "run", "--suite", entry, "--impl", "reference"); code != 0 {
		t.Errorf("the reference on the suite entry: exit %d\n%s", code, sout)
	}
	// A capture file shrinks too (already small: nothing more to keep).
	code, out, errs = run(t, "shrink", capture, "--impl", "mutant:topk-page-row0", "-o", dir, "-v")
	if code != 0 || !strings.Contains(out, "0 step(s) kept") || !strings.Contains(errs, "shrink:   no ") {
		t.Errorf("shrink of the shrunk capture: exit %d\n%s\n%s", code, out, errs)
	}
	// Without --impl and -o: the capture's own implementation, and the
	// files under build/shrunk of the working directory (build/ is what
	// a checkout ignores), not a shrunk/ beside the sources.
	t.Chdir(t.TempDir())
	code, out, errs = run(t, "shrink", capture)
	if code != 0 || !strings.Contains(errs, "difftest: shrinking on --impl mutant:topk-page-row0, the implementation "+capture+" was saved from") ||
		!strings.Contains(out, "capture: build/shrunk/topk_transform__gaussian-k8-shrunk__seed1.safetensors\n") {
		t.Errorf("shrink without --impl and -o: exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat("build/shrunk/gaussian-k8-shrunk.toml"); err != nil {
		t.Errorf("the suite entry is not under build/shrunk: %v", err)
	}
}

// TestShrinkUsage: the ways a shrink is asked wrongly exit 2 with one line.
func TestShrinkUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"shrink", "--impl", "reference"}, "no case: give a capture file or --suite S --run ID"},
		{[]string{"shrink", "--suite", small, "--run", "k", "--impl", "reference"}, "selects 3 cases of suite testdata/small.toml, want exactly one"},
		{[]string{"shrink", "--suite", small, "--run", "gaussian", "--impl", "reference", "-o", t.TempDir()}, "the case does not fail under reference"},
		{[]string{"shrink", "a.safetensors", "--run", "x", "--impl", "reference"}, "not both"},
		{[]string{"shrink", "--suite", small, "--run", "gaussian", "--impl", "reference", "--budget", "0s"}, "--budget 0s: must be > 0"},
	} {
		code, _, errs := run(t, tc.args...)
		if code != difftest.ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestShrinkExec: shrink works through an exec: implementation (a
// standard-library Python program with the page-row0 fault; two processes
// per attempt, so a budget of a few seconds), and its capture replays to
// the same failure through it.
func TestShrinkExec(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	prog, err := filepath.Abs("testdata/topk_page_row0.py")
	if err != nil {
		t.Fatal(err)
	}
	impl := "exec:python3 " + prog
	dir := t.TempDir()
	code, out, errs := run(t, "shrink", "--suite", small, "--run", "gaussian-k8", "--impl", impl, "-o", dir, "--budget", "4s")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	// The diagnosis: topk-page-row0 alone, or with topk-page-off-by-one
	// once the budget let the shrink reach two one-token rows.
	if !strings.Contains(out, "  to   2 rows, ") || !strings.Contains(out, "  diagnosis: topk-page-row0") {
		t.Errorf("stdout:\n%s", out)
	}
	capture := filepath.Join(dir, "topk_transform__gaussian-k8-shrunk__seed1.safetensors")
	if _, err := os.Stat(capture); err != nil {
		t.Fatal(err)
	}
	code, rout, _ := run(t, "replay", "--impl", impl, capture)
	if code != 1 || !strings.Contains(rout, "FAIL") || !strings.Contains(rout, "behaves like topk-page-row0") {
		t.Errorf("replay through exec: exit %d\n%s", code, rout)
	}
}
