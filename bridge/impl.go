// The `cuda` implementation: runs each case in a GPU worker process and
// restarts the worker after a fault, so an illegal address, a launch
// failure or a hang fails one case and the suite goes on (docs/running.md).

package bridge

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/proc"
)

// DefaultFatbin is the fatbin `make kernels` writes, used when --fatbin is
// not given.
const DefaultFatbin = "build/kernels.fatbin"

// Time limits of the worker's life cycle.
const (
	// startTimeout bounds a worker's start-up: cuInit, the primary context
	// and the module load (JIT of PTX included).
	startTimeout = 60 * time.Second
	// defaultCaseTimeout applies when --timeout is 0.
	defaultCaseTimeout = 2 * time.Minute
	// defaultExitGrace is how long Close and a sticky reply wait for the
	// worker to exit before killing it, unless ExitGraceEnv says otherwise.
	defaultExitGrace = 5 * time.Second
)

// ExitGraceEnv names the environment variable that sets how long the
// `cuda` implementation waits for a worker to exit (at Close, and after a
// reply that reports a lost context) before it kills it: a Go duration
// ("60s"), positive; default 5s. A worker under compute-sanitizer writes
// its report as it exits, which can take far longer than an
// uninstrumented exit; scripts/gpu-check sets 30s for its sanitizer steps
// so that no report is cut off by the kill.
const ExitGraceEnv = "KD_WORKER_EXIT_GRACE"

// exitGraceFrom parses ExitGraceEnv's value; "" gives the default.
func exitGraceFrom(v string) (time.Duration, error) {
	if v == "" {
		return defaultExitGrace, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 60s", ExitGraceEnv, v)
	}
	return d, nil
}

// Impl is the `cuda` implementation. Its methods are safe for concurrent
// use; cases run one at a time.
type Impl struct {
	mu        sync.Mutex
	name      string // "cuda" or "emu"
	timeout   time.Duration
	exitGrace time.Duration    // wait for a worker's own exit before killing it
	spawn     func() *exec.Cmd // a fresh worker command
	packers   map[string]packer
	w         *workerProc
	device    string
	props     map[string]string
	seq       uint64
	starts    int // workers started, for tests and messages
	// baseline is the --baseline fatbin's path ("" without one), base the
	// Impl that runs it (bench.go).
	baseline string
	base     *baselineImpl
	// count is the device count the first worker's hello reported.
	count int
	// adapters, over an adapter library (cudasrc), are the kernels it
	// implements (the first worker's hello); nil over a fatbin.
	adapters map[string]bool
}

// workerProc is one running worker.
type workerProc struct {
	cmd     *exec.Cmd
	enc     *gob.Encoder
	reqW    *os.File
	replies chan reply    // closed when the reply stream ends
	done    chan struct{} // closed when the process has been reaped
	waitErr error
	out     *tail
	// escaped names the processes the worker left outside its process
	// group (setsid), killed once it had exited (proc.KillEscaped).
	escaped []string
}

// WorkerRunEnv is the environment variable every worker runs with, set to
// a value unique to that worker: once it has exited, its process group is
// killed and so is every process that carries the value but left the
// group (a helper an adapter or a library it loads started with setsid),
// as the exec path does (proc.ExecRunEnv).
const WorkerRunEnv = "KERNELDIFF_WORKER_RUN"

// workerOutputGrace bounds the wait for the worker's stdout and stderr to
// close once it has exited and what it left has been killed: a descendant
// that escaped both the group and the tag still holds them.
const workerOutputGrace = 2 * time.Second

// MaxFatbinBytes bounds a fatbin difftest reads (--fatbin, the worker,
// info): the kernels' is under 1 MiB; a file beyond this, or one that is
// not a regular file (/dev/zero, a FIFO), is refused before it is read.
const MaxFatbinBytes = 256 << 20

// ReadFatbin reads the fatbin at path within MaxFatbinBytes.
func ReadFatbin(path string) ([]byte, error) {
	return difftest.ReadFileLimit(path, MaxFatbinBytes)
}

// DriverEnv names the environment variable that, when set, is the
// driver library the `cuda` and `emu` implementations and `difftest info`
// dlopen instead of their default (a file path, or a soname searched as
// dlopen(3) does). Tests set it to a path that does not exist to force "no
// driver" whatever the machine has; scripts may point it at one driver
// installation.
const DriverEnv = "KD_LIBCUDA"

// DefaultEmuDriver is the emulated driver (kernels/emu/libcuda_emu.cu,
// built by `make emu-lib` and `make difftest IMPL=emu`) that `--impl emu`
// loads when DriverEnv is not set, relative to the working directory.
const DefaultEmuDriver = "build/emu-driver/libcuda.so.1"

// EmulatorDevice is the device name the emulated driver reports
// (cuDeviceGetName); `--impl emu` refuses any other device, and a run on
// it is labelled emulated (difftest.PropEmulated).
const EmulatorDevice = "kerneldiff host emulator"

// DriverPath is the library the `cuda` implementation's worker loads:
// DriverEnv when set, else libcuda.so.1.
func DriverPath() string {
	if p := os.Getenv(DriverEnv); p != "" {
		return p
	}
	return cuda.LibraryName
}

// NewImpl is the factory registered as "cuda". It starts the first worker
// at once, so a machine that cannot run the kernels is known before any
// case: no driver, no device, --device out of range, no fatbin, or a
// fatbin with no image for this GPU give a *difftest.RunError of class
// Unavailable whose message is the one-line reason (with, when there is
// no driver or device, how to run without a GPU instead); so do a fatbin
// whose kernels take another parameter layout than the launchers pack
// (checkFatbinParams, before any worker starts) and a malformed
// ExitGraceEnv. The worker loads DriverEnv's library when it is set.
// With opts.AllDevices or several opts.Devices it opens one worker per
// device and returns a *DeviceSet (a difftest.Pool).
func NewImpl(opts difftest.ImplOptions) (difftest.Impl, error) {
	if opts.AllDevices || len(opts.Devices) > 1 {
		return openDevices(opts, NewImpl)
	}
	if len(opts.Devices) == 1 {
		opts.Device = opts.Devices[0]
	}
	if err := cuda.CheckLibraryPath(DriverPath()); err != nil {
		return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: DriverEnv + ": " + err.Error()}
	}
	im, err := newDeviceImpl(opts, "cuda", DriverPath())
	if err != nil {
		var re *difftest.RunError
		if errors.As(err, &re) && re.Class == difftest.Unavailable && noDevice(re.Msg) {
			re.Msg += noGPUHint
		}
		return nil, err
	}
	return im, nil
}

// noGPUHint ends the one-line reason of a `cuda` run that found no driver
// or device: the two ways to run without a GPU.
const noGPUHint = "; without a GPU, run the kernels' CUDA source on the CPU emulator (make difftest IMPL=emu, or --impl emu) or the Go reference (--impl reference)"

// noDevice tells whether an Unavailable message is about the machine
// (no driver, no device) rather than the fatbin or the flags.
func noDevice(msg string) bool {
	return strings.Contains(msg, "no CUDA driver") || strings.Contains(msg, "CUDA_ERROR_NO_DEVICE")
}

// NewEmuImpl is the factory registered as "emu": the `cuda` implementation
// (worker process, dlopen shim, launchers, fatbin image rule) over the
// emulated driver, which runs the kernels' CUDA source on the CPU. The
// library is DriverEnv's when set, else DefaultEmuDriver; it must exist
// and report EmulatorDevice, so a GPU is never labelled emulated and an
// emulator never passes for a GPU. Errors are *difftest.RunError of class
// Unavailable, as for NewImpl.
func NewEmuImpl(opts difftest.ImplOptions) (difftest.Impl, error) {
	if opts.AllDevices || len(opts.Devices) > 1 {
		return openDevices(opts, NewEmuImpl)
	}
	if len(opts.Devices) == 1 {
		opts.Device = opts.Devices[0]
	}
	lib := os.Getenv(DriverEnv)
	if lib == "" {
		lib = DefaultEmuDriver
	}
	abs, err := filepath.Abs(lib)
	if err != nil {
		return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: err.Error()}
	}
	if st, err := os.Stat(abs); err != nil || !st.Mode().IsRegular() {
		return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: fmt.Sprintf("no emulated driver at %s (make emu-lib builds it; make difftest IMPL=emu builds it and runs)", lib)}
	}
	im, err := newDeviceImpl(opts, "emu", abs)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(im.device, EmulatorDevice) {
		im.Close()
		return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: fmt.Sprintf("%s is not the emulated driver (its device is %q): --impl emu runs only on %s; use --impl cuda for a GPU", lib, im.device, EmulatorDevice)}
	}
	return im, nil
}

// newDeviceImpl starts the worker of implementation name over the driver
// library at lib (see NewImpl for the errors).
func newDeviceImpl(opts difftest.ImplOptions, name, lib string) (*Impl, error) {
	fatbin := opts.Fatbin
	if fatbin == "" {
		fatbin = DefaultFatbin
	}
	abs, err := filepath.Abs(fatbin)
	if err != nil {
		return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: err.Error()}
	}
	fb, err := ReadFatbin(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: fmt.Sprintf("no fatbin at %s (run `make kernels` or pass --fatbin)", fatbin)}
		}
		return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: fmt.Sprintf("fatbin %s: %v", fatbin, err)}
	}
	if err := checkFatbinParams(fatbin, fb, entryParams()); err != nil {
		return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: err.Error()}
	}
	var baseAbs string
	var baseFB []byte
	if opts.Baseline != "" {
		if baseAbs, err = filepath.Abs(opts.Baseline); err == nil {
			baseFB, err = ReadFatbin(baseAbs)
		}
		if err != nil {
			return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: fmt.Sprintf("baseline fatbin: %v", err)}
		}
		if err := checkFatbinParams(opts.Baseline, baseFB, entryParams()); err != nil {
			return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: "baseline: " + err.Error()}
		}
	}
	grace, err := exitGraceFrom(os.Getenv(ExitGraceEnv))
	if err != nil {
		return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: err.Error()}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: "cannot find this program to start the GPU worker: " + err.Error()}
	}
	args := []string{WorkerCommand, "--fatbin", abs, "--device", strconv.Itoa(opts.Device), "--driver", lib}
	if baseAbs != "" {
		args = append(args, "--baseline", baseAbs)
	}
	im, rerr := newImpl(opts.Timeout, workerSpawn(exe, args, opts.Timeout), packers())
	if rerr != nil {
		return nil, rerr
	}
	im.name = name
	im.exitGrace = grace
	sum := sha256.Sum256(fb)
	im.props[difftest.PropFatbin] = hex.EncodeToString(sum[:])
	if baseAbs != "" {
		im.baseline, im.base = baseAbs, &baselineImpl{im}
		bsum := sha256.Sum256(baseFB)
		im.props[PropBaselineFatbin] = hex.EncodeToString(bsum[:])
	}
	if strings.HasPrefix(im.device, EmulatorDevice) {
		im.props[difftest.PropEmulated] = "the kernels' CUDA source on the CPU emulator (" + lib + "), not a GPU"
	}
	return im, nil
}

// workerSpawn returns the command that starts a worker: this program
// (exe) with args, in a process group of its own: a Ctrl-C at the
// terminal reaches difftest, which reports and closes the worker, not the
// worker mid-case (a spurious crash). It exits at the end of its requests
// (EOF), also when difftest is killed. With a per-case timeout > 0 it
// sets HangReportEnv to 9/10 of it, so an emulated launch still running
// then prints where each block is before the harness kills the worker
// (its message quotes it, lastWords).
func workerSpawn(exe string, args []string, timeout time.Duration) func() *exec.Cmd {
	return func() *exec.Cmd {
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), workerEnv+"=1")
		if timeout > 0 {
			cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", HangReportEnv, (timeout*9/10).Milliseconds()))
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd
	}
}

// newImpl builds the implementation over any worker command (tests start
// a fake-device worker) and starts its first worker.
func newImpl(timeout time.Duration, spawn func() *exec.Cmd, pk map[string]packer) (*Impl, error) {
	if timeout <= 0 {
		timeout = defaultCaseTimeout
	}
	im := &Impl{name: "cuda", timeout: timeout, exitGrace: defaultExitGrace, spawn: spawn, packers: pk}
	if err := im.start(context.Background(), true); err != nil {
		return nil, err
	}
	if im.props == nil {
		im.props = map[string]string{}
	}
	return im, nil
}

// Name implements difftest.Impl: "cuda", or "emu" on the emulated driver.
func (im *Impl) Name() string { return im.name }

// Device describes the device the first worker opened.
func (im *Impl) Device() string { return im.device }

// Properties implements difftest.PropertyProvider: the device, its CUDA
// and driver versions (from the first worker) and the fatbin's SHA-256.
func (im *Impl) Properties() map[string]string {
	im.mu.Lock()
	defer im.mu.Unlock()
	out := make(map[string]string, len(im.props))
	for k, v := range im.props {
		out[k] = v
	}
	return out
}

// start launches a worker and waits for its hello. first selects the
// class of a failure: Unavailable for the first worker (nothing can be
// tested here), Crash for a restart.
func (im *Impl) start(ctx context.Context, first bool) *difftest.RunError {
	failClass := difftest.Crash
	if first {
		failClass = difftest.Unavailable
	}
	cmd := im.spawn()
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return &difftest.RunError{Class: failClass, Msg: "worker pipe: " + err.Error()}
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return &difftest.RunError{Class: failClass, Msg: "worker pipe: " + err.Error()}
	}
	// stdout and stderr are a pipe of ours, not an io.Writer, so that Wait
	// returns when the worker exits, not when the last helper holding the
	// pipe does; the worker runs in a process group of its own (whatever
	// spawn set), killed with what it left once it has exited.
	outR, outW, err := os.Pipe()
	if err != nil {
		for _, f := range []*os.File{reqR, reqW, repR, repW} {
			f.Close()
		}
		return &difftest.RunError{Class: failClass, Msg: "worker pipe: " + err.Error()}
	}
	out := &tail{max: 4096}
	tag := WorkerRunEnv + "=" + rand.Text()
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, tag)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = outW, outW
	cmd.ExtraFiles = []*os.File{reqR, repW} // fds 3 and 4
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{reqR, reqW, repR, repW, outR, outW} {
			f.Close()
		}
		return &difftest.RunError{Class: failClass, Msg: "starting the GPU worker: " + err.Error()}
	}
	reqR.Close()
	repW.Close()
	outW.Close()
	im.starts++
	w := &workerProc{cmd: cmd, enc: gob.NewEncoder(reqW), reqW: reqW, replies: make(chan reply, 1), done: make(chan struct{}), out: out}
	go func() {
		defer close(w.replies)
		defer repR.Close()
		dec := gob.NewDecoder(repR)
		for {
			var r reply
			if dec.Decode(&r) != nil {
				return
			}
			w.replies <- r
		}
	}()
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, outR)
	}()
	go func() {
		w.waitErr = cmd.Wait()
		// Kill whatever the worker left in its group (ESRCH when nothing
		// is), then whatever left the group but carries its tag.
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		w.escaped = proc.KillEscaped(tag, pgid)
		select {
		case <-copied:
		case <-time.After(workerOutputGrace):
		}
		outR.Close()
		<-copied
		close(w.done)
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case r, ok := <-w.replies:
		switch {
		case !ok:
			w.kill()
			return &difftest.RunError{Class: failClass, Msg: "GPU worker died during start-up: " + w.death()}
		case r.Class != difftest.Pass:
			w.kill()
			return &difftest.RunError{Class: failClass, Msg: r.Msg}
		}
		if im.device == "" {
			im.device = r.Device
			im.props = r.Props
			im.count = r.DeviceCount
			if r.Adapters != nil {
				im.adapters = map[string]bool{}
				for _, k := range r.Adapters {
					im.adapters[k] = true
				}
			}
		}
		im.w = w
		return nil
	case <-timer.C:
		w.kill()
		return &difftest.RunError{Class: failClass, Msg: fmt.Sprintf("GPU worker did not start within %v: %s", startTimeout, lastLine(w.out.String()))}
	case <-ctx.Done():
		w.kill()
		return &difftest.RunError{Class: difftest.Timeout, Msg: "interrupted while starting the GPU worker: " + ctx.Err().Error()}
	}
}

// kill ends the worker's process group, reaps the worker and kills what
// escaped the group (the goroutine that waits for it does).
func (w *workerProc) kill() {
	w.reqW.Close()
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	<-w.done
}

// death describes how a reaped worker ended: its exit status and the
// crash headline of its output (crashHeadline, over the block tail.Crash
// kept), else its last line.
func (w *workerProc) death() string {
	<-w.done
	s := "exited"
	if w.waitErr != nil {
		s = w.waitErr.Error()
	}
	if l := crashHeadline(w.out.Crash()); l != "" {
		s += ": " + l
	} else if l := lastLine(w.out.String()); l != "" {
		s += ": " + l
	}
	if len(w.escaped) > 0 {
		s += fmt.Sprintf(" (it left %d process(es) outside its process group, killed: %s)", len(w.escaped), strings.Join(w.escaped, "; "))
	}
	return s
}

// HangReportEnv, in a worker's environment, is the milliseconds after
// which an emulated launch still running prints, on stderr, where each of
// its blocks is (kernels/emu/host_emu.h, "hang report"); the real driver
// ignores it.
const HangReportEnv = "KD_EMU_HANG_REPORT_MS"

// lastWordsLines bounds what a time-out's message quotes of the killed
// worker's output.
const lastWordsLines = 8

// lastWords is what a killed worker last printed, for a time-out's
// message: "; its last output: LINE | LINE | …", its last lastWordsLines
// non-empty lines (on the emulator, the hang report of where each block
// was, host_emu.h's watchdog), or "" when it printed nothing.
func (w *workerProc) lastWords() string {
	var lines []string
	for _, l := range strings.Split(w.out.String(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "; its last output: " + strings.Join(lines[max(0, len(lines)-lastWordsLines):], " | ")
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// Run implements difftest.Impl: it sends the case to the worker (started
// anew if the last one was lost), copies the returned guarded buffers
// into outs[i].Full, and reports the device time. A device fault is a
// *difftest.RunError of class illegal-address, launch-error or timeout; a
// worker that dies is class crash; in each case the worker is replaced
// before the next case.
func (im *Impl) Run(ctx context.Context, k difftest.Kernel, c *difftest.Case, outs []*difftest.Buffer) (difftest.RunInfo, error) {
	return im.runModule(ctx, c, outs, 0)
}

// runModule is Run on build module (0 the fatbin, 1 the baseline).
func (im *Impl) runModule(ctx context.Context, c *difftest.Case, outs []*difftest.Buffer, module int) (difftest.RunInfo, error) {
	im.mu.Lock()
	defer im.mu.Unlock()
	req, err := im.request(c, outs)
	if err != nil {
		return difftest.RunInfo{}, err
	}
	req.Module = module
	r, err := im.exchange(ctx, req, im.timeout, len(outs))
	if err != nil {
		return difftest.RunInfo{}, err
	}
	for i, o := range outs {
		if len(r.Outputs[i]) != len(o.Full) {
			return difftest.RunInfo{}, &difftest.RunError{Class: difftest.BadOutput, Msg: fmt.Sprintf("output %s came back with %d bytes, sent %d", o.Name, len(r.Outputs[i]), len(o.Full))}
		}
		copy(o.Full, r.Outputs[i])
	}
	return difftest.RunInfo{KernelTime: time.Duration(r.KernelNanos)}, nil
}

// exchange sends req to the worker (started anew if the last one was
// lost) and waits up to timeout for its reply, which must carry nOutputs
// outputs when it passes. The caller holds im.mu. A reply with a failure
// class is returned as a *difftest.RunError of that class; a dead worker,
// a protocol error or a time-out likewise (crash, crash, timeout), the
// worker then replaced before the next request.
func (im *Impl) exchange(ctx context.Context, req *request, timeout time.Duration, nOutputs int) (reply, error) {
	if im.w == nil {
		if rerr := im.start(ctx, false); rerr != nil {
			// The worker died and a new one cannot start: the device is
			// gone (difftest.RunPool gives its cases to other devices).
			rerr.Lost = rerr.Class == difftest.Crash
			return reply{}, rerr
		}
	}
	w := im.w
	if err := w.enc.Encode(req); err != nil {
		w.kill()
		im.w = nil
		return reply{}, &difftest.RunError{Class: difftest.Crash, Msg: "GPU worker lost before the case: " + w.death()}
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r, ok := <-w.replies:
		if !ok {
			w.kill()
			im.w = nil
			return reply{}, &difftest.RunError{Class: difftest.Crash, Msg: "GPU worker died: " + w.death()}
		}
		// A reply to another request (an error reply included) means the
		// two sides disagree on the stream: nothing it says can be trusted.
		if r.Seq != req.Seq || (r.Class == difftest.Pass && len(r.Outputs) != nOutputs) {
			w.kill()
			im.w = nil
			return reply{}, &difftest.RunError{Class: difftest.Crash, Msg: fmt.Sprintf("GPU worker protocol error: reply %d (%s) with %d outputs to request %d with %d", r.Seq, replyClass(r), len(r.Outputs), req.Seq, nOutputs)}
		}
		if r.Sticky {
			im.retire(w)
		}
		if r.Class != difftest.Pass {
			return reply{}, &difftest.RunError{Class: r.Class, Msg: r.Msg, Skip: r.Declined}
		}
		return r, nil
	case <-timer.C:
		w.kill()
		im.w = nil
		return reply{}, &difftest.RunError{Class: difftest.Timeout, Msg: fmt.Sprintf("ran past the %v time-out; GPU worker killed%s", timeout, w.lastWords())}
	case <-ctx.Done():
		w.kill()
		im.w = nil
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return reply{}, &difftest.RunError{Class: difftest.Timeout, Msg: fmt.Sprintf("ran past the %v time-out; GPU worker killed%s", timeout, w.lastWords())}
		}
		return reply{}, &difftest.RunError{Class: difftest.Timeout, Msg: "ran past the time-out (" + ctx.Err().Error() + "); GPU worker killed" + w.lastWords()}
	}
}

// replyClass names a reply's class for messages ("pass" when empty).
func replyClass(r reply) string {
	if r.Class == difftest.Pass {
		return "pass"
	}
	return string(r.Class)
}

// retire waits for a worker that announced a lost context to exit, and
// kills it if it does not within the exit grace (ExitGraceEnv).
func (im *Impl) retire(w *workerProc) {
	im.w = nil
	im.end(w)
}

// end closes w's requests (its end of requests) and waits for it to
// exit; it kills w and returns false when it does not within the exit
// grace (ExitGraceEnv).
func (im *Impl) end(w *workerProc) bool {
	w.reqW.Close()
	select {
	case <-w.done:
		return true
	case <-time.After(im.exitGrace):
		w.kill()
		return false
	}
}

// Offers implements difftest.KernelOfferer: over an adapter library
// (cudasrc), only the kernels the adapter defines, so the runner draws no
// inputs for the others' cases (not tested, as Run would report them);
// over a fatbin, every kernel (one without a launcher fails in Run).
func (im *Impl) Offers(kernel string) (bool, string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.adapters != nil && !im.adapters[kernel] {
		return false, fmt.Sprintf("the adapter defines %s, not %s", adapterList(im.adapters), adapterFunc(kernel))
	}
	return true, ""
}

// request builds the wire request and checks the case with a dry run of
// its launcher, so a case the kernel cannot take fails before any device
// work.
func (im *Impl) request(c *difftest.Case, outs []*difftest.Buffer) (*request, error) {
	pack, ok := im.packers[c.Kernel]
	if !ok {
		return nil, &difftest.RunError{Class: difftest.LaunchError, Msg: fmt.Sprintf("no CUDA launcher for kernel %q", c.Kernel)}
	}
	if im.adapters != nil && !im.adapters[c.Kernel] {
		return nil, &difftest.RunError{Class: difftest.Unavailable, Skip: true,
			Msg: fmt.Sprintf("the adapter defines %s, not %s", adapterList(im.adapters), adapterFunc(c.Kernel))}
	}
	params, err := json.Marshal(c.Params)
	if err != nil {
		return nil, &difftest.RunError{Class: difftest.InvalidCase, Msg: "params do not encode: " + err.Error()}
	}
	im.seq++
	req := &request{Seq: im.seq, Kernel: c.Kernel, CaseID: c.ID, Params: params}
	ts := map[string]devTensor{}
	for _, t := range c.Inputs {
		req.Inputs = append(req.Inputs, wireTensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Data: t.Data})
		ts[t.Name] = devTensor{DType: t.DType, Shape: t.Shape}
	}
	for _, o := range outs {
		req.Outputs = append(req.Outputs, wireOutput{Name: o.Name, DType: o.DType, Shape: o.Shape, Full: o.Full, Guard: o.Guard})
		ts[o.Name] = devTensor{DType: o.DType, Shape: o.Shape}
	}
	if _, err := pack(params, ts); err != nil {
		return nil, &difftest.RunError{Class: difftest.InvalidCase, Msg: err.Error()}
	}
	return req, nil
}

// Close implements difftest.Impl: it ends the worker (end of requests),
// killing it if it does not exit within the exit grace (ExitGraceEnv).
func (im *Impl) Close() error {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.w == nil {
		return nil
	}
	w := im.w
	im.w = nil
	if !im.end(w) {
		return errors.New("GPU worker did not exit; killed")
	}
	var ee *exec.ExitError
	if errors.As(w.waitErr, &ee) {
		return fmt.Errorf("GPU worker exited: %v", w.death())
	}
	return nil
}
