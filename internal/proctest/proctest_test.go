package proctest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kerneldiff/kerneldiff/internal/tbrecord"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// The escaping program exits 3 after writing its helper's pid; the helper
// outlives it.
func TestEscapingProgram(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid program here")
	}
	dir := t.TempDir()
	prog, pidfile := EscapingProgram(t, dir)
	if prog != filepath.Join(dir, "escape.sh") || pidfile != filepath.Join(dir, "pid") {
		t.Fatalf("paths %s %s", prog, pidfile)
	}
	err := exec.Command(prog).Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("program: %v, want exit status 3", err)
	}
	pid := ReadPid(t, pidfile)
	defer syscall.Kill(pid, syscall.SIGKILL)
	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("helper %d: %v, want it running after the program", pid, err)
	}
}

// ReadPid reads a number with white space around it; a missing file or
// one that holds no number is fatal.
func TestReadPid(t *testing.T) {
	dir := t.TempDir()
	if got := ReadPid(t, texttest.WriteFile(t, filepath.Join(dir, "ok"), " 1234\n", 0o644)); got != 1234 {
		t.Errorf("ReadPid = %d, want 1234", got)
	}
	for _, path := range []string{filepath.Join(dir, "absent"), texttest.WriteFile(t, filepath.Join(dir, "bad"), "12a\n", 0o644)} {
		r := tbrecord.Run(t, func(tb testing.TB) { ReadPid(tb, path) })
		if !r.Stopped || len(r.Errs) != 1 || !strings.Contains(r.Errs[0], path) {
			t.Errorf("%s: %v (fatal %v), want one fatal failure naming the file", path, r.Errs, r.Stopped)
		}
	}
}
