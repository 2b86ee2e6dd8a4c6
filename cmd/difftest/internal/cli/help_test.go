package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// TestHelp checks every command's --help: exit 0, the usage on stderr
// headed "Usage of difftest NAME:", and flag lines that read as written
// (one default per flag, the suite placeholder NAME|FILE).
func TestHelp(t *testing.T) {
	tests := []struct {
		cmd  string
		want []string // lines or fragments the usage must hold
		not  []string // fragments it must not hold
	}{
		{"run", []string{"-suite NAME|FILE", "default build/kernels.fatbin, relative to the working directory"}, []string{"(default cuda when", "-suite FILE"}},
		{"list", []string{"-suite NAME|FILE"}, []string{"-suite list cases"}},
		{"replay", []string{"-fatbin FILE"}, []string{"(default cuda when"}},
		{"selftest", []string{"-suite NAME|FILE"}, []string{"-suite FILE"}},
		{"merge", nil, nil},
	}
	for _, tc := range tests {
		for _, h := range []string{"--help", "-h"} {
			code, stdout, stderr := run(t, tc.cmd, h)
			if code != 0 || stdout != "" {
				t.Errorf("%s %s: exit %d, stdout %q; want 0 and usage on stderr", tc.cmd, h, code, stdout)
			}
			if head := "Usage of difftest " + tc.cmd + ":\n"; !strings.HasPrefix(stderr, head) {
				t.Errorf("%s %s: usage starts %q, want %q", tc.cmd, h, strings.SplitN(stderr, "\n", 2)[0], head)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("%s %s: usage lacks %q:\n%s", tc.cmd, h, w, stderr)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(stderr, n) {
					t.Errorf("%s %s: usage holds %q:\n%s", tc.cmd, h, n, stderr)
				}
			}
			for _, line := range strings.Split(stderr, "\n") {
				if strings.Count(line, "(default") > 1 {
					t.Errorf("%s %s: two defaults on one line: %q", tc.cmd, h, line)
				}
			}
		}
	}
}

// TestTopLevelUsage checks that `difftest help` lists every built-in
// command with its flags synopsis.
func TestTopLevelUsage(t *testing.T) {
	code, stdout, _ := run(t, "help")
	if code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	for _, c := range commands() {
		if !strings.Contains(stdout, "  "+c.usage+" ") {
			t.Errorf("help lacks %q:\n%s", c.usage, stdout)
		}
	}
	if !strings.Contains(stdout, "families") {
		t.Errorf("help does not mention list families:\n%s", stdout)
	}
}

// TestUsageExitCodes checks that `difftest help` names every exit code
// difftest returns (the README's table lists the same ones); it lacked 3,
// the internal error.
func TestUsageExitCodes(t *testing.T) {
	_, stdout, _ := run(t, "help")
	for _, code := range []int{difftest.ExitPass, difftest.ExitFail, difftest.ExitUsage, difftest.ExitInternal, difftest.ExitUntestable} {
		if !strings.Contains(stdout, fmt.Sprintf(" %d ", code)) {
			t.Errorf("help does not name exit code %d:\n%s", code, stdout)
		}
	}
	if !strings.Contains(stdout, "128+N stopped by signal N") {
		t.Errorf("help does not name the signal exit codes:\n%s", stdout)
	}
}
