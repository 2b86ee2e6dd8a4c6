package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/bridge"
	"github.com/kerneldiff/kerneldiff/internal/boundtest"
	"github.com/kerneldiff/kerneldiff/internal/texttest"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/cli"
)

// TestBridgeCommandsRegistered: the commands that come from bridge are
// registered, and the visible ones give `difftest help` a synopsis with
// their --fatbin flag.
func TestBridgeCommandsRegistered(t *testing.T) {
	for _, name := range []string{"info", "gpu-selftest", "cuda-worker", "study"} {
		c, ok := cli.LookupCommand(name)
		if !ok {
			t.Fatalf("command %s is not registered", name)
		}
		if !c.Hidden && name != "study" && !strings.Contains(c.Usage, "--fatbin FILE") {
			t.Errorf("%s: Usage %q lacks its --fatbin flag", name, c.Usage)
		}
	}
}

// TestBridgeCommandHelp checks that the commands over bridge answer
// --help and -h like the built-in ones: exit 0, usage on stderr headed
// "Usage of difftest NAME:", and exit 2 on an unknown flag.
func TestBridgeCommandHelp(t *testing.T) {
	for name, run := range map[string]func(context.Context, []string, io.Writer, io.Writer) int{
		"info": runInfo, "gpu-selftest": runGPUSelftest, bridge.WorkerCommand: runWorker,
	} {
		for _, h := range []string{"--help", "-h"} {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{h}, &stdout, &stderr)
			if code != 0 || stdout.Len() != 0 {
				t.Errorf("%s %s: exit %d, stdout %q; want 0 and usage on stderr", name, h, code, stdout.String())
			}
			if head := "Usage of difftest " + name + ":\n"; !strings.HasPrefix(stderr.String(), head) {
				t.Errorf("%s %s: usage starts %q, want %q", name, h, strings.SplitN(stderr.String(), "\n", 2)[0], head)
			}
		}
		var stderr bytes.Buffer
		if code := run(context.Background(), []string{"--no-such-flag"}, &bytes.Buffer{}, &stderr); code != 2 {
			t.Errorf("%s --no-such-flag: exit %d, want 2", name, code)
		}
	}
}

// The worker refuses to run unless the cuda implementation started it:
// exit 2 with the reason, before reading any fatbin.
func TestWorkerNotStartedByImpl(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := runWorker(context.Background(), []string{"--fatbin", "/nonexistent/kernels.fatbin"}, &stdout, &stderr)
	want := "cuda-worker: runs under `difftest run --impl cuda`, which passes the protocol pipes on fds 3 and 4\n"
	if code != 2 || stderr.String() != want {
		t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), want)
	}
}

// KD_LIBCUDA naming a FIFO: `info` used to hang in dlopen; it now says at
// once that the file is a FIFO, and exits 0 (its report was printed).
func TestInfoDriverFIFO(t *testing.T) {
	fifo := boundtest.FIFO(t, filepath.Join(t.TempDir(), "libcuda.so.1"))
	t.Setenv(bridge.DriverEnv, fifo)
	boundtest.Returns(t, "info", 20*time.Second, func() {
		var out, errb bytes.Buffer
		code := runInfo(context.Background(), []string{"--fatbin", filepath.Join(t.TempDir(), "none.fatbin")}, &out, &errb)
		if code != 0 || !strings.Contains(out.String(), "is a FIFO, not a shared library file") {
			t.Errorf("info: exit %d, stdout %q stderr %q, want 0 and the FIFO named", code, out.String(), errb.String())
		}
		if !strings.Contains(out.String(), "fatbin: ") || !strings.Contains(out.String(), "  unavailable: ") {
			t.Errorf("info: stdout %q lacks the fatbin section saying unavailable", out.String())
		}
	})
}

// gpu-selftest's exit codes that need no device: 2 for a malformed fault
// list, an unknown suite or a stray argument; 125 for a fault build
// missing from its folder, each with a one-line reason. (bridge's
// TestGPUSelftest runs builds on the fake device.)
func TestGPUSelftestExitCodes(t *testing.T) {
	dir := t.TempDir()
	fatbin := texttest.WriteFile(t, filepath.Join(dir, "kernels.fatbin"), "real build", 0o644)
	list := filepath.Join(dir, "faults.txt")
	tests := []struct {
		name, list string
		args       []string
		code       int
		stderr     string
	}{
		{"a malformed list", "TOPK_OFF_BY_ONE topk_transform\n", nil, 2, "faults.txt:1: want NAME<TAB>mutant<TAB>kernel<TAB>description"},
		{"an unknown suite", "", []string{"--suite", "no-such-suite"}, 2, "gpu-selftest: "},
		{"a stray argument", "", []string{"extra"}, 2, `gpu-selftest: unexpected argument "extra"`},
		{"a build missing", "TOPK_ABSENT\ttopk-past-length\ttopk_transform\tnever built\n", nil, 125, "gpu-selftest: fault build TOPK_ABSENT missing: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			texttest.WriteFile(t, list, tt.list, 0o644)
			var stdout, stderr bytes.Buffer
			args := append([]string{"--suite", "quick", "--fatbin", fatbin}, tt.args...)
			code := runGPUSelftest(context.Background(), args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want %d and one line with %q", code, stderr.String(), tt.code, tt.stderr)
			}
		})
	}
}
