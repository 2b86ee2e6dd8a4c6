// Tests of the built difftest binary: what a signal leaves behind (issue 9
// item 5, docs/interfaces.md as amended) and replay lines that replay (item 7).
// Each starts the binary with an exec: implementation written as a shell
// script, so what is tested is the process a user runs.

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/report"
	"github.com/kerneldiff/kerneldiff/internal/junittest"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// difftestBinary builds ./cmd/difftest once per test process, the way
// the Makefile does (lazy binding for go-nvml).
func difftestBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kerneldiff-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "difftest")
		out, err := exec.Command("go", "build", "-ldflags=-extldflags=-Wl,-z,lazy", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = errors.New("go build ./cmd/difftest: " + err.Error() + "\n" + string(out))
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

const smallSuite = "internal/cli/testdata/small.toml"

// writeScript writes an executable shell script.
func writeScript(t *testing.T, path, body string) {
	t.Helper()
	texttest.WriteFile(t, path, "#!/bin/sh\n"+body, 0o755)
}

// waitFile waits up to 20 s for path to exist with content, and returns it.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
	}
	t.Fatalf("%s never appeared", path)
	return ""
}

// alive reports whether pid is a live process (not gone, not a zombie).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return !(i > 0 && i+2 < len(stat) && stat[i+2] == 'Z')
}

// signalRun starts the binary on the small suite with an exec program
// that fails the first case at once and sleeps in the second, waits until
// it sleeps, sends sig, and returns the exit code, the outputs, and the
// sleeping program's pid. dir holds the reports; dir/tmp is TMPDIR.
func signalRun(t *testing.T, sig syscall.Signal, dir string, extra ...string) (code int, stdout, stderr string, sleeper int) {
	t.Helper()
	bin := difftestBinary(t)
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "prog.sh")
	writeScript(t, prog, `if [ -e "$KD_TEST_DIR/first-done" ]; then
	echo $$ > "$KD_TEST_DIR/pid.tmp" && mv "$KD_TEST_DIR/pid.tmp" "$KD_TEST_DIR/sleeper.pid"
	exec sleep 1000
fi
touch "$KD_TEST_DIR/first-done"
echo "deliberate failure" >&2
exit 3
`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"run", "--impl", "exec:" + prog, "--suite", smallSuite,
		"--json", filepath.Join(dir, "r.jsonl"), "--junit", filepath.Join(dir, "r.xml")}, extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "KD_TEST_DIR="+dir)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sleeper, err := strconv.Atoi(waitFile(t, filepath.Join(dir, "sleeper.pid")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(sleeper, syscall.SIGKILL) })
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = cmd.Wait()
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("difftest took %v to stop after %v", d, sig)
	}
	code = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal()) // as a shell reports it
	} else if err != nil && code < 0 {
		t.Fatal(err)
	}
	return code, o.String(), e.String(), sleeper
}

// On SIGINT, SIGTERM and SIGHUP difftest reports what finished (the
// table's summary, the JSON Lines summary, a JUnit file that parses),
// kills the running program's process group, removes its temporary
// folder, and exits 128 + the signal (not 125, which git bisect run takes
// as "skip", nor 129 with nothing written, as SIGHUP did).
func TestSignalReportsFinishedCasesAndCleansUp(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(difftest.SignalName(sig), func(t *testing.T) {
			dir := t.TempDir()
			code, stdout, stderr, sleeper := signalRun(t, sig, dir)
			if want := 128 + int(sig); code != want {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
			}
			name := difftest.SignalName(sig)
			texttest.Contains(t, "stdout", stdout, "FAIL    topk_transform/gaussian-k8", "0 passed, 1 failed (crash 1)", "stopped early: interrupted by "+name)
			if !strings.Contains(stderr, "difftest: interrupted by "+name+": 1 finished case(s) reported") || strings.Contains(stderr, "context canceled") {
				t.Errorf("stderr:\n%s", stderr)
			}
			f, err := os.Open(filepath.Join(dir, "r.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := report.ReadJSONL("r.jsonl", f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if rep.Summary == nil || rep.Summary.Failed != 1 || rep.Summary.Aborted != "interrupted by "+name || len(rep.Records) != 1 {
				t.Errorf("JSON Lines: summary %+v and %d records, want one crash and the interruption", rep.Summary, len(rep.Records))
			}
			junittest.CheckCases(t, filepath.Join(dir, "r.xml"), 1)
			if alive(sleeper) {
				t.Errorf("the running exec program (pid %d) outlived difftest", sleeper)
			}
			for _, d := range []string{filepath.Join(dir, "tmp"), dir} {
				ents, _ := os.ReadDir(d)
				for _, e := range ents {
					if strings.HasPrefix(e.Name(), "kerneldiff-exec-") || strings.HasSuffix(e.Name(), ".tmp") {
						t.Errorf("left behind: %s", filepath.Join(d, e.Name()))
					}
				}
			}
		})
	}
}

// SIGKILL cannot be caught: the JUnit file is then the previous one,
// whole, never a truncated or empty one (it is written to a temporary
// file and renamed when the run ends).
func TestSIGKILLLeavesThePreviousJUnit(t *testing.T) {
	dir := t.TempDir()
	junit := filepath.Join(dir, "r.xml")
	const previous = "<testsuites><!-- the previous run --></testsuites>\n"
	texttest.WriteFile(t, junit, previous, 0o644)
	code, _, _, _ := signalRun(t, syscall.SIGKILL, dir)
	if code != 137 {
		t.Errorf("exit %d, want death by SIGKILL", code)
	}
	if b, err := os.ReadFile(junit); err != nil || string(b) != previous {
		t.Errorf("JUnit after SIGKILL = %q (%v), want the previous file untouched", b, err)
	}
}

// A case that fails as timeout under --timeout 1s must replay as timeout:
// the printed line names the binary that ran and repeats --timeout (it
// used to say `difftest run …`, not on PATH, and drop --timeout, so the
// replay ran 5 s and failed as crash). Both the run line and the line of
// the saved capture are run as printed, through a shell.
func TestReplayLinesReplay(t *testing.T) {
	bin := difftestBinary(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "slow prog.sh") // a space: the line must quote it
	writeScript(t, prog, "sleep 5\nexit 3\n")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, arg ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, arg...)
		cmd.Dir = wd
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		return cmd.ProcessState.ExitCode(), string(out)
	}
	code, out := run(bin, "run", "--impl", "exec:"+difftest.ShellQuote(prog), "--suite", smallSuite, "--run", "straddle", "--timeout", "1s", "--save-failures", filepath.Join(dir, "fails"))
	if code != 1 || !strings.Contains(out, "FAIL    topk_transform/straddle-k16  timeout") {
		t.Fatalf("first run: exit %d, want 1 with a timeout\n%s", code, out)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l, ok := strings.CutPrefix(strings.TrimSpace(l), "replay: "); ok {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("want a run and a capture replay line:\n%s", out)
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, difftest.ShellQuote(bin)+" ") || !strings.Contains(line, " --timeout 1s") {
			t.Errorf("replay line %q does not name %s or lacks --timeout 1s", line, bin)
		}
		start := time.Now()
		code, out := run("sh", "-c", line)
		if code != 1 || !strings.Contains(out, "topk_transform/straddle-k16  timeout") || !strings.Contains(out, "0 passed, 1 failed (timeout 1)") {
			t.Errorf("%s\nexit %d, want the same timeout failure:\n%s", line, code, out)
		}
		if d := time.Since(start); d > 4*time.Second {
			t.Errorf("replay took %v: not under the 1 s time-out", d)
		}
	}
}
