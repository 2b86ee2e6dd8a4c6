package texttest

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that keeps what Contains reports.
type recorder struct {
	testing.TB
	errors, logs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, a...))
}
func (r *recorder) Logf(format string, a ...any) { r.logs = append(r.logs, fmt.Sprintf(format, a...)) }

func TestContains(t *testing.T) {
	r := &recorder{TB: t}
	Contains(r, "table", "a b\nc", "a b", "c", "d", "b\nc", "x")
	if len(r.errors) != 2 || r.errors[0] != `table lacks "d"` || r.errors[1] != `table lacks "x"` {
		t.Errorf("errors %q, want the two missing strings", r.errors)
	}
	if len(r.logs) != 1 || r.logs[0] != "table:\na b\nc" {
		t.Errorf("logs %q, want the text once", r.logs)
	}
	r = &recorder{TB: t}
	Contains(r, "table", "abc", "a", "bc", "")
	if len(r.errors) != 0 || len(r.logs) != 0 {
		t.Errorf("all present: errors %q, logs %q", r.errors, r.logs)
	}
}
