package scripts

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The emulator scripts (scripts/bench-emu, scripts/sglang-emu) refuse bad
// flags with exit 2 and a message naming the flag, before they build,
// fetch or run anything (BUILDDIR is not created): a flag without its
// value (set -u's "unbound variable", exit 1, before), a --rounds that is
// not a positive integer, a --before that names no commit, an --only that
// names no adapter (refused after the wheels were fetched and difftest
// built), two BUILDDIRs (the last one silently won).
func TestScriptUsageErrors(t *testing.T) {
	root, err := filepath.Abs("..") // go test runs in scripts/
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		script string
		args   []string
		want   string
	}{
		{"bench-emu", []string{"--suite"}, "--suite needs a value"},
		{"bench-emu", []string{"--quick", "--rounds"}, "unknown flag --quick"},
		{"bench-emu", []string{"--rounds"}, "--rounds needs a value"},
		{"bench-emu", []string{"--rounds", "abc"}, "--rounds must be a positive integer, got abc"},
		{"bench-emu", []string{"--rounds", "0"}, "--rounds must be a positive integer, got 0"},
		{"bench-emu", []string{"--before", "no-such-rev-x"}, "--before no-such-rev-x: no such commit"},
		{"bench-emu", []string{"OUT", "OUT2"}, "one BUILDDIR, got OUT and OUT2"},
		{"sglang-emu", []string{"--suite"}, "--suite needs a value"},
		{"sglang-emu", []string{"--only"}, "--only needs a value"},
		{"sglang-emu", []string{"--only", "nope"}, "--only nope: no such adapter (topk_v1, dsv4_store, v32_indexer_k)"},
		{"sglang-emu", []string{"--only", "topk_v1 dsv4_store"}, "--only topk_v1 dsv4_store: no such adapter"},
		{"sglang-emu", []string{"OUT", "OUT2"}, "one BUILDDIR, got OUT and OUT2"},
	} {
		dir := t.TempDir()
		args := make([]string, len(tc.args))
		for i, a := range tc.args {
			if strings.HasPrefix(a, "OUT") {
				a = filepath.Join(dir, a)
			}
			args[i] = a
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", tc.script), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "FATBIN="+filepath.Join(root, "go.mod")) // bench-emu's check for a fatbin passes
		out, _ := cmd.CombinedOutput()
		cancel()
		want := strings.ReplaceAll(tc.want, "OUT", filepath.Join(dir, "OUT"))
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), tc.script+": "+want) {
			t.Errorf("%s %q: exit %d, output %q; want 2 and %q", tc.script, tc.args, code, out, want)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s %q: created %v before refusing", tc.script, tc.args, ents)
		}
	}
}
