// End-to-end tests of the exec protocol (docs/interfaces.md): the program in
// testdata/execimpl is built and driven through NewExecImpl in every
// variant, each of which must produce its own failure class.

package proc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/proc"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
	"github.com/kerneldiff/kerneldiff/internal/proctest"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
	_ "github.com/kerneldiff/kerneldiff/kernels/all" // registers every kernel
)

// execBuild builds testdata/execimpl with the given build tags, once per
// test binary (testBuild), into a folder whose name holds a space, so
// commands must quote the path.
func execBuild(t *testing.T, tags string) string {
	t.Helper()
	return testBuild(t, "./testdata/execimpl", "exec impl", tags)
}

// The test programs (testdata/execimpl, testdata/serveimpl) are built once
// per test binary, by package, folder and tags, into builtDir, which
// TestMain removes.
var built struct {
	sync.Mutex
	dir  string
	bins map[string]string
}

// testBuild builds the program pkg with tags into builtDir/folder/ the
// first time it is asked for, and returns its path; the tests only run it.
func testBuild(t *testing.T, pkg, folder, tags string) string {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	key := pkg + "\x00" + folder + "\x00" + tags
	if bin, ok := built.bins[key]; ok {
		return bin
	}
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "kerneldiff-proc-")
		if err != nil {
			t.Fatal(err)
		}
		built.dir, built.bins = dir, map[string]string{}
	}
	bin := filepath.Join(built.dir, fmt.Sprint(len(built.bins)), folder, filepath.Base(pkg))
	args := []string{"build", "-o", bin}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	built.bins[key] = bin
	return bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

func TestExecImplVariants(t *testing.T) {
	bin := execBuild(t, "")
	k := fakekernel.CopyKernel{}
	for _, tc := range []struct {
		mode  string
		class difftest.Class // of Run's error; Pass: Run succeeds
		check difftest.Class // of Kernel.Check when Run succeeds
		msg   []string       // substrings of the message
	}{
		{"correct", difftest.Pass, difftest.Pass, nil},
		{"extra", difftest.Pass, difftest.Pass, nil},
		{"faulty", difftest.Pass, difftest.Mismatch, []string{"y[0]: got -2, want -3"}},
		{"exit3", difftest.Crash, "", []string{"exit status 3 after", "; stderr: execimpl: deliberate failure, exit 3"}},
		{"panic", difftest.Crash, "", []string{"exit status 2", "panic: execimpl: deliberate panic", "goroutine 1"}},
		{"kill", difftest.Crash, "", []string{"killed by signal 9 (killed)", "stderr empty"}},
		{"noisy", difftest.Crash, "", []string{"exit status 1", "; stderr: …", "noise line 199 xxx", "| execimpl: LAST LINE"}},
		{"wrong-dtype", difftest.BadOutput, "", []string{"out.safetensors: y is I32[2 3], the contract says F32[2 3]"}},
		{"wrong-shape", difftest.BadOutput, "", []string{"out.safetensors: y is F32[6], the contract says F32[2 3]"}},
		{"missing", difftest.MissingOutput, "", []string{"out.safetensors has no y (holds: cache)"}},
		{"garbage", difftest.BadOutput, "", []string{"unreadable out.safetensors", "header length", "runs past the end"}},
		{"truncated", difftest.BadOutput, "", []string{"unreadable out.safetensors", "truncated file"}},
		{"nofile", difftest.BadOutput, "", []string{"exited 0 but wrote no out.safetensors"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			c := fakekernel.CopyCase(2, 3)
			digest := c.Input("x").Digest()
			impl := proc.NewExecImpl(difftest.ShellQuote(bin)+" -mode "+tc.mode, 20*time.Second)
			defer impl.Close()
			if want := "exec:" + difftest.ShellQuote(bin) + " -mode " + tc.mode; impl.Name() != want {
				t.Errorf("Name() = %q, want %q", impl.Name(), want)
			}
			bufs := fakekernel.Buffers(c)
			before := [][]byte{bytes.Clone(bufs[0].Full), bytes.Clone(bufs[1].Full)}
			_, err := impl.Run(context.Background(), k, c, bufs)
			if c.Input("x").Digest() != digest {
				t.Errorf("Run changed the input x")
			}
			if tc.class == difftest.Pass {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				want := []*difftest.Tensor{difftest.MustTensor("y", difftest.F32, 2, 3), fakekernel.Canary(6)}
				if err := k.Reference(c, want); err != nil {
					t.Fatal(err)
				}
				res := k.Check(c, difftest.TensorsOf(bufs), want)
				if res.Class != tc.check {
					t.Fatalf("Check: class %q (%s), want %q", res.Class, res.Message, tc.check)
				}
				texttest.Contains(t, "message", res.Message, tc.msg...)
				if tc.check == difftest.Pass {
					// The canary half of cache came back untouched: the
					// program received it and echoed it.
					if !bytes.Equal(bufs[1].Data[3:], fakekernel.Canary(6).Data[3:]) || !bytes.Equal(bufs[1].Data[:3], []byte{11, 12, 13}) {
						t.Errorf("cache = % x, want 0b 0c 0d then the canary % x", bufs[1].Data, fakekernel.Canary(6).Data[3:])
					}
				}
				for i, b := range bufs {
					if !bytes.Equal(b.Full[:b.Guard], before[i][:b.Guard]) || !bytes.Equal(b.Full[len(b.Full)-b.Guard:], before[i][len(b.Full)-b.Guard:]) {
						t.Errorf("%s: guard bands changed", b.Name)
					}
				}
				return
			}
			var rerr *difftest.RunError
			if !errors.As(err, &rerr) {
				t.Fatalf("Run returned %v (%T), want a *RunError of class %q", err, err, tc.class)
			}
			t.Log(rerr)
			if rerr.Class != tc.class {
				t.Errorf("class %q (%s), want %q", rerr.Class, rerr.Msg, tc.class)
			}
			if strings.Contains(rerr.Msg, "\n") {
				t.Errorf("message spans lines: %q", rerr.Msg)
			}
			if len(rerr.Msg) > proc.ExecStderrTail+200 {
				t.Errorf("message is %d bytes, want the stderr tail bounded", len(rerr.Msg))
			}
			texttest.Contains(t, "message", rerr.Msg, tc.msg...)
			for i, b := range bufs {
				if !bytes.Equal(b.Full, before[i]) {
					t.Errorf("%s: a failed run changed the buffer", b.Name)
				}
			}
		})
	}
}

// runCopy runs the copy kernel through impl on a fresh CopyCase(rows,
// cols) and its buffers.
func runCopy(ctx context.Context, impl difftest.Impl, rows, cols int) (difftest.RunInfo, error) {
	c := fakekernel.CopyCase(rows, cols)
	return impl.Run(ctx, fakekernel.CopyKernel{}, c, fakekernel.Buffers(c))
}

// execStopped starts a run of the hang variant (its pid file pidfile) in
// the background, waits for its pids and calls stop (Close, a cancel);
// the run must then return within 10 s, and the program and its child be
// gone. It returns Run's error.
func execStopped(t *testing.T, ctx context.Context, impl difftest.Impl, pidfile, what string, stop func()) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := runCopy(ctx, impl, 1, 1)
		done <- err
	}()
	pid, child, _ := execPids(t, pidfile)
	stop()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("Run did not return after %s", what)
	}
	execGone(t, pid, "the program")
	execGone(t, child, "the program's child")
	return err
}

// execPids waits for the hang variant's pid file: its pid, its child's
// pid, and the in.safetensors path.
func execPids(t *testing.T, pidfile string) (pid, child int, in string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(pidfile)
		if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); err == nil && len(lines) == 3 {
			pid, err1 := strconv.Atoi(lines[0])
			child, err2 := strconv.Atoi(lines[1])
			if err1 == nil && err2 == nil {
				return pid, child, lines[2]
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no pid file %s", pidfile)
	return 0, 0, ""
}

// execGone waits up to 5 s for the process to be gone: no such pid, or a
// zombie nobody has reaped yet (an orphan in a container whose init does
// not reap).
func execGone(t *testing.T, pid int, what string) {
	t.Helper()
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return
		}
	}
	t.Errorf("%s (pid %d) still running", what, pid)
	syscall.Kill(pid, syscall.SIGKILL)
}

// TestExecRealKernels drives the real kernel contracts through the exec
// protocol: the program (built with -tags kd_kernels) rebuilds each case
// from in.safetensors with the kernel's FromTensors and answers with the
// Go reference, starting the InOut cache from the canary it received; its
// faulty variant must then fail the kernel's own Check.
// TestExecImplStatesVersion: the version line and device an
// out.safetensors states are the implementation's properties (the report
// header's impl_version and device), none before a run; a version over
// ServeMaxText bytes is ignored.
func TestExecImplStatesVersion(t *testing.T) {
	bin := execBuild(t, "")
	for _, tc := range []struct{ mode, version, device string }{
		{"correct", "execimpl 1", "execimpl test device"},
		{"long-version", "", "execimpl test device"},
	} {
		impl := proc.NewExecImpl(difftest.ShellQuote(bin)+" -mode "+tc.mode, 20*time.Second)
		pp, ok := impl.(difftest.PropertyProvider)
		if !ok {
			t.Fatal("the exec implementation is no PropertyProvider")
		}
		if props := pp.Properties(); len(props) != 0 {
			t.Errorf("%s: properties %v before any run, want none", tc.mode, props)
		}
		if _, err := runCopy(context.Background(), impl, 2, 3); err != nil {
			t.Fatalf("%s: Run: %v", tc.mode, err)
		}
		props := pp.Properties()
		if props[difftest.PropImplVersion] != tc.version || props[difftest.PropDevice] != tc.device {
			t.Errorf("%s: properties %v, want impl_version %q and device %q", tc.mode, props, tc.version, tc.device)
		}
		impl.Close()
	}
}

func TestExecRealKernels(t *testing.T) {
	bin := execBuild(t, "kd_kernels")
	topk := map[string]any{"K": int64(16), "P": int64(4), "lengths": []any{int64(300), int64(17), int64(16), int64(15), int64(1), int64(0)}, "pages": "perm"}
	for _, tc := range []struct {
		kernel, family, name string
		params               map[string]any
	}{
		{"topk_transform", "gaussian", "gaussian", topk},
		{"topk_transform", "needle", "needle", topk},
		{"topk_transform", "equal", "equal", topk},
		{"topk_transform", "specials", "specials", topk},
		{"norm_rope_store", "gaussian", "v32-fp8", map[string]any{"preset": "v32", "N": int64(9), "P": int64(64)}},
		{"norm_rope_store", "gaussian", "v4-bf16", map[string]any{"preset": "v4-bf16", "N": int64(7), "P": int64(1)}},
	} {
		k, ok := difftest.LookupKernel(tc.kernel)
		if !ok {
			t.Fatalf("%s is not registered", tc.kernel)
		}
		spec := difftest.CaseSpec{Kernel: tc.kernel, Family: tc.family, Name: "exec-" + tc.name, Params: tc.params}
		c, err := k.NewCase(spec, 7, 0x243f6a8885a308d3)
		if err != nil {
			t.Fatal(err)
		}
		want := difftest.TensorsOf(fakekernel.Buffers(c)) // InOut outputs start from the canary
		if err := k.Reference(c, want); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []struct {
			name string
			want difftest.Class
		}{{"correct", difftest.Pass}, {"faulty", difftest.Mismatch}} {
			t.Run(spec.ID()+"/"+mode.name, func(t *testing.T) {
				impl := proc.NewExecImpl(difftest.ShellQuote(bin)+" -mode "+mode.name, 30*time.Second)
				defer impl.Close()
				bufs := fakekernel.Buffers(c)
				if _, err := impl.Run(context.Background(), k, c, bufs); err != nil {
					t.Fatalf("Run: %v", err)
				}
				res := k.Check(c, difftest.TensorsOf(bufs), want)
				t.Logf("Check: %q %s", res.Class, res.Message)
				if res.Class != mode.want {
					t.Errorf("Check: class %q (%s), want %q", res.Class, res.Message, mode.want)
				}
				if mode.want == difftest.Pass {
					for i := range bufs {
						if !bytes.Equal(bufs[i].Data, want[i].Data) {
							t.Errorf("%s differs from the in-process reference", bufs[i].Name)
						}
					}
				}
			})
		}
	}
}

func TestExecImplTimeout(t *testing.T) {
	bin := execBuild(t, "")
	pidfile := filepath.Join(t.TempDir(), "pids")
	impl := proc.NewExecImpl(difftest.ShellQuote(bin)+" -mode hang -pidfile "+difftest.ShellQuote(pidfile), 1500*time.Millisecond)
	defer impl.Close()
	start := time.Now()
	_, err := runCopy(context.Background(), impl, 2, 3)
	elapsed := time.Since(start)
	var rerr *difftest.RunError
	if !errors.As(err, &rerr) || rerr.Class != difftest.Timeout {
		t.Fatalf("Run returned %v, want class timeout", err)
	}
	texttest.Contains(t, "message", rerr.Msg, "no exit after 1.5s; process group killed")
	if elapsed < 1500*time.Millisecond || elapsed > 8*time.Second {
		t.Errorf("Run took %v, want about the 1.5 s time-out", elapsed)
	}
	pid, child, in := execPids(t, pidfile)
	execGone(t, pid, "the program")
	execGone(t, child, "the program's child")
	if _, err := os.Stat(filepath.Dir(in)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary folder %s not removed: %v", filepath.Dir(in), err)
	}
}

func TestExecImplCloseKillsRunning(t *testing.T) {
	bin := execBuild(t, "")
	pidfile := filepath.Join(t.TempDir(), "pids")
	impl := proc.NewExecImpl(difftest.ShellQuote(bin)+" -mode hang -pidfile "+difftest.ShellQuote(pidfile), 0)
	err := execStopped(t, context.Background(), impl, pidfile, "Close", func() {
		if err := impl.Close(); err != nil {
			t.Fatal(err)
		}
	})
	if err == nil || !strings.Contains(err.Error(), "exec implementation closed") {
		t.Errorf("Run returned %v, want the closed error", err)
	}
	_, err = runCopy(context.Background(), impl, 1, 1)
	var rerr *difftest.RunError
	if !errors.As(err, &rerr) || rerr.Class != difftest.LaunchError {
		t.Errorf("Run after Close: %v, want a launch-error", err)
	}
}

func TestExecImplContextCancel(t *testing.T) {
	bin := execBuild(t, "")
	pidfile := filepath.Join(t.TempDir(), "pids")
	impl := proc.NewExecImpl(difftest.ShellQuote(bin)+" -mode hang -pidfile "+difftest.ShellQuote(pidfile), time.Minute)
	defer impl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	if err := execStopped(t, ctx, impl, pidfile, "cancel", cancel); !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v, want context.Canceled", err)
	}
}

// A command that does not parse fails each case with launch-error; a
// program that cannot be started is "nothing can be tested" (issue 9 item
// 6): class unavailable, which stops the run with exit 125.
func TestExecImplLaunchErrors(t *testing.T) {
	for _, tc := range []struct {
		cmd   string
		class difftest.Class
		msg   string
	}{
		{"/nonexistent/kerneldiff-impl --flag", difftest.Unavailable, "cannot start /nonexistent/kerneldiff-impl"},
		{"kerneldiff-no-such-program-on-path", difftest.Unavailable, "executable file not found"},
		{"'unterminated", difftest.LaunchError, "unterminated ' quote"},
		{"   ", difftest.LaunchError, "no program named"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			impl := proc.NewExecImpl(tc.cmd, time.Second)
			defer impl.Close()
			_, err := runCopy(context.Background(), impl, 1, 1)
			var rerr *difftest.RunError
			if !errors.As(err, &rerr) || rerr.Class != tc.class || !strings.Contains(rerr.Msg, tc.msg) {
				t.Errorf("got %v, want a %s mentioning %q", err, tc.class, tc.msg)
			}
		})
	}
}

// OpenExecImpl (what --impl exec:CMD uses) refuses a program that cannot
// be started before any case runs, saying which rule it breaks.
func TestOpenExecImplChecksTheProgram(t *testing.T) {
	dir := t.TempDir()
	plain := texttest.WriteFile(t, filepath.Join(dir, "not-executable"), "#!/bin/sh\nexit 0\n", 0o644)
	script := texttest.WriteFile(t, filepath.Join(dir, "ok"), "#!/bin/sh\nexit 0\n", 0o755)
	for _, tc := range []struct {
		reason, cmd string
		msg         string // "" = opens
	}{
		{"no such file", "/nonexistent/prog", "cannot start /nonexistent/prog: no such file"},
		{"mode 0644", difftest.ShellQuote(plain) + " --x", "cannot start " + plain + ": not executable (mode -rw-r--r--)"},
		{"a folder", difftest.ShellQuote(dir), "cannot start " + dir + ": is a folder, not a program"},
		{"not in PATH", "kerneldiff-no-such-program-on-path", "cannot start kerneldiff-no-such-program-on-path: not found in PATH"},
		{"an executable script", difftest.ShellQuote(script) + " arg", ""},
		{"a program in PATH", "sh -c true", ""},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			impl, err := proc.OpenExecImpl(tc.cmd, time.Second)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("OpenExecImpl(%q): %v", tc.cmd, err)
				}
				impl.Close()
				return
			}
			var rerr *difftest.RunError
			if !errors.As(err, &rerr) || rerr.Class != difftest.Unavailable || !strings.Contains(rerr.Msg, tc.msg) || strings.Contains(rerr.Msg, "\n") {
				t.Errorf("OpenExecImpl(%q) = %v, want one line of class unavailable with %q", tc.cmd, err, tc.msg)
			}
		})
	}
	if _, err := proc.OpenExecImpl("'unterminated", time.Second); !errors.Is(err, difftest.ErrUnknownImpl) {
		t.Errorf("a command that does not parse: %v, want ErrUnknownImpl (a usage error)", err)
	}
}

// A program whose helper calls setsid leaves the process group, so the
// group kill misses it and it would outlive the case and difftest (issue 9
// item 6). The harness finds it by the run's ExecRunEnv tag, kills it, and
// says so in the run's warnings.
func TestExecImplKillsEscapedDescendants(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid program here")
	}
	// The helper holds stderr open too: Run must not wait for it.
	prog, pidfile := proctest.EscapingProgram(t, t.TempDir())
	impl := proc.NewExecImpl(difftest.ShellQuote(prog), 20*time.Second)
	defer impl.Close()
	start := time.Now()
	info, err := runCopy(context.Background(), impl, 1, 1)
	elapsed := time.Since(start)
	var rerr *difftest.RunError
	if !errors.As(err, &rerr) || rerr.Class != difftest.Crash {
		t.Errorf("Run: %v, want a crash (exit status 3)", err)
	}
	if elapsed > 1500*time.Millisecond {
		t.Errorf("Run took %v: it waited for the escaped helper's stderr", elapsed)
	}
	execGone(t, proctest.ReadPid(t, pidfile), "the setsid helper")
	if len(info.Warnings) != 1 || !strings.Contains(info.Warnings[0], "left 1 process(es) running outside its process group") || !strings.Contains(info.Warnings[0], "sleep 1000") {
		t.Errorf("warnings %q, want one naming the escaped sleep 1000", info.Warnings)
	}
}

func TestSplitCommand(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		err      string
	}{
		{"words split on blanks", "prog  -a\tb\nc", []string{"prog", "-a", "b", "c"}, ""},
		{"leading and trailing blanks", "  prog x  ", []string{"prog", "x"}, ""},
		{"single quotes keep everything", `'/opt/my impl/run' '$HOME \n "x"'`, []string{"/opt/my impl/run", `$HOME \n "x"`}, ""},
		{"double quotes: escapes of \" \\ $ `", `"a \"b\" \\ \$ \` + "`" + ` \n"`, []string{"a \"b\" \\ $ ` \\n"}, ""},
		{"backslash outside quotes", `my\ prog a\'b`, []string{"my prog", "a'b"}, ""},
		{"quotes join adjacent text", `--model='a b'"c"d`, []string{"--model=a bcd"}, ""},
		{"empty quoted words", `prog '' ""`, []string{"prog", "", ""}, ""},
		{"python with a script", "python3 -u ref.py --k 2048", []string{"python3", "-u", "ref.py", "--k", "2048"}, ""},
		{"unterminated single quote", "prog 'a", nil, "unterminated ' quote at byte 5"},
		{"unterminated double quote", `prog "a\"`, nil, `unterminated " quote at byte 5`},
		{"trailing backslash", `prog a\`, nil, "trailing backslash"},
		{"empty", "", nil, "no program named"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := proc.SplitCommand(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("SplitCommand(%q) = %q, %v; want error %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("SplitCommand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

// execPythonImpl is copy_kernel as an exec program in Python, with the
// safetensors package of Hugging Face: the protocol as a PyTorch or NumPy
// reference would speak it. argv: [--wrong-dtype] IN OUT.
const execPythonImpl = `import json, sys
import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

args = sys.argv[1:]
wrong = args[0] == "--wrong-dtype"
src, dst = args[-2:]
with safe_open(src, "np") as f:
    meta = f.metadata()
    x, cache = f.get_tensor("x"), f.get_tensor("cache").copy()
assert meta["kernel"] == "copy_kernel", meta
p = json.loads(meta["params"])
assert x.dtype == np.float32 and x.shape == (p["rows"], p["cols"]), (x.dtype, x.shape)
n = cache.size // 2
cache[:n] = (p["stamp"] + np.arange(n)).astype(np.uint8)
y = x.view(np.int32) if wrong else x
save_file({"y": np.ascontiguousarray(y), "cache": cache}, dst, metadata={"case": meta["case"]})
`

// TestExecPython drives a Python exec program through the protocol, so
// the files are checked against the reference safetensors implementation
// in both directions. It needs KD_PYTHON (make gotest sets it) with the
// safetensors and numpy packages.
func TestExecPython(t *testing.T) {
	py := os.Getenv("KD_PYTHON")
	skip := t.Skipf
	if os.Getenv("CI") != "" {
		skip = t.Fatalf // CI runs make gotest, which provides them
	}
	if py == "" {
		skip("KD_PYTHON is not set (scripts/setup-pytools, then KD_PYTHON=.venv/bin/python)")
		return
	}
	if out, err := exec.Command(py, "-c", "import safetensors, numpy").CombinedOutput(); err != nil {
		skip("%s lacks safetensors or numpy: %s", py, out)
		return
	}
	script := texttest.WriteFile(t, filepath.Join(t.TempDir(), "copy_kernel.py"), execPythonImpl, 0o644)
	k := fakekernel.CopyKernel{}
	for _, tc := range []struct {
		name       string
		flag       string
		rows, cols int
		class      difftest.Class
	}{
		{"correct", "", 3, 4, difftest.Pass},
		{"correct, zero rows", "", 0, 4, difftest.Pass},
		{"wrong dtype", "--wrong-dtype", 3, 4, difftest.BadOutput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakekernel.CopyCase(tc.rows, tc.cols)
			impl := proc.NewExecImpl(difftest.ShellQuote(py)+" "+difftest.ShellQuote(script)+" "+tc.flag, 60*time.Second)
			defer impl.Close()
			bufs := fakekernel.Buffers(c)
			_, err := impl.Run(context.Background(), k, c, bufs)
			if tc.class != difftest.Pass {
				var rerr *difftest.RunError
				if !errors.As(err, &rerr) || rerr.Class != tc.class {
					t.Fatalf("Run: %v, want class %q", err, tc.class)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			want := []*difftest.Tensor{difftest.MustTensor("y", difftest.F32, tc.rows, tc.cols), fakekernel.Canary(2 * tc.cols)}
			if err := k.Reference(c, want); err != nil {
				t.Fatal(err)
			}
			if res := k.Check(c, difftest.TensorsOf(bufs), want); res.Failed() {
				t.Errorf("Check: %s %s", res.Class, res.Message)
			}
		})
	}
}

// TestExecNotImplemented: a program that exits with status 125 does not
// implement the case's kernel: the case is not tested (unavailable,
// Skip), as under serve, with the program's reason; and the request
// states the case's outputs in __metadata__["outputs"] and the run's
// poison in __metadata__["poison"].
func TestExecNotImplemented(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	meta := filepath.Join(dir, "meta")
	script := "#!/bin/sh\nhead -c 4096 \"$1\" > " + difftest.ShellQuote(meta) + "\necho 'kernel copy is not implemented here' >&2\nexit 125\n"
	texttest.WriteFile(t, prog, script, 0o755)
	impl := proc.NewExecImpl(difftest.ShellQuote(prog), time.Minute)
	defer impl.Close()
	c := fakekernel.CopyCase(2, 3)
	_, err := impl.Run(context.Background(), fakekernel.CopyKernel{}, c, fakekernel.Buffers(c))
	var rerr *difftest.RunError
	if !errors.As(err, &rerr) || rerr.Class != difftest.Unavailable || !rerr.Skip {
		t.Fatalf("Run returned %v, want unavailable with Skip", err)
	}
	texttest.Contains(t, "message", rerr.Msg, "does not implement "+c.Kernel, "not tested", "is not implemented here")
	head, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	o := c.Outputs[0]
	want := fmt.Sprintf(`"outputs":"[{\"name\":\"%s\",\"dtype\":\"%s\",\"shape\":[`, o.Name, o.DType)
	if !strings.Contains(string(head), want) {
		t.Errorf("request header %q does not state the outputs (%s)", head, want)
	}
	if want := `"poison":"238"`; !strings.Contains(string(head), want) { // fakekernel.Buffers' guard byte 0xEE
		t.Errorf("request header %q does not state the run's poison (%s)", head, want)
	}
}

// A program's note in out.safetensors' __metadata__ (MetaNote) becomes
// one warning line of the run, bounded by ProgramNoteMax.
func TestExecNote(t *testing.T) {
	bin := execBuild(t, "")
	impl := proc.NewExecImpl(difftest.ShellQuote(bin)+" -mode note", 20*time.Second)
	defer impl.Close()
	info, err := runCopy(context.Background(), impl, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Warnings) != 1 {
		t.Fatalf("warnings %q, want one", info.Warnings)
	}
	w := info.Warnings[0]
	want := "the program says: a note | on two lines éé"
	if !strings.HasPrefix(w, want) || !strings.HasSuffix(w, "é…") || !utf8.ValidString(w) || len(w) > len("the program says: ")+proc.ProgramNoteMax+len("…") {
		t.Errorf("warning %q (%d bytes), want %q… cut at %d bytes", w, len(w), want, proc.ProgramNoteMax)
	}
}
