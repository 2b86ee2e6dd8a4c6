package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// TestNoMatchNamesGivenFlags: a run that selects nothing names the
// selection flags that were given, and only those (it printed --shard ""
// for a shard never asked for).
func TestNoMatchNamesGivenFlags(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"--run only", []string{"--run", "nomatch"}, "difftest: no case of suite testdata/small.toml matches --run \"nomatch\"\n"},
		{"--run naming no kernel", []string{"--run", "^topk_transfrom/masked"}, "difftest: no case of suite testdata/small.toml matches --run \"^topk_transfrom/masked\"; unknown kernel \"topk_transfrom\" (did you mean \"topk_transform\"? known: norm_rope_store, topk_transform) in --run\n"},
		{"--shard only", []string{"--shard", "7/8"}, "difftest: no case of suite testdata/small.toml matches --shard \"7/8\"\n"},
		{"both (--run first)", []string{"--shard", "1/2", "--run", "masked"}, "difftest: no case of suite testdata/small.toml matches --run \"masked\" --shard \"1/2\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, append([]string{"run", "--impl", "reference", "--suite", small}, tt.args...)...)
			if code != 2 || stdout != "" || stderr != tt.stderr {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, stderr %q", code, stdout, stderr, tt.stderr)
			}
		})
	}
}

// TestOneLineErrorsEscaped: a one-line error that quotes text the harness
// did not write (here a file name) reaches the terminal escaped.
func TestOneLineErrorsEscaped(t *testing.T) {
	code, _, stderr := run(t, "replay", "--impl", "reference", "/nonexistent/\x1b[2J\x1b[Hall 19 passed\n.safetensors")
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if strings.ContainsAny(strings.TrimSuffix(stderr, "\n"), "\x1b\n") || !strings.Contains(stderr, `/nonexistent/\x1b[2J\x1b[Hall 19 passed`) {
		t.Errorf("stderr %q: want one line with the ESC sequences escaped", stderr)
	}
}

// TestExecStderrEscapedInTable: the program, whose stderr cleared
// the screen and printed "all 19 passed" over the table.
func TestExecStderrEscapedInTable(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "hostile")
	script := "#!/bin/sh\nprintf '\\033[2J\\033[Hall 19 passed\\n\\342\\200\\256' >&2\nexit 3\n"
	texttest.WriteFile(t, prog, script, 0o755)
	code, stdout, stderr := run(t, "run", "--impl", "exec:"+prog, "--suite", small, "--run", "gaussian")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	if strings.ContainsAny(stdout+stderr, "\x1b\u202e") {
		t.Errorf("raw ESC or RLO reaches the terminal:\n%q", stdout)
	}
	if !strings.Contains(stdout, `stderr: \x1b[2J\x1b[Hall 19 passed | \u202e`) {
		t.Errorf("the failure line lacks the escaped stderr:\n%s", stdout)
	}
}
