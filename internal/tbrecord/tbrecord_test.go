package tbrecord

import (
	"slices"
	"testing"
)

// Errors are kept formatted and in order; a Fatalf ends the run there.
func TestRun(t *testing.T) {
	after := false
	r := Run(t, func(tb testing.TB) {
		tb.Logf("dropped %d", 1)
		tb.Errorf("first %d", 1)
		tb.Error("second", 2)
		tb.Fatalf("stop at %s", "three")
		after = true
	})
	if want := []string{"first 1", "second2", "stop at three"}; !slices.Equal(r.Errs, want) || !r.Stopped || after {
		t.Errorf("errs %q (want %q), fatal %v, ran past Fatalf %v", r.Errs, want, r.Stopped, after)
	}
	if r := Run(t, func(tb testing.TB) {}); len(r.Errs) != 0 || r.Stopped {
		t.Errorf("a helper that passes: %q, fatal %v", r.Errs, r.Stopped)
	}
}
