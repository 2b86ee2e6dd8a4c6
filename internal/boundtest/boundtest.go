// Package boundtest is what the hostile-input tests share
// (docs/interfaces.md: every read of a file or of a child's output is
// bounded before it is allocated): the resource check, a call must return
// within a time limit and allocate at most a given number of bytes, and
// the FIFO such tests hand where a file is expected. Returns is the time
// half of the check alone.
package boundtest

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// Within runs f and fails t when f has not returned after limit (an open
// that blocks on a FIFO, a read of a 64 GiB file: t.Fatalf) or when the
// process allocated more than maxAlloc bytes while it ran
// (runtime.MemStats.TotalAlloc: t.Errorf). what names the call in the
// messages.
func Within(t testing.TB, what string, limit time.Duration, maxAlloc uint64, f func()) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	Returns(t, what, limit, f)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > maxAlloc {
		t.Errorf("%s: allocated %d bytes, want at most %d: the input was read before it was bounded", what, got, maxAlloc)
	}
}

// Returns runs f in a goroutine of its own and fails t (t.Fatalf, naming
// what and limit) when f has not returned after limit: the check of a
// call that must not block (an open of a FIFO, a read of a device). f may
// report its own failures with t.Errorf; it must not call t.Fatal, which
// ends only its goroutine. When f blocks for ever its goroutine is left
// behind: the test has failed.
func Returns(t testing.TB, what string, limit time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s: still running after %v: the input is waited on or read whole", what, limit)
	}
}

// FIFO makes a named pipe at path (mode 0600) and returns path; a failure
// is fatal. Nothing writes to it: a reader that opens it without
// O_NONBLOCK waits for ever, which is what the tests check does not happen.
func FIFO(t testing.TB, path string) string {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
