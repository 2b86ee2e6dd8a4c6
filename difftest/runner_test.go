package difftest_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
)

// funcImpl is an implementation made of one function, for faults that no
// Go mutant can express (guard writes, input writes, hangs).
type funcImpl struct {
	name string
	run  func(ctx context.Context, c *Case, outs []*Buffer) (RunInfo, error)
}

func (f funcImpl) Name() string { return f.name }
func (f funcImpl) Run(ctx context.Context, _ Kernel, c *Case, outs []*Buffer) (RunInfo, error) {
	return f.run(ctx, c, outs)
}
func (funcImpl) Close() error { return nil }

// correct runs the reference, then applies a fault.
func correct(fault func(c *Case, outs []*Buffer)) func(context.Context, *Case, []*Buffer) (RunInfo, error) {
	return func(_ context.Context, c *Case, outs []*Buffer) (RunInfo, error) {
		if err := (fakekernel.Kernel{}).Reference(c, TensorsOf(outs)); err != nil {
			return RunInfo{}, err
		}
		if fault != nil {
			fault(c, outs)
		}
		return RunInfo{KernelTime: 1500 * time.Nanosecond}, nil
	}
}

func rampCase() *Case {
	// y = x; slots 0..2 owned by tokens 0..2, slot 3 untouched (token 3 has out_loc −1).
	return fakekernel.NewCase("ramp4", []int32{1, 2, 3, 4}, []int64{0, 1, 2, -1}, 4)
}

func TestRunCaseClasses(t *testing.T) {
	var calls atomic.Int32
	tests := []struct {
		name   string
		run    func(context.Context, *Case, []*Buffer) (RunInfo, error)
		class  Class
		inMsg  string
		reason string
	}{
		{"correct", correct(nil), Pass, "", "the reference itself must pass"},
		{"wrong-value", correct(func(c *Case, o []*Buffer) { o[0].SetI32(2, 99) }), Mismatch, "y[2]: got 99, want 3", "comparison with the reference"},
		{"panics", func(context.Context, *Case, []*Buffer) (RunInfo, error) { panic("index out of range [7]") }, Crash, "panic: index out of range [7]", "a panicking implementation is a case failure, not a harness crash"},
		{"plain-error", func(context.Context, *Case, []*Buffer) (RunInfo, error) {
			return RunInfo{}, errors.New("cuLaunchKernel: too many resources")
		}, Crash, "too many resources", "an unclassified error"},
		{"launch-error", func(context.Context, *Case, []*Buffer) (RunInfo, error) {
			return RunInfo{}, &RunError{Class: LaunchError, Msg: "CUDA_ERROR_INVALID_VALUE"}
		}, LaunchError, "CUDA_ERROR_INVALID_VALUE", "a *RunError keeps its class"},
		{"illegal-address", func(context.Context, *Case, []*Buffer) (RunInfo, error) {
			return RunInfo{}, &RunError{Class: IllegalAddress, Msg: "CUDA_ERROR_ILLEGAL_ADDRESS"}
		}, IllegalAddress, "ILLEGAL_ADDRESS", "a GPU fault keeps its class"},
		{"hangs", func(context.Context, *Case, []*Buffer) (RunInfo, error) {
			time.Sleep(2 * time.Second)
			return RunInfo{}, nil
		}, Timeout, "time-out", "an implementation that ignores ctx is abandoned at the deadline"},
		{"writes-input", correct(func(c *Case, o []*Buffer) { c.Input("x").SetI32(0, 7) }), InputModified, "input x changed", "implementations must not write their inputs"},
		{"guard-after", correct(func(c *Case, o []*Buffer) { o[0].Full[o[0].Guard+len(o[0].Data)] = 0 }), Guard, "y: guard byte 0 after the end", "one element past the end"},
		{"guard-before", correct(func(c *Case, o []*Buffer) { o[1].Full[o[1].Guard-1] = 0 }), Guard, "cache: guard byte 1 before the start", "one byte before the start"},
		{"canary", correct(func(c *Case, o []*Buffer) { o[1].Data[13] = 0 }), Guard, "cache: byte 13 is outside what the contract writes", "slot 3 belongs to no token"},
		{"unwritten", correct(func(c *Case, o []*Buffer) {
			o[1].Data[5] = o[1].Full[0] // byte 5 never stored: it keeps this run's poison (the guard's byte)
		}), Unwritten, "cache: byte 5 (element 5) kept the poison in both runs", "a byte the contract writes that kept both poisons"},
		{"nondeterministic", func(_ context.Context, c *Case, o []*Buffer) (RunInfo, error) {
			_, err := correct(nil)(nil, c, o)
			if calls.Add(1)%2 == 0 {
				o[0].SetI32(1, 5)
			}
			return RunInfo{}, err
		}, Nondeterministic, "runs with poison A and B disagree: y byte 4", "the second run differs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reason == "" {
				t.Fatal("every row needs a reason")
			}
			cr := &CaseRun{Impl: funcImpl{tt.name, tt.run}, Timeout: 300 * time.Millisecond}
			c := rampCase()
			rec := NewRecord(c, tt.name)
			if _, err := cr.RunCase(context.Background(), fakekernel.Kernel{}, c, rec); err != nil {
				t.Fatalf("RunCase: %v", err)
			}
			if rec.Class != tt.class {
				t.Fatalf("class = %q (%s), want %q (%s)", rec.Class, rec.Message, tt.class, tt.reason)
			}
			if (tt.class == Pass) != (rec.Verdict == VerdictPass) {
				t.Errorf("verdict %q with class %q", rec.Verdict, rec.Class)
			}
			if !strings.Contains(rec.Message, tt.inMsg) {
				t.Errorf("message %q does not contain %q", rec.Message, tt.inMsg)
			}
		})
	}
}

// The unwritten check must not cry wolf at a value that merely equals one
// poison: y[0] = 0xA5A5A5A5 is PoisonA in run A but not PoisonB in run B.
func TestValueEqualToPoisonIsWritten(t *testing.T) {
	c := fakekernel.NewCase("poison-value", []int32{int32(-0x5a5a5a5b), int32(0x5a5a5a5a)}, []int64{0, 1}, 2)
	if uint32(c.Input("x").I32(0)) != 0xA5A5A5A5 {
		t.Fatalf("test setup: x[0] = %#x", uint32(c.Input("x").I32(0)))
	}
	rec := NewRecord(c, "reference")
	if _, err := (&CaseRun{Impl: ReferenceImpl{}}).RunCase(context.Background(), fakekernel.Kernel{}, c, rec); err != nil {
		t.Fatal(err)
	}
	if rec.Failed() {
		t.Fatalf("reference failed: %s: %s", rec.Class, rec.Message)
	}
}

func TestRunCaseRecord(t *testing.T) {
	c := rampCase()
	rec := NewRecord(c, "x")
	out, err := (&CaseRun{Impl: funcImpl{"x", correct(nil)}}).RunCase(context.Background(), fakekernel.Kernel{}, c, rec)
	if err != nil {
		t.Fatal(err)
	}
	if rec.KernelTime != 1500*time.Nanosecond {
		t.Errorf("kernel time %v, want the implementation's 1.5µs", rec.KernelTime)
	}
	if len(rec.InputSHA256) != 64 {
		t.Errorf("input sha256 %q", rec.InputSHA256)
	}
	if string(rec.Params) != `{"n":4,"slots":4}` {
		t.Errorf("params %s", rec.Params)
	}
	// The reference's untouched slot keeps the canary; the got outputs are the first run's.
	if out.Want[1].Data[12] != byte(PoisonA) || out.Got[1].Data[12] != byte(PoisonA) {
		t.Errorf("slot 3 of want/got = 0x%02x/0x%02x, want poison A", out.Want[1].Data[12], out.Got[1].Data[12])
	}
	if out.Got[0].I32(3) != 4 {
		t.Errorf("got y[3] = %d", out.Got[0].I32(3))
	}
}

// A kernel whose own Go code fails is an internal error, not a verdict.
type brokenReference struct{ fakekernel.Kernel }

func (brokenReference) Reference(*Case, []*Tensor) error { return errors.New("reference: no table") }

func TestRunCaseInternalError(t *testing.T) {
	c := rampCase()
	_, err := (&CaseRun{Impl: ReferenceImpl{}}).RunCase(context.Background(), brokenReference{}, c, NewRecord(c, "reference"))
	var ie *InternalError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "no table") {
		t.Fatalf("err = %v, want an *InternalError naming the reference's error", err)
	}
	if got := ExitCode(Summary{}, err); got != ExitUntestable {
		t.Errorf("exit code %d, want 125", got)
	}
}

func TestUnavailableStopsTheRun(t *testing.T) {
	c := rampCase()
	impl := funcImpl{"cuda", func(context.Context, *Case, []*Buffer) (RunInfo, error) {
		return RunInfo{}, &RunError{Class: Unavailable, Msg: "no CUDA driver (libcuda.so.1 not found)"}
	}}
	_, err := (&CaseRun{Impl: impl}).RunCase(context.Background(), fakekernel.Kernel{}, c, NewRecord(c, "cuda"))
	var re *RunError
	if !errors.As(err, &re) || re.Class != Unavailable {
		t.Fatalf("err = %v, want the Unavailable *RunError", err)
	}
}

func TestComplement(t *testing.T) {
	tests := []struct {
		n    int
		rs   []Range
		want []Range
	}{
		{8, nil, []Range{{0, 8}}},
		{8, []Range{{0, 8}}, nil},
		{8, []Range{{4, 2}, {0, 2}}, []Range{{2, 2}, {6, 2}}},
		{8, []Range{{1, 3}, {2, 3}}, []Range{{0, 1}, {5, 3}}},
	}
	for _, tt := range tests {
		got, err := Complement("t", tt.n, tt.rs)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tt.want) {
			t.Fatalf("complement(%d, %v) = %v, want %v", tt.n, tt.rs, got, tt.want)
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Fatalf("complement(%d, %v) = %v, want %v", tt.n, tt.rs, got, tt.want)
			}
		}
	}
	if _, err := Complement("cache", 8, []Range{{6, 4}}); err == nil || !strings.Contains(err.Error(), "cache: written range [6, 10) outside the 8-byte output") {
		t.Errorf("out-of-range written range: err = %v", err)
	}
}

// closeCalls is the fake kernel whose comparison lists, besides its
// offenders, passing elements that came close (as the store's does for
// its scales): a passing case shows how close it came, a failing one only
// what broke.
type closeCalls struct{ fakekernel.Kernel }

func (k closeCalls) Check(c *Case, got, want []*Tensor) Result {
	res := k.Kernel.Check(c, got, want)
	res.Worst = append(res.Worst,
		Element{Tensor: "cache", Index: "[0] scale", Got: "1.004", Want: "1", Ratio: RatioOf(0.004)},
		Element{Tensor: "cache", Index: "[1] scale", Got: "2", Want: "2", Ratio: RatioOf(1)})
	return res
}

// TestFailureListsBreakingElements: a guard failure whose comparison
// passed lists no worst element (the guard failure listed passing
// scales at ratio 0.004), a comparison failure lists its offenders only
// (ratio above 1, or none for an exact comparison), and a pass keeps its
// closest calls.
func TestFailureListsBreakingElements(t *testing.T) {
	tests := []struct {
		name  string
		fault func(c *Case, o []*Buffer)
		class Class
		want  []string // the worst elements' indices
	}{
		{"pass", nil, Pass, []string{"[0] scale", "[1] scale"}},
		{"guard", func(c *Case, o []*Buffer) { o[1].Full[o[1].Guard-1] = 0 }, Guard, nil},
		{"mismatch", func(c *Case, o []*Buffer) { o[0].SetI32(2, 99) }, Mismatch, []string{"[2]"}},
	}
	for _, tt := range tests {
		c := rampCase()
		rec := NewRecord(c, tt.name)
		if _, err := (&CaseRun{Impl: funcImpl{tt.name, correct(tt.fault)}}).RunCase(context.Background(), closeCalls{}, c, rec); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range rec.Worst {
			got = append(got, e.Index)
		}
		if rec.Class != tt.class || strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%s: class %q, worst %q; want %q, %q", tt.name, rec.Class, got, tt.class, tt.want)
		}
	}
}
