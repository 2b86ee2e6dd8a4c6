package boundtest

import (
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps the failures instead of reporting
// them; Fatalf ends the calling goroutine as testing's does.
type recorder struct {
	testing.TB
	errs  []string
	fatal bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, format)
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.errs = append(r.errs, format)
	r.fatal = true
	panic(r)
}

func within(what string, limit time.Duration, maxAlloc uint64, f func()) (r *recorder) {
	r = &recorder{TB: &testing.T{}}
	defer func() {
		if p := recover(); p != nil && p != any(r) {
			panic(p)
		}
	}()
	Within(r, what, limit, maxAlloc, f)
	return r
}

// A quick, small call passes; one that allocates 8 MB against a 1 MB
// limit fails with an Errorf; one that blocks past the limit fails with a
// Fatalf naming the call.
func TestWithin(t *testing.T) {
	if r := within("small", time.Second, 1<<20, func() {}); len(r.errs) != 0 {
		t.Errorf("a call doing nothing failed: %v", r.errs)
	}
	var sink []byte
	r := within("big", time.Second, 1<<20, func() { sink = make([]byte, 8<<20) })
	_ = sink
	if len(r.errs) != 1 || r.fatal || !strings.Contains(r.errs[0], "allocated") {
		t.Errorf("an 8 MB allocation against 1 MB: %v (fatal %v)", r.errs, r.fatal)
	}
	block := make(chan struct{})
	defer close(block)
	r = within("stuck", 50*time.Millisecond, 1<<20, func() { <-block })
	if len(r.errs) != 1 || !r.fatal || !strings.Contains(r.errs[0], "still running") {
		t.Errorf("a blocked call: %v (fatal %v)", r.errs, r.fatal)
	}
}
