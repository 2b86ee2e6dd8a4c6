package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// A panic of the harness exits with its own code (never 2, the code of
// bad input, nor 125), writes one line to stderr and the stack to a file.
func TestHarnessPanicExitsInternal(t *testing.T) {
	crashDir = t.TempDir()
	defer func() { crashDir = "" }()
	code, _, stderr := run(t, "test-harness-panic")
	if code != difftest.ExitInternal || code == difftest.ExitUsage || code == difftest.ExitUntestable {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, difftest.ExitInternal, stderr)
	}
	if n := strings.Count(stderr, "\n"); n != 1 {
		t.Fatalf("stderr has %d lines, want 1:\n%s", n, stderr)
	}
	m := regexp.MustCompile(`stack in (\S+) \(exit 3\)\n$`).FindStringSubmatch(stderr)
	if m == nil || !strings.Contains(stderr, "panic: nil map write in the harness") {
		t.Fatalf("stderr %q does not name the panic and its stack file", stderr)
	}
	if filepath.Dir(m[1]) != crashDir {
		t.Errorf("stack file %s not in %s", m[1], crashDir)
	}
	b, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "panic: nil map write in the harness") || !strings.Contains(string(b), "goroutine ") {
		t.Errorf("stack file lacks the panic or the stack:\n%s", b)
	}
}
