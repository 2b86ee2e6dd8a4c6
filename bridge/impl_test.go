package bridge

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// spawnTest returns a worker command that re-executes this test binary in
// the given worker mode.
func spawnTest(mode string, args ...string) func() *exec.Cmd {
	return func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), envWorker+"="+mode, workerEnv+"=1")
		return cmd
	}
}

// testImpl starts the cuda implementation with the test launchers on a
// worker in the given mode (spawnTest), closed when t ends.
func testImpl(t *testing.T, timeout time.Duration, mode string) *Impl {
	t.Helper()
	im, err := newImpl(timeout, spawnTest(mode), testPackers())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { im.Close() })
	return im
}

// copyCase is a test_copy case of n bytes whose first byte selects a fault.
func copyCase(id string, fault byte, n int) *difftest.Case {
	x := difftest.MustTensor("x", difftest.U8, n)
	for i := range x.Data {
		x.Data[i] = byte(3*i + 7)
	}
	x.Data[0] = fault
	return &difftest.Case{
		ID: "test_copy/" + id, Kernel: testCopyKernel,
		Params:  map[string]int{"n": n, "fault": int(fault)},
		Inputs:  []*difftest.Tensor{x},
		Outputs: []difftest.OutputSpec{{Name: "y", DType: difftest.U8, Shape: []int{n}}},
	}
}

// checkCopy verifies a correct run: y = x ^ 0x5A and both guards intact.
func checkCopy(t *testing.T, c *difftest.Case, b *difftest.Buffer, p difftest.Poison) {
	t.Helper()
	x := c.Inputs[0].Data
	for i := range x {
		if b.Data[i] != x[i]^0x5A {
			t.Fatalf("%s: y[%d] = %#x, want %#x", c.ID, i, b.Data[i], x[i]^0x5A)
		}
	}
	for i := 0; i < b.Guard; i++ {
		if b.Full[i] != byte(p) || b.Full[len(b.Full)-1-i] != byte(p) {
			t.Fatalf("%s: guard byte %d changed", c.ID, i)
		}
	}
}

// The restart path: a crash, a hang, an illegal address and a launch
// failure each fail their own case with their class, the worker is
// replaced, and the next case passes.
func TestWorkerFaultsAndRestart(t *testing.T) {
	im := testImpl(t, 2*time.Second, "fake")
	if !strings.Contains(im.Device(), "Fake GPU (sm_90") {
		t.Errorf("Device() = %q", im.Device())
	}
	if p := im.Properties(); p[difftest.PropDevice] != "Fake GPU (sm_90)" || p[difftest.PropCUDA] != "13.0" {
		t.Errorf("Properties() = %v", p)
	}
	steps := []struct {
		name     string
		fault    byte
		want     difftest.Class
		msg      string
		restarts bool
	}{
		{"first case passes", faultNone, difftest.Pass, "", false},
		{"illegal address", faultIllegal, difftest.IllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS", true},
		{"next case after illegal address", faultNone, difftest.Pass, "", false},
		// A time-out quotes what the worker last printed (on the
		// emulator, where each block was).
		{"hang past the time-out", faultHang, difftest.Timeout, "time-out; GPU worker killed; its last output: fake device: kd_test_copy spins in block (0,0,0)", true},
		{"next case after hang", faultNone, difftest.Pass, "", false},
		{"worker crash", faultCrash, difftest.Crash, "signal: killed", true},
		{"next case after crash", faultNone, difftest.Pass, "", false},
		{"launch failure", faultLaunch, difftest.LaunchError, "CUDA_ERROR_LAUNCH_FAILED", true},
		{"misaligned address", faultMisalign, difftest.IllegalAddress, "CUDA_ERROR_MISALIGNED_ADDRESS", true},
		{"missing entry point (not sticky)", faultNoEntry, difftest.LaunchError, "no entry point kd_test_missing", false},
		// Codes Result.Sticky does not list: the worker probes the context.
		{"unlisted code that loses the context", faultUnknown, difftest.LaunchError, "CUDA_ERROR_UNKNOWN (999); the CUDA context is lost (a probe after it failed: ", true},
		{"next case after the lost context", faultNone, difftest.Pass, "", false},
		{"unlisted code the context survives", faultOutOfRes, difftest.LaunchError, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", false},
		// The device copy of an input is read back after the launch: a
		// kernel that writes it fails, naming the element, and the
		// context survives.
		{"kernel writes its input", faultWriteIn, difftest.InputModified, "input x changed during the run: x[5] was 0x16, now 0x17; 1 of 1013 elements changed (the device copy, read back after the launch)", false},
		{"last case passes", faultNone, difftest.Pass, "", false},
	}
	for i, s := range steps {
		starts := im.starts
		c := copyCase(s.name, s.fault, 1000+i)
		bufs := difftest.NewBuffers(c, difftest.PoisonA)
		t0 := time.Now()
		info, err := im.Run(context.Background(), nil, c, bufs)
		elapsed := time.Since(t0)
		if s.want == difftest.Pass {
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			checkCopy(t, c, bufs[0], difftest.PoisonA)
			if info.KernelTime <= 0 {
				t.Errorf("%s: KernelTime = %v, want > 0", s.name, info.KernelTime)
			}
		} else {
			var re *difftest.RunError
			if !errors.As(err, &re) || re.Class != s.want || !strings.Contains(re.Msg, s.msg) {
				t.Fatalf("%s: got %v, want class %s with %q", s.name, err, s.want, s.msg)
			}
		}
		if s.want == difftest.Timeout && (elapsed < 2*time.Second || elapsed > 10*time.Second) {
			t.Errorf("%s: took %v with a 2 s time-out", s.name, elapsed)
		}
		// A restart happens lazily, at the next case.
		if s.restarts && im.w != nil {
			t.Errorf("%s: the faulted worker is still in use", s.name)
		}
		if !s.restarts && s.want != difftest.Pass && im.w == nil {
			t.Errorf("%s: a non-sticky error dropped the worker", s.name)
		}
		if i > 0 && steps[i-1].restarts && im.starts != starts+1 {
			t.Errorf("%s: %d workers started, want one restart", s.name, im.starts-starts)
		}
	}
	if err := im.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// A context deadline (the harness's per-case time-out) kills the worker
// even when the implementation's own time-out is longer.
func TestContextDeadline(t *testing.T) {
	im := testImpl(t, time.Minute, "fake")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	c := copyCase("hang", faultHang, 64)
	_, err := im.Run(ctx, nil, c, difftest.NewBuffers(c, difftest.PoisonB))
	var re *difftest.RunError
	if !errors.As(err, &re) || re.Class != difftest.Timeout {
		t.Fatalf("got %v, want a timeout", err)
	}
	c = copyCase("after", faultNone, 64)
	bufs := difftest.NewBuffers(c, difftest.PoisonB)
	if _, err := im.Run(context.Background(), nil, c, bufs); err != nil {
		t.Fatal(err)
	}
	checkCopy(t, c, bufs[0], difftest.PoisonB)
}

// Cases the launcher rejects fail before any device work, as invalid
// input naming the tensor and the rule, and keep the worker.
func TestInvalidCaseBeforeLaunch(t *testing.T) {
	im := testImpl(t, time.Minute, "fake")
	c := copyCase("short y", faultNone, 16)
	c.Outputs[0].Shape = []int{15}
	_, err := im.Run(context.Background(), nil, c, difftest.NewBuffers(c, difftest.PoisonA))
	var re *difftest.RunError
	if !errors.As(err, &re) || re.Class != difftest.InvalidCase || !strings.Contains(re.Msg, "y: dimension 0 is 15, must equal n = 16") {
		t.Fatalf("got %v", err)
	}
	c.Kernel = "no_such_kernel"
	_, err = im.Run(context.Background(), nil, c, difftest.NewBuffers(c, difftest.PoisonA))
	if !errors.As(err, &re) || re.Class != difftest.LaunchError || !strings.Contains(re.Msg, `no CUDA launcher for kernel "no_such_kernel"`) {
		t.Fatalf("got %v", err)
	}
	if im.starts != 1 || im.w == nil {
		t.Errorf("starts = %d, worker kept = %v", im.starts, im.w != nil)
	}
}

// A machine that cannot run the kernels is reported by the factory as
// Unavailable, quickly, with a one-line reason.
func TestUnavailable(t *testing.T) {
	dir := t.TempDir()
	fatbin := dir + "/kernels.fatbin"
	if err := os.WriteFile(fatbin, []byte("not checked by the fake"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		spawn func() *exec.Cmd
		want  string
	}{
		{"no device", spawnTest("fake-nodevice"), "CUDA_ERROR_NO_DEVICE"},
		{"no image for this GPU", spawnTest("fake-nobinary"), "no image for sm_80"},
		// The production worker with device 99: "no CUDA driver" here, "--device 99: this machine has N" on a GPU host.
		{"real worker, device 99", spawnTest("real", "--fatbin", fatbin, "--device", "99"), ""},
		{"worker cannot start", func() *exec.Cmd { return exec.Command(dir + "/missing-binary") }, "starting the GPU worker"},
		{"worker dies before hello", func() *exec.Cmd { return exec.Command("/bin/sh", "-c", "echo boom >&2; exit 3") }, "died during start-up: exit status 3: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Now()
			_, err := newImpl(time.Minute, tt.spawn, testPackers())
			var re *difftest.RunError
			if !errors.As(err, &re) || re.Class != difftest.Unavailable {
				t.Fatalf("got %v, want Unavailable", err)
			}
			if !strings.Contains(re.Msg, tt.want) || strings.Contains(re.Msg, "\n") {
				t.Errorf("reason %q: want one line containing %q", re.Msg, tt.want)
			}
			if d := time.Since(t0); d > 5*time.Second {
				t.Errorf("took %v, want under 5 s", d)
			}
		})
	}
}

// The real worker over a driver library that does not exist (forced with
// --driver, whatever the machine has) reports no driver.
func TestRealWorkerWithoutDriver(t *testing.T) {
	dir := t.TempDir()
	fatbin := dir + "/kernels.fatbin"
	if err := os.WriteFile(fatbin, []byte{0x50, 0xed, 0x55, 0xba}, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := newImpl(time.Minute, spawnTest("real", "--fatbin", fatbin, "--driver", missingDriver), packers())
	var re *difftest.RunError
	if !errors.As(err, &re) || re.Class != difftest.Unavailable || !strings.Contains(re.Msg, "no CUDA driver: dlopen "+missingDriver) {
		t.Fatalf("got %v, want Unavailable: no CUDA driver", err)
	}
	// The factory itself, with no fatbin: Unavailable before any process.
	_, err = NewImpl(difftest.ImplOptions{Fatbin: dir + "/none.fatbin"})
	if !errors.As(err, &re) || re.Class != difftest.Unavailable || !strings.Contains(re.Msg, "no fatbin at") {
		t.Fatalf("got %v", err)
	}
}

// An error reply numbered for another request is a protocol error: the
// case fails as a crash, the worker is dropped, and the next case runs on
// a fresh one. (Taking the error at its word would pin the failure on
// the wrong case and keep a worker whose stream is out of step.)
func TestMisnumberedReply(t *testing.T) {
	im := testImpl(t, time.Minute, "fake-misnumbered")
	c := copyCase("misnumbered", faultNone, 64)
	_, err := im.Run(context.Background(), nil, c, difftest.NewBuffers(c, difftest.PoisonA))
	var re *difftest.RunError
	if !errors.As(err, &re) || re.Class != difftest.Crash || !strings.Contains(re.Msg, "protocol error: reply 2 (launch-error)") {
		t.Fatalf("got %v, want a crash: protocol error naming reply 2", err)
	}
	if im.w != nil {
		t.Error("the worker out of step is still in use")
	}
	c = copyCase("after", faultNone, 64)
	bufs := difftest.NewBuffers(c, difftest.PoisonA)
	if _, err := im.Run(context.Background(), nil, c, bufs); err != nil {
		t.Fatal(err)
	}
	checkCopy(t, c, bufs[0], difftest.PoisonA)
	if im.starts != 2 {
		t.Errorf("%d workers started, want 2", im.starts)
	}
}

// ExitGraceEnv: a positive Go duration, default 5 s; anything else is
// refused with a message naming the variable, never replaced by the
// default.
func TestExitGraceFrom(t *testing.T) {
	tests := []struct {
		reason, v string
		want      time.Duration
		err       bool
	}{
		{"unset: the default", "", 5 * time.Second, false},
		{"sanitizer steps of gpu-check", "90s", 90 * time.Second, false},
		{"sub-second", "250ms", 250 * time.Millisecond, false},
		{"no unit", "60", 0, true},
		{"zero would kill every worker at once", "0s", 0, true},
		{"negative", "-5s", 0, true},
		{"not a duration", "long", 0, true},
	}
	for _, tt := range tests {
		got, err := exitGraceFrom(tt.v)
		if tt.err {
			if err == nil || !strings.Contains(err.Error(), ExitGraceEnv+"=") {
				t.Errorf("%s: %q gave %v, %v; want an error naming %s", tt.reason, tt.v, got, err, ExitGraceEnv)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: %q gave %v, %v; want %v", tt.reason, tt.v, got, err, tt.want)
		}
	}
}

// The exit grace decides whether a worker that takes a second to exit
// (as one under compute-sanitizer does while writing its report) is
// waited for or killed.
func TestExitGraceAtClose(t *testing.T) {
	tests := []struct {
		name   string
		grace  time.Duration
		killed bool
	}{
		{"grace longer than the exit", 5 * time.Second, false},
		{"grace shorter than the exit", 200 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			im, err := newImpl(time.Minute, spawnTest("fake-slow-exit"), testPackers())
			if err != nil {
				t.Fatal(err)
			}
			im.exitGrace = tt.grace
			t0 := time.Now()
			err = im.Close()
			if killed := err != nil && strings.Contains(err.Error(), "killed"); killed != tt.killed {
				t.Errorf("Close after %v: %v; killed = %v, want %v", time.Since(t0).Round(time.Millisecond), err, killed, tt.killed)
			}
		})
	}
}

// A fatbin that is a device or too large is refused by its type or size
// before it is read, naming the file (never read whole: /dev/zero).
func TestFatbinBounded(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.fatbin")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxFatbinBytes+1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"/dev/zero", "fatbin /dev/zero: not a regular file (a character device)"},
		{big, "above the limit"},
	} {
		_, err := NewImpl(difftest.ImplOptions{Fatbin: tc.path})
		var re *difftest.RunError
		if !errors.As(err, &re) || re.Class != difftest.Unavailable || !strings.Contains(re.Msg, tc.want) {
			t.Errorf("%s: %v, want unavailable with %q", tc.path, err, tc.want)
		}
	}
}
