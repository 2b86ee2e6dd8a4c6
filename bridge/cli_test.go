package bridge

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// buildDifftest builds cmd/difftest with the Makefile's link flags into a
// temporary folder, or skips when the command does not build here yet or
// does not include this package.
func buildDifftest(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds cmd/difftest")
	}
	bin := filepath.Join(t.TempDir(), "difftest")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-extldflags=-Wl,-z,lazy", "-o", bin, "../cmd/difftest")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cmd/difftest does not build: %v\n%s", err, out)
	}
	out, _ := exec.Command(bin, "info").CombinedOutput()
	if !strings.Contains(string(out), "fatbin:") {
		t.Skip("cmd/difftest does not link package bridge (blank import missing)")
	}
	return bin
}

// missingDriver is a driver library path that cannot exist.
const missingDriver = "/nonexistent/kerneldiff-test/libcuda.so.1"

// noDriverEnv is the environment with DriverEnv pointing at a library that
// does not exist: "no driver" forced, whatever this machine has (a GPU, or
// the emulated driver first on LD_LIBRARY_PATH as in test-emu-driver).
// Deciding it from the machine (say, from /dev/nvidiactl) skips these
// tests where that file exists and fails them where the emulator answers.
func noDriverEnv() []string {
	return append(os.Environ(), DriverEnv+"="+missingDriver)
}

// docs/interfaces.md and issue 4: on a machine without a driver, `difftest run`
// (default implementation cuda) exits 125 within 5 s with a one-line
// reason, whether or not a fatbin is there; the reason says how to run
// without a GPU (issue 9).
func TestRunWithoutDriverExits125(t *testing.T) {
	bin := buildDifftest(t)
	fatbin := filepath.Join(t.TempDir(), "kernels.fatbin")
	if err := os.WriteFile(fatbin, []byte{0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "--suite", "quick", "--fatbin", fatbin},
		{"run", "--suite", "quick", "--fatbin", fatbin, "--impl", "cuda"},
		{"run", "--suite", "quick", "--fatbin", filepath.Join(t.TempDir(), "missing.fatbin")},
	} {
		t0 := time.Now()
		cmd := exec.Command(bin, args...)
		cmd.Env = noDriverEnv()
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		elapsed := time.Since(t0)
		code := cmd.ProcessState.ExitCode()
		if code != 125 {
			t.Fatalf("%v: exit %d (%v), want 125\nstdout: %s\nstderr: %s", args, code, err, stdout.String(), stderr.String())
		}
		if elapsed > 5*time.Second {
			t.Errorf("%v: took %v, want under 5 s", args, elapsed)
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" || strings.Contains(msg, "\n") {
			t.Errorf("%v: stderr %q, want one line", args, msg)
		}
		if strings.Contains(args[len(args)-1], "missing") {
			continue // no fatbin: the reason is the fatbin, not the machine
		}
		texttest.Contains(t, fmt.Sprint(args, ": reason"), msg, "no CUDA driver", "make difftest IMPL=emu", "--impl reference")
		t.Logf("%v → 125 in %v: %s", args, elapsed.Round(time.Millisecond), msg)
	}
}

// `difftest info` without a driver prints the build and fatbin sections,
// says why the device is unavailable, and exits 0.
func TestInfoWithoutDriver(t *testing.T) {
	bin := buildDifftest(t)
	cmd := exec.Command(bin, "info", "--fatbin", filepath.Join(t.TempDir(), "none.fatbin"))
	cmd.Env = noDriverEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("info: %v\n%s", err, out)
	}
	texttest.Contains(t, "info output", string(out), "build:", "go:        go1.", "fatbin: ", "unavailable: stat ", "no such file or directory", "device 0:", "unavailable: no CUDA driver: dlopen "+missingDriver)
}
