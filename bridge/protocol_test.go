package bridge

import (
	"strings"
	"testing"
)

// The starts of real crash reports of a cgo program built with Go 1.26:
// a signal raised in C, an abort after a message, a bad store in C, a Go
// panic, and a nil dereference in Go.
func TestCrashHeadline(t *testing.T) {
	const goroutines = "\ngoroutine 1 gp=0x184210fbc1e0 m=0 mp=0x55c480 [syscall]:\nruntime.cgocall(0x48b4d0, 0x184210e7af08)\n"
	tests := []struct {
		name, out, want string
	}{
		{"signal in C", "SIGSEGV: segmentation violation\nPC=0x7f3cbe663eec m=0 sigcode=18446744073709551610 addr=0x7d1a\nsignal arrived during cgo execution\n" + goroutines,
			"SIGSEGV: segmentation violation; PC=0x7f3cbe663eec m=0 sigcode=18446744073709551610 addr=0x7d1a; signal arrived during cgo execution"},
		{"abort after a message", "emu::launch: block 3 deadlocked: thread 5 waits at a barrier others skip\nSIGABRT: abort\nPC=0x7f456dea4eec m=0 sigcode=18446744073709551610\nsignal arrived during cgo execution\n" + goroutines,
			"emu::launch: block 3 deadlocked: thread 5 waits at a barrier others skip; SIGABRT: abort; PC=0x7f456dea4eec m=0 sigcode=18446744073709551610; signal arrived during cgo execution"},
		{"bad store in C", "SIGSEGV: segmentation violation\nPC=0x48b550 m=0 sigcode=1 addr=0x10\nsignal arrived during cgo execution\n" + goroutines,
			"SIGSEGV: segmentation violation; PC=0x48b550 m=0 sigcode=1 addr=0x10; signal arrived during cgo execution"},
		{"Go panic", "panic: boom: bad reply\n\ngoroutine 1 [running]:\nmain.main()\n\t/tmp/crash/main.go:19 +0x11b\n",
			"panic: boom: bad reply"},
		{"nil dereference in Go", "panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x48b3f6]\n\ngoroutine 1 [running]:\n",
			"panic: runtime error: invalid memory address or nil pointer dereference; [signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x48b3f6]"},
		{"fatal error", "fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\n", "fatal error: all goroutines are asleep - deadlock!"},
		{"no crash report", "cuInit: CUDA_ERROR_NO_DEVICE (100)\n", ""},
		{"goroutine dump only", goroutines, ""},
		{"not a signal name", "SIGnal: lowercase\nSIG: too short\n", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := crashHeadline(tt.out); got != tt.want {
				t.Errorf("crashHeadline:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// A worker's output keeps its last max bytes and the first crash
// report's headline block, however the writes split the lines.
func TestTailKeepsCrashBlock(t *testing.T) {
	tl := &tail{max: 8}
	for _, p := range []string{"noise\nlast wo", "rds\nSIG", "SEGV: x\nPC=1\n\nsignal arrived during cgo execution\ngoroutine 1\n", "panic: later\nthe end"} {
		if n, err := tl.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if got, want := tl.Crash(), "last words\nSIGSEGV: x\nPC=1\n\nsignal arrived during cgo execution"; got != want {
		t.Errorf("Crash() = %q, want %q", got, want)
	}
	if got, want := tl.String(), "\nthe end"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := crashHeadline(tl.Crash()), "last words; SIGSEGV: x; PC=1; signal arrived during cgo execution"; got != want {
		t.Errorf("crashHeadline(Crash()) = %q, want %q", got, want)
	}
}

// A worker that printed several KiB before it crashed, and whose crash
// dump runs past the 4 KiB tail: the headline is still reported.
func TestDeathHeadlineAfterOutput(t *testing.T) {
	tl := &tail{max: 4096}
	noise := strings.Repeat("worker log line that is not a crash report\n", 150)
	report := "SIGSEGV: segmentation violation\nPC=0x7f3cbe663eec m=0 sigcode=1 addr=0x10\nsignal arrived during cgo execution\n\ngoroutine 1 gp=0x1 m=0 mp=0x2 [syscall]:\nruntime.cgocall(0x48b4d0, 0x184210e7af08)\n"
	dump := strings.Repeat("rax    0x0\nrbx    0x1\n", 300) + "gs     0x0\n"
	_, _ = tl.Write([]byte(noise + report + dump))
	w := &workerProc{out: tl, done: make(chan struct{})}
	close(w.done)
	got := w.death()
	want := "exited: worker log line that is not a crash report; SIGSEGV: segmentation violation; PC=0x7f3cbe663eec m=0 sigcode=1 addr=0x10; signal arrived during cgo execution"
	if got != want {
		t.Errorf("death() = %q, want %q", got, want)
	}
}
