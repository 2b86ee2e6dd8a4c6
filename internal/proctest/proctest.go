// Package proctest is what the tests of the exec protocol share across
// packages (difftest/proc, the command line): a program whose helper
// escapes its process group, and the pid file through which such a
// program says which process to look for.
package proctest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// EscapingProgram writes dir/escape.sh, an exec program whose helper
// leaves the process group (setsid sleep 1000, in the background, holding
// the program's stdout and stderr open), writes the helper's pid to
// dir/pid, waits 0.2 s (so that the helper has left the group when the
// program ends) and exits 3. It returns the program's path and the pid
// file's. A failure to write is fatal.
func EscapingProgram(t testing.TB, dir string) (prog, pidfile string) {
	t.Helper()
	pidfile = filepath.Join(dir, "pid")
	script := "#!/bin/sh\nsetsid sleep 1000 &\necho $! > " + difftest.ShellQuote(pidfile) + "\nsleep 0.2\nexit 3\n"
	return texttest.WriteFile(t, filepath.Join(dir, "escape.sh"), script, 0o755), pidfile
}

// ReadPid returns the process id that the file at path holds (one decimal
// number, white space around it allowed); a file that is missing or holds
// anything else is fatal.
func ReadPid(t testing.TB, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %s: %v", path, err)
	}
	return pid
}

// Quote quotes s for a POSIX shell (single quotes, a ' inside as '\”).
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
