package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// Go's allocator running out of memory is a fatal error no recover
// catches, which Go's runtime exits 2 on: the code of a usage error, which
// CI and git bisect run take as bad input. difftest exits 3 on it with one
// line naming the report file (here under a 1 GB address-space limit, on a
// case of 1 GiB of x run with no memory budget).
func TestOutOfMemoryExitsInternal(t *testing.T) {
	bin := difftestBinary(t)
	dir := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", `ulimit -v 1000000 && exec "$0" "$@"`, bin, "run", "--impl", "reference",
		"--suite", "internal/cli/testdata/normrope-n96.toml", "--param", "N=4194304", "--max-memory", "0")
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != difftest.ExitInternal {
		t.Fatalf("exit %d, want %d; stderr tail:\n%s", code, difftest.ExitInternal, lastLine(e.String()))
	}
	last := lastLine(e.String())
	m := regexp.MustCompile(`^difftest: internal error \(a case larger than this machine holds: lower its sizes or --max-memory\): fatal error: out of memory in \S+; report in (\S+) \(exit 3\)\n$`).FindStringSubmatch(last)
	if m == nil {
		t.Fatalf("last stderr line %q does not name the crash and its report", last)
	}
	if filepath.Dir(m[1]) != dir {
		t.Errorf("report %s not in TMPDIR %s", m[1], dir)
	}
	if b, err := os.ReadFile(m[1]); err != nil || !strings.Contains(string(b), "runtime.throw") {
		t.Errorf("report lacks the stack (%v):\n%.500s", err, b)
	}
}

// The supervising process passes the child's own exit codes through
// (2 for a usage error, 0 for a pass) and leaves no child behind.
func TestSupervisedExitCodes(t *testing.T) {
	bin := difftestBinary(t)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"run", "--no-such-flag"}, difftest.ExitUsage},
		{[]string{"run", "--impl", "reference", "--suite", "internal/cli/testdata/normrope-n96.toml"}, difftest.ExitPass},
	} {
		cmd := exec.Command(bin, c.args...)
		out, _ := cmd.CombinedOutput()
		if got := cmd.ProcessState.ExitCode(); got != c.code {
			t.Errorf("%v: exit %d, want %d:\n%s", c.args, got, c.code, out)
		}
		if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
			t.Errorf("%v: killed by %v", c.args, ws.Signal())
		}
	}
}

// lastLine is the last line of s, with its newline.
func lastLine(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:] + "\n"
}
