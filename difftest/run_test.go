package difftest_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/kerneldiff/kerneldiff/difftest"
	_ "github.com/kerneldiff/kerneldiff/difftest/proc"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
)

func TestRunStreamsRecords(t *testing.T) {
	s := fakekernel.Suite()
	impl, err := NewImpl("mutant:fake-off-by-one", ImplOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	opts := ReplayOptions{Suite: s.Name, Impl: impl.Name()}
	dir := t.TempDir()
	sum, err := Run(context.Background(), Config{
		Suite: s.Name, Items: s.Items(Selection{Seed: 5}), Impl: impl, ImplName: impl.Name(),
		SaveFailures: dir,
		Replay:       func(r *Record) string { return ReplayCommand(opts, r.Case, r.Seed) },
		OnRecord: func(r *Record) error {
			got = append(got, r.Case+" "+string(r.Verdict)+" "+string(r.Class))
			if r.Failed() && (r.Replay == "" || r.Capture == "") {
				t.Errorf("failing record without replay command or capture: %+v", r)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"fake_scatter/ramp-8 fail mismatch", "fake_scatter/random-64 fail mismatch", "fake_scatter/random-5 fail mismatch"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if sum.Failed != 3 || sum.Classes[Mismatch] != 3 || ExitCode(sum, nil) != ExitFail {
		t.Errorf("summary %+v", sum)
	}

	// The saved capture replays the same case, byte for byte.
	path := filepath.Join(dir, "fake_scatter__random-64__seed5.safetensors")
	c, extra, err := ReadCapture(path)
	if err != nil {
		t.Fatal(err)
	}
	_, orig, _ := GenerateCase(Item{Seed: 5, SuiteCase: s.Cases[1]})
	if InputDigest(c) != InputDigest(orig) {
		t.Error("the capture's inputs differ from the generated case")
	}
	if extra["got.y"] == nil || extra["want.y"] == nil || extra["cache"] == nil || extra["cache"].Data[0] != byte(PoisonA) {
		t.Errorf("capture extras: %v", extra)
	}
}

func TestRunFailFastAndSinkError(t *testing.T) {
	s := fakekernel.Suite()
	impl, _ := NewImpl("mutant:fake-skip-last", ImplOptions{})
	n := 0
	sum, err := Run(context.Background(), Config{Items: s.Items(Selection{Seed: 1}), Impl: impl, FailFast: true,
		OnRecord: func(*Record) error { n++; return nil }})
	if err != nil || n != 1 || sum.Failed != 1 || sum.Classes[Unwritten] != 1 || !strings.Contains(sum.Aborted, "--failfast") {
		t.Errorf("failfast: n=%d sum=%+v err=%v", n, sum, err)
	}
	full := errors.New("disk full")
	_, err = Run(context.Background(), Config{Items: s.Items(Selection{Seed: 1}), Impl: ReferenceImpl{},
		OnRecord: func(*Record) error { return full }})
	if !errors.Is(err, full) || ExitCode(Summary{}, err) != ExitUntestable {
		t.Errorf("sink error: %v", err)
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		sum  Summary
		err  error
		want int
	}{
		{"all passed", Summary{Passed: 4}, nil, 0},
		{"one failed", Summary{Passed: 3, Failed: 1}, nil, 1},
		{"nothing ran", Summary{}, nil, 125},
		{"suite error", Summary{}, &SuiteError{File: "s.toml", Err: errors.New("x")}, 2},
		{"invalid capture", Summary{}, &CaptureError{Path: "c", Rule: "dtype", Err: &InputError{Tensor: "x"}}, 2},
		{"unknown impl", Summary{}, ErrUnknownImpl, 2},
		{"no device", Summary{}, &RunError{Class: Unavailable, Msg: "no driver"}, 125},
		{"device lost after a failure", Summary{Failed: 1}, &RunError{Class: Unavailable, Msg: "no driver"}, 1},
		{"internal", Summary{Passed: 9}, &InternalError{Case: "k/a", Err: &InputError{Tensor: "x"}}, 125},
		{"interrupted", Summary{Passed: 2}, context.Canceled, 125},
	}
	for _, tt := range tests {
		if got := ExitCode(tt.sum, tt.err); got != tt.want {
			t.Errorf("%s: ExitCode = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestNewImpl(t *testing.T) {
	for _, name := range []string{"reference", "mutant:fake-skip-last", "exec:/bin/true"} {
		impl, err := NewImpl(name, ImplOptions{})
		if err != nil || impl.Name() != name {
			t.Errorf("NewImpl(%q) = %v, %v", name, impl, err)
		}
	}
	for _, name := range []string{"mutant:nope", "exec:", "gpu"} {
		if _, err := NewImpl(name, ImplOptions{}); !errors.Is(err, ErrUnknownImpl) {
			t.Errorf("NewImpl(%q): err = %v, want ErrUnknownImpl", name, err)
		}
	}
}

// A negative per-case time-out runs nothing: it is not a way to say "no
// time-out" (that is 0).
func TestRunNegativeTimeout(t *testing.T) {
	s := fakekernel.Suite()
	n := 0
	sum, err := Run(context.Background(), Config{Items: s.Items(Selection{Seed: 1}), Impl: ReferenceImpl{}, Timeout: -time.Second,
		OnRecord: func(*Record) error { n++; return nil }})
	if err == nil || err.Error() != "time-out -1s is negative (0 = no time-out)" || n != 0 || sum.Passed != 0 || ExitCode(sum, err) != ExitUntestable {
		t.Errorf("Run with time-out −1s: %d records, summary %+v, err %v", n, sum, err)
	}
	sum, err = Run(context.Background(), Config{Items: s.Items(Selection{Seed: 1}), Impl: ReferenceImpl{}, Timeout: 0})
	if err != nil || sum.Passed != 3 {
		t.Errorf("Run with time-out 0 (none): summary %+v, err %v", sum, err)
	}
}

// TestFormatDuration: the unit changes at 1 ms and 1 s, with the
// decimals the tables print.
func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0.0µs"},
		{1500 * time.Nanosecond, "1.5µs"},
		{999999 * time.Nanosecond, "1000.0µs"},
		{time.Millisecond, "1.00ms"},
		{3500 * time.Microsecond, "3.50ms"},
		{999 * time.Millisecond, "999.00ms"},
		{time.Second, "1.00s"},
		{1250 * time.Millisecond, "1.25s"},
		{90 * time.Second, "90.00s"},
	} {
		if got := FormatDuration(tc.d); got != tc.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
