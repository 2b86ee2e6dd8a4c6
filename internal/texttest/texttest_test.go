package texttest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/internal/tbrecord"
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

// WriteFile writes the text with the mode asked and returns the path; a
// file it cannot write (in a folder that does not exist) is fatal.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	for _, perm := range []os.FileMode{0o644, 0o755} {
		want := filepath.Join(dir, fmt.Sprintf("f%o", perm))
		var got string
		if r := tbrecord.Run(t, func(tb testing.TB) { got = WriteFile(tb, want, "#!/bin/sh\n", perm) }); len(r.Errs) != 0 || got != want {
			t.Fatalf("WriteFile(%o) = %q, failures %v; want %q and none", perm, got, r.Errs, want)
		}
		st, err := os.Stat(want)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(want); string(b) != "#!/bin/sh\n" || st.Mode().Perm() != perm {
			t.Errorf("file %q mode %v, want the text with mode %v", b, st.Mode().Perm(), perm)
		}
	}
	missing := filepath.Join(dir, "none", "f")
	r := tbrecord.Run(t, func(tb testing.TB) { WriteFile(tb, missing, "x", 0o644) })
	if !r.Stopped || len(r.Errs) != 1 || !strings.Contains(r.Errs[0], missing) {
		t.Errorf("a file in no folder: %v (fatal %v), want one fatal failure naming it", r.Errs, r.Stopped)
	}
}

// Render returns what the writer wrote; a writer's error is fatal and
// named.
func TestRender(t *testing.T) {
	var got string
	r := tbrecord.Run(t, func(tb testing.TB) {
		got = Render(tb, func(w io.Writer) error { _, err := io.WriteString(w, "a\nb"); return err })
	})
	if got != "a\nb" || len(r.Errs) != 0 {
		t.Errorf("Render = %q, failures %v; want the text and none", got, r.Errs)
	}
	r = tbrecord.Run(t, func(tb testing.TB) {
		Render(tb, func(w io.Writer) error { io.WriteString(w, "half"); return errors.New("disk full") })
	})
	if !r.Stopped || len(r.Errs) != 1 || r.Errs[0] != "render: disk full" {
		t.Errorf("a writer's error: %v (fatal %v), want one fatal failure naming it", r.Errs, r.Stopped)
	}
}
