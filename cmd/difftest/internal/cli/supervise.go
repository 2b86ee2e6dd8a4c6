package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// crashFDEnv is the environment variable through which Supervise gives
// the process it runs the file descriptor of its crash pipe.
const crashFDEnv = "KD_DIFFTEST_CRASH_FD"

// maxCrashBytes bounds what Supervise keeps of a crash report (the
// runtime's message and goroutine dump); the rest is read and dropped.
const maxCrashBytes = 4 << 20

// Supervise makes every crash of difftest exit with difftest.ExitInternal
// (3), not 2: Go's runtime exits 2 on what no recover can catch (fatal
// error: out of memory, concurrent map writes, a panic in a goroutine
// of its own, a signal in C code), which CI and git bisect run read as
// a usage error.
//
// Called first in main with the program's arguments, it runs the same
// program again as a child (same arguments, standard streams and
// environment) in a process group of its own, with a pipe on which the
// child's runtime writes any fatal error (debug.SetCrashOutput), and
// returns the code to exit with and true: the child's exit code, or 3
// with one line on stderr naming the file that holds the crash report
// when the child wrote one, or 3 when the child was killed by SIGKILL
// (the kernel's out-of-memory killer); 128 + N when another signal N
// killed it. SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to this process are
// passed on to the child (a terminal's Ctrl-C reaches this process
// only, so the child sees each signal once); SIGTSTP stops both and
// SIGCONT resumes the child; the child dies with this process
// (Pdeathsig).
//
// In the child (its environment carries crashFDEnv, removed there so that
// the programs it starts never see it), and for the cuda-worker command,
// whose crashes the cuda implementation classifies itself, it returns
// false and the command runs in this process. Where the child cannot be
// started, it says why on stderr and returns false: the command runs
// unsupervised.
func Supervise(args []string, stderr io.Writer) (int, bool) {
	if fd, ok := os.LookupEnv(crashFDEnv); ok {
		os.Unsetenv(crashFDEnv)
		if n, err := strconv.Atoi(fd); err == nil && n > 2 {
			syscall.CloseOnExec(n)
			f := os.NewFile(uintptr(n), "crash pipe")
			if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err != nil {
				fmt.Fprintf(stderr, "difftest: cannot report crashes on fd %d: %v\n", n, err)
			}
			f.Close() // SetCrashOutput keeps its own duplicate
		}
		return 0, false
	}
	if len(args) > 1 && args[1] == workerCommand || runtime.GOOS != "linux" {
		return 0, false
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, false
	}
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(stderr, "difftest: running unsupervised (a crash exits 2, not 3): %v\n", err)
		return 0, false
	}
	// Pdeathsig follows the thread that started the child: keep this
	// goroutine on it until the child is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := &exec.Cmd{
		Path: exe, Args: args,
		Env:   append(os.Environ(), crashFDEnv+"=3"),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		ExtraFiles:  []*os.File{w},
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTSTP, syscall.SIGCONT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		fmt.Fprintf(stderr, "difftest: running unsupervised (a crash exits 2, not 3): %v\n", err)
		return 0, false
	}
	w.Close()
	var crash bytes.Buffer
	read := make(chan struct{})
	go func() {
		io.Copy(&crash, io.LimitReader(r, maxCrashBytes))
		io.Copy(io.Discard, r)
		close(read)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var werr error
wait:
	for {
		select {
		case werr = <-exited:
			break wait
		case s := <-sigs:
			sig := s.(syscall.Signal)
			switch sig {
			case syscall.SIGTSTP:
				syscall.Kill(cmd.Process.Pid, syscall.SIGSTOP)
				syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			case syscall.SIGCONT:
				syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
			default:
				syscall.Kill(cmd.Process.Pid, sig)
			}
		}
	}
	// The child's end is closed when it exits, unless a program it started
	// kept a copy: wait for the report a moment, not for that program.
	r.SetReadDeadline(time.Now().Add(2 * time.Second))
	<-read
	r.Close()
	if crash.Len() > 0 {
		return reportFatal(stderr, crash.Bytes()), true
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			if ws.Signal() == syscall.SIGKILL {
				fmt.Fprintf(stderr, "difftest: internal error: killed by SIGKILL while it ran (most likely the kernel's out-of-memory killer; see --max-memory) (exit %d)\n", difftest.ExitInternal)
				return difftest.ExitInternal, true
			}
			return 128 + int(ws.Signal()), true
		}
		return ee.ExitCode(), true
	}
	if werr != nil {
		fmt.Fprintf(stderr, "difftest: internal error: %v (exit %d)\n", werr, difftest.ExitInternal)
		return difftest.ExitInternal, true
	}
	return 0, true
}

// workerCommand is bridge.WorkerCommand, the hidden command of the cuda
// implementation's worker process (not imported here: cli does not link
// the bridge).
const workerCommand = "cuda-worker"

// reportFatal handles a fatal error the child's runtime reported: the
// report goes to a new file beside reportCrash's, and stderr gets one line
// with the report's first line ("fatal error: out of memory") and the
// file. It returns difftest.ExitInternal.
func reportFatal(stderr io.Writer, report []byte) int {
	first := fatalSummary(report)
	msg := difftest.SafeLine(first)
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	what := "a bug in difftest, not in the input"
	if strings.Contains(first, "out of memory") {
		what = "a case larger than this machine holds: lower its sizes or --max-memory"
	}
	dir := crashDir
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "difftest-crash-*.txt")
	if err == nil {
		_, err = fmt.Fprintf(f, "difftest internal error at %s\nargs: %q\n\n%s", time.Now().UTC().Format(time.RFC3339), os.Args, report)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "difftest: internal error (%s): %s (exit %d; the report could not be saved: %v; it is above)\n", what, msg, difftest.ExitInternal, err)
		return difftest.ExitInternal
	}
	name, _ := filepath.Abs(f.Name())
	fmt.Fprintf(stderr, "difftest: internal error (%s): %s; report in %s (exit %d)\n", what, msg, name, difftest.ExitInternal)
	return difftest.ExitInternal
}

// fatalSummary is one line for a crash report: its "fatal error:" or
// "panic:" line where the report has one. A throw's report lacks its
// header (the runtime prints it to stderr before it opens the crash
// output), so then the line is "fatal error" with what the stack says: out
// of memory where the runtime threw from its allocator, and the first
// function outside the runtime.
func fatalSummary(report []byte) string {
	var funcs []string
	for _, line := range strings.Split(string(report), "\n") {
		if strings.HasPrefix(line, "fatal error:") || strings.HasPrefix(line, "panic:") {
			return line
		}
		if line != "" && line[0] != '\t' && !strings.HasPrefix(line, "goroutine ") && strings.Contains(line, "(") {
			name, _, _ := strings.Cut(line, "(")
			if name == "runtime." && strings.HasPrefix(line, "runtime.(") {
				name, _, _ = strings.Cut(line, ")(") // a method: runtime.(*mheap).alloc
			}
			funcs = append(funcs, name)
		}
	}
	msg := "fatal error"
	for i, f := range funcs {
		if i < 8 && (strings.Contains(f, "malloc") || strings.Contains(f, "alloc") || strings.Contains(f, "mheap") || strings.Contains(f, "sysMap")) && strings.HasPrefix(f, "runtime.") {
			msg = "fatal error: out of memory"
			break
		}
	}
	for _, f := range funcs {
		if !strings.HasPrefix(f, "runtime.") {
			return msg + " in " + f
		}
	}
	return msg
}
