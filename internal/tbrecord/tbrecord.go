// Package tbrecord runs a test helper against a testing.TB that keeps the
// helper's failures instead of reporting them, so that the helper's own
// tests can check what it reports (a helper that never fails is a test
// that cannot fail).
package tbrecord

import (
	"fmt"
	"runtime"
	"testing"
)

// Recorder is a testing.TB that records Errorf, Error, Fatalf and Fatal
// (formatted, in order) and drops logs; Fatal and Fatalf end the calling
// goroutine as testing's do. Everything else (TempDir, Cleanup, Name) is
// the wrapped test's.
type Recorder struct {
	testing.TB
	Errs    []string // the failure messages, formatted
	Stopped bool     // whether a Fatal or Fatalf ended the run
}

// Run calls f with a Recorder wrapping t, in a goroutine of its own (which
// a Fatal ends), and returns the Recorder once f has returned or ended.
func Run(t testing.TB, f func(tb testing.TB)) *Recorder {
	r := &Recorder{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); f(r) }()
	<-done
	return r
}

// Helper does nothing: a Recorder reports no lines.
func (r *Recorder) Helper() {}

// Log drops its arguments.
func (r *Recorder) Log(...any) {}

// Logf drops its arguments.
func (r *Recorder) Logf(string, ...any) {}

// Error records the message in Errs and lets the run go on.
func (r *Recorder) Error(a ...any) { r.Errs = append(r.Errs, fmt.Sprint(a...)) }

// Errorf records the formatted message in Errs and lets the run go on.
func (r *Recorder) Errorf(f string, a ...any) { r.Errs = append(r.Errs, fmt.Sprintf(f, a...)) }

// Fatal records the message in Errs, sets Stopped and ends the run's
// goroutine.
func (r *Recorder) Fatal(a ...any) { r.fail(fmt.Sprint(a...)) }

// Fatalf records the formatted message in Errs, sets Stopped and ends the
// run's goroutine.
func (r *Recorder) Fatalf(f string, a ...any) { r.fail(fmt.Sprintf(f, a...)) }

func (r *Recorder) fail(msg string) {
	r.Errs = append(r.Errs, msg)
	r.Stopped = true
	runtime.Goexit()
}
