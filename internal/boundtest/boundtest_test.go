package boundtest

import (
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/internal/tbrecord"
)

// within runs Within with a tbrecord.Recorder: its failures are kept, and
// a Fatalf ends the call.
func within(t *testing.T, what string, limit time.Duration, maxAlloc uint64, f func()) *tbrecord.Recorder {
	return tbrecord.Run(t, func(tb testing.TB) { Within(tb, what, limit, maxAlloc, f) })
}

// A quick, small call passes; one that allocates 8 MB against a 1 MB
// limit fails with an Errorf; one that blocks past the limit fails with a
// Fatalf naming the call.
func TestWithin(t *testing.T) {
	if r := within(t, "small", time.Second, 1<<20, func() {}); len(r.Errs) != 0 {
		t.Errorf("a call doing nothing failed: %v", r.Errs)
	}
	var sink []byte
	r := within(t, "big", time.Second, 1<<20, func() { sink = make([]byte, 8<<20) })
	_ = sink
	if len(r.Errs) != 1 || r.Stopped || !strings.Contains(r.Errs[0], "allocated") {
		t.Errorf("an 8 MB allocation against 1 MB: %v (fatal %v)", r.Errs, r.Stopped)
	}
	block := make(chan struct{})
	defer close(block)
	r = within(t, "stuck", 50*time.Millisecond, 1<<20, func() { <-block })
	if len(r.Errs) != 1 || !r.Stopped || !strings.Contains(r.Errs[0], "still running") {
		t.Errorf("a blocked call: %v (fatal %v)", r.Errs, r.Stopped)
	}
}

// Returns passes a call that returns, keeps the call's own Errorf, and
// fails fatally, naming the call, one that blocks past the limit.
func TestReturns(t *testing.T) {
	r := tbrecord.Run(t, func(tb testing.TB) {
		Returns(tb, "quick", time.Second, func() { tb.Errorf("the call's own failure") })
	})
	if len(r.Errs) != 1 || r.Stopped || r.Errs[0] != "the call's own failure" {
		t.Errorf("a call that returns: %v (fatal %v), want only its own failure", r.Errs, r.Stopped)
	}
	block := make(chan struct{})
	defer close(block)
	r = tbrecord.Run(t, func(tb testing.TB) { Returns(tb, "stuck", 50*time.Millisecond, func() { <-block }) })
	if len(r.Errs) != 1 || !r.Stopped || !strings.HasPrefix(r.Errs[0], "stuck: still running after 50ms") {
		t.Errorf("a blocked call: %v (fatal %v)", r.Errs, r.Stopped)
	}
}
