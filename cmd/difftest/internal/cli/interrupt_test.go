package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/report"
	"github.com/kerneldiff/kerneldiff/internal/junittest"
	"github.com/kerneldiff/kerneldiff/internal/proctest"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// blockImpl passes the reference's outputs for its first case and then
// blocks in its second until ctx ends, announcing that it is blocked.
type blockImpl struct {
	calls   atomic.Int32
	blocked chan struct{}
}

func (*blockImpl) Name() string { return "test-blocks" }
func (b *blockImpl) Run(ctx context.Context, k difftest.Kernel, c *difftest.Case, outs []*difftest.Buffer) (difftest.RunInfo, error) {
	if c.ID != "topk_transform/gaussian-k8" {
		if b.calls.Add(1) == 1 {
			close(b.blocked)
		}
		<-ctx.Done()
		return difftest.RunInfo{}, ctx.Err()
	}
	return difftest.ReferenceImpl{}.Run(ctx, k, c, outs)
}
func (*blockImpl) Close() error { return nil }

// blocking is the blockImpl of the test running now.
var blocking atomic.Pointer[blockImpl]

func init() {
	difftest.RegisterImpl("test-blocks", func(difftest.ImplOptions) (difftest.Impl, error) { return blocking.Load(), nil })
}

// A run stopped by a person (docs/interfaces.md as amended; issue 9 item 5)
// reports what finished: the table with its summary, the JSON Lines
// summary line, a JUnit file that parses; and exits 128 + the signal,
// not 125 ("skip" to git bisect run) with "context canceled".
func TestInterruptReportsWhatFinished(t *testing.T) {
	dir := t.TempDir()
	jsonPath, junitPath := filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "r.xml")
	b := &blockImpl{blocked: make(chan struct{})}
	blocking.Store(b)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		select {
		case <-b.blocked:
			cancel(&difftest.Interrupted{Signal: syscall.SIGTERM})
		case <-time.After(20 * time.Second):
		}
	}()
	var stdout, stderr bytes.Buffer
	code := MainAs(ctx, "build/difftest", []string{"run", "--impl", "test-blocks", "--suite", small, "--json", jsonPath, "--junit", junitPath}, &stdout, &stderr)
	if code != 143 {
		t.Fatalf("exit %d, want 143 (128 + SIGTERM)\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "ok      topk_transform/gaussian-k8") || !strings.Contains(stdout.String(), "1 passed, 0 failed") || !strings.Contains(stdout.String(), "stopped early: interrupted by SIGTERM") {
		t.Errorf("stdout lacks the finished case or the summary:\n%s", stdout.String())
	}
	if got, want := stderr.String(), "difftest: interrupted by SIGTERM: 1 finished case(s) reported\n"; !strings.HasSuffix(got, want) || strings.Contains(got, "context canceled") {
		t.Errorf("stderr = %q, want it to end with %q", got, want)
	}
	rep, err := report.ReadJSONLFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary == nil || rep.Summary.Passed != 1 || rep.Summary.Aborted != "interrupted by SIGTERM" || len(rep.Records) != 1 {
		t.Errorf("JSON Lines: summary %+v, %d records; want the one finished case and an interrupted summary", rep.Summary, len(rep.Records))
	}
	junittest.CheckCases(t, junitPath, 1)
}

// Whatever a command returns, an interrupted context makes the exit code
// 128 + the signal: the one code above 125 (MainAs).
func TestInterruptExitCodeWins(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		args []string
		code int
	}{
		{syscall.SIGINT, []string{"run", "--impl", "reference", "--suite", small}, 130},
		{syscall.SIGHUP, []string{"test-exit-255"}, 129},
		{syscall.SIGTERM, []string{"selftest", "--suite", small}, 143},
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(&difftest.Interrupted{Signal: tc.sig})
		var stdout, stderr bytes.Buffer
		if code := Main(ctx, tc.args, &stdout, &stderr); code != tc.code {
			t.Errorf("%v under %s: exit %d, want %d\n%s%s", tc.args, difftest.SignalName(tc.sig), code, tc.code, stdout.String(), stderr.String())
		}
	}
	// selftest says it was stopped, not "context canceled".
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&difftest.Interrupted{Signal: syscall.SIGINT})
	var stderr bytes.Buffer
	if code := Main(ctx, []string{"selftest", "--suite", small}, &bytes.Buffer{}, &stderr); code != 130 || stderr.String() != "difftest: selftest interrupted by SIGINT before every mutant ran: no verdict\n" {
		t.Errorf("selftest under SIGINT: exit %d, stderr %q", code, stderr.String())
	}
	// A plain cancellation is no person's signal: the usual codes apply.
	plain, stop := context.WithCancel(context.Background())
	stop()
	if code := Main(plain, []string{"test-exit-255"}, &bytes.Buffer{}, &bytes.Buffer{}); code != 125 {
		t.Errorf("plain cancel: exit %d, want 125", code)
	}
}

// Usage errors of the reports and the exec program (issue 9 items 5, 6).
func TestReportPathsAndUnstartablePrograms(t *testing.T) {
	dir := t.TempDir()
	same := filepath.Join(dir, "r.out")
	plain := texttest.WriteFile(t, filepath.Join(dir, "plain.sh"), "#!/bin/sh\n", 0o644)
	previous := texttest.WriteFile(t, filepath.Join(dir, "previous.xml"), "previous run", 0o644)
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"--json and --junit one file", []string{"run", "--impl", "reference", "--suite", small, "--json", same, "--junit", same}, 2,
			"difftest: --json " + same + " and --junit " + same + " name the same file: give each report its own\n"},
		{"--json and --junit one file, spelt two ways", []string{"run", "--impl", "reference", "--suite", small, "--json", same, "--junit", filepath.Join(dir, ".", "r.out")}, 2, ""},
		{"--junit a folder", []string{"run", "--impl", "reference", "--suite", small, "--junit", dir}, 2,
			"difftest: --junit " + dir + ": is a folder, want a file\n"},
		{"--junit in no folder", []string{"run", "--impl", "reference", "--suite", small, "--junit", filepath.Join(dir, "none", "r.xml")}, 2, ""},
		{"replay: --json and --junit one file", []string{"replay", "--impl", "reference", "--json", same, "--junit", same, "x.safetensors"}, 2, ""},
		{"exec program that does not exist", []string{"run", "--impl", "exec:/nonexistent/prog --fast", "--suite", small, "--junit", previous}, 125,
			"difftest: exec:/nonexistent/prog --fast unavailable: cannot start /nonexistent/prog: no such file (the program must be an executable file, looked up in PATH when its name has no slash); nothing was tested\n"},
		{"exec program not executable", []string{"run", "--impl", "exec:" + plain, "--suite", small}, 125,
			"difftest: exec:" + plain + " unavailable: cannot start " + plain + ": not executable (mode -rw-r--r--) (the program must be an executable file, looked up in PATH when its name has no slash); nothing was tested\n"},
		{"exec program not in PATH", []string{"run", "--impl", "exec:kerneldiff-no-such-program", "--suite", small}, 125,
			"difftest: exec:kerneldiff-no-such-program unavailable: cannot start kerneldiff-no-such-program: not found in PATH (the program must be an executable file, looked up in PATH when its name has no slash); nothing was tested\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			if tc.stderr != "" && stderr != tc.stderr {
				t.Errorf("stderr = %q\nwant     %q", stderr, tc.stderr)
			}
			if strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", stderr)
			}
		})
	}
	if b, _ := os.ReadFile(previous); string(b) != "previous run" {
		t.Errorf("a run that tested nothing replaced the previous JUnit file with %q", b)
	}
	if _, err := os.Stat(same); err == nil {
		t.Errorf("a usage error created %s", same)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("left a temporary file %s", e.Name())
		}
	}
}

// Replay lines name the program as it was invoked and repeat every flag
// that changes a verdict (issue 9 item 7).
func TestReplayLinesNameTheProgramAndFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := MainAs(context.Background(), "./build/difftest", []string{"run", "--impl", "mutant:topk-tie-hole", "--suite", small, "--timeout", "45s", "--run", "straddle", "--save-failures", t.TempDir()}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	want := "replay: build/difftest run --suite testdata/small.toml --seed 1 --impl mutant:topk-tie-hole --run '^topk_transform/straddle-k16$' --timeout 45s\n"
	if !strings.Contains(stdout.String(), want) {
		t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
	}
	if !strings.Contains(stdout.String(), "replay: build/difftest replay --impl mutant:topk-tie-hole --timeout 45s ") {
		t.Errorf("the capture's replay line lacks the program or --timeout:\n%s", stdout.String())
	}
}

func TestProgForReplay(t *testing.T) {
	for _, tc := range []struct{ arg0, wd, want string }{
		{"difftest", "/repo", "difftest"}, // found in PATH
		{"build/difftest", "/repo", "build/difftest"},
		{"./build/difftest", "/repo", "build/difftest"},
		{"./difftest", "/repo/build", "./difftest"}, // "difftest" alone would be looked up in PATH
		{"/repo/build/difftest", "/repo", "build/difftest"},
		{"/repo/difftest", "/repo", "./difftest"},
		{"/opt/kd/difftest", "/repo", "/opt/kd/difftest"},
		{"/repo2/build/difftest", "/repo", "/repo2/build/difftest"},
		{"../kd/build/difftest", "/repo", "../kd/build/difftest"},
		{"/my tools/difftest", "/repo", "'/my tools/difftest'"},
		{"/tmp/go-build1234/b001/exe/difftest", "/repo", "go run ./cmd/difftest"},
		{"", "/repo", "difftest"},
	} {
		if got := ProgForReplay(tc.arg0, tc.wd); got != tc.want {
			t.Errorf("ProgForReplay(%q, %q) = %q, want %q", tc.arg0, tc.wd, got, tc.want)
		}
	}
}

// A helper that calls setsid escapes the exec program's process group:
// it is killed after the run and the case's record and table say so
// (issue 9 item 6). (The program waits a little so that the helper has
// left the group when the program ends; before, the group kill gets it.)
func TestExecEscapedProcessIsReported(t *testing.T) {
	dir := t.TempDir()
	prog, pidfile := proctest.EscapingProgram(t, dir)
	jsonPath := filepath.Join(dir, "r.jsonl")
	code, stdout, stderr := run(t, "run", "--impl", "exec:"+prog, "--suite", small, "--run", "gaussian", "--json", jsonPath)
	if code != 1 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	pid := proctest.ReadPid(t, pidfile)
	defer syscall.Kill(pid, syscall.SIGKILL)
	if err := syscall.Kill(pid, 0); err == nil {
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && !strings.Contains(string(stat), ") Z ") {
			t.Errorf("the setsid helper (pid %d) outlived the run", pid)
		}
	}
	const note = "left 1 process(es) running outside its process group (setsid or setpgid escapes the group kill); killed after the run: sleep 1000"
	if !strings.Contains(stdout, "FAIL    topk_transform/gaussian-k8  crash") || !strings.Contains(stdout, "¹ the exec program "+note) {
		t.Errorf("the table lacks the crash or the footnote:\n%s", stdout)
	}
	rep, err := report.ReadJSONLFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Records) != 1 || len(rep.Records[0].Warnings) != 1 || !strings.Contains(rep.Records[0].Warnings[0], note) {
		t.Errorf("record warnings: %+v", rep.Records)
	}
}
