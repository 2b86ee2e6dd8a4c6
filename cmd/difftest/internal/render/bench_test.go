package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/bench"
	"github.com/kerneldiff/kerneldiff/difftest/bench/stats"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// timedFake is an implementation of the fake kernel that times itself:
// TimeKernel returns the given times and, as the timed outputs, what
// fakekernel.Run gives with timedFault (for build b, faults[b]).
type timedFake struct {
	name   string
	fault  string // of the checked runs (Run)
	times  [][]time.Duration
	faults []string // of the timed outputs, per build
	base   *timedFake
	calls  []bench.TimingOptions
}

func (f *timedFake) Name() string { return f.name }
func (f *timedFake) Close() error { return nil }
func (f *timedFake) Run(_ context.Context, _ difftest.Kernel, c *difftest.Case, outs []*difftest.Buffer) (difftest.RunInfo, error) {
	return difftest.RunInfo{KernelTime: time.Microsecond}, fakekernel.Run(c, difftest.TensorsOf(outs), f.fault)
}
func (f *timedFake) Baseline() difftest.Impl {
	if f.base == nil {
		return nil
	}
	return f.base
}
func (f *timedFake) Properties() map[string]string {
	return map[string]string{difftest.PropDevice: "Fake GPU (sm_90)"}
}
func (f *timedFake) CopyBandwidth(context.Context, int, int) (*bench.Bandwidth, error) {
	return &bench.Bandwidth{Bytes: 1 << 20, GBps: 100, Time: stats.Stats{N: 10, Median: 20971 * time.Nanosecond}}, nil
}
func (f *timedFake) TimeKernel(_ context.Context, _ difftest.Kernel, c *difftest.Case, opt bench.TimingOptions) (*bench.Timing, error) {
	f.calls = append(f.calls, opt)
	n := 1
	if opt.Baseline {
		n = 2
	}
	tm := &bench.Timing{Poison: difftest.PoisonA, Copies: 1, FlushBytes: 2 << 20, ColdBytes: 2 << 20, L2Bytes: 1 << 20, Timer: "cuda-events"}
	for b := 0; b < n; b++ {
		tm.Times = append(tm.Times, f.times[b][:opt.Runs])
		bufs := difftest.NewBuffers(c, difftest.PoisonA)
		fault := ""
		if b < len(f.faults) {
			fault = f.faults[b]
		}
		if err := fakekernel.Run(c, difftest.TensorsOf(bufs), fault); err != nil {
			return nil, err
		}
		tm.Outputs = append(tm.Outputs, [][]*difftest.Buffer{bufs})
	}
	return tm, nil
}

func fakeItems(t *testing.T) []difftest.Item {
	t.Helper()
	return []difftest.Item{
		{Index: 0, Seed: 1, SuiteCase: difftest.SuiteCase{Spec: difftest.CaseSpec{Kernel: fakekernel.Name, Family: "ramp", Name: "ramp-n8", Params: map[string]any{"n": int64(8)}}}},
		{Index: 1, Seed: 1, SuiteCase: difftest.SuiteCase{Spec: difftest.CaseSpec{Kernel: fakekernel.Name, Family: "random", Name: "random-n64", Params: map[string]any{"n": int64(64), "slots": int64(80)}}}},
	}
}

func series(n int, start, step time.Duration) []time.Duration {
	var ts []time.Duration
	for i := 0; i < n; i++ {
		ts = append(ts, start+time.Duration(i)*step)
	}
	return ts
}

// benchTable renders rep as bench's table (WriteBenchTable); an error is
// fatal.
func benchTable(t *testing.T, rep *bench.BenchReport) string {
	t.Helper()
	return texttest.Render(t, func(w io.Writer) error { return WriteBenchTable(w, rep) })
}

func TestBenchOneBuild(t *testing.T) {
	im := &timedFake{name: "cuda", times: [][]time.Duration{series(20, 10*time.Microsecond, 100*time.Nanosecond)}}
	rep, err := bench.Bench(context.Background(), bench.BenchConfig{Suite: "t", Items: fakeItems(t), Impl: im, ImplName: "cuda", Warmup: 3, Runs: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || rep.Failed() != 0 || rep.Method.Timer != "cuda-events" || rep.Method.FlushBytes != 2<<20 || rep.Method.L2Bytes != 1<<20 {
		t.Fatalf("report %+v", rep)
	}
	if len(im.calls) != 2 || im.calls[0] != (bench.TimingOptions{Warmup: 3, Runs: 20, Cold: bench.ColdFlush}) {
		t.Errorf("TimeKernel options %+v", im.calls)
	}
	r := rep.Results[0]
	// ramp-n8: 7 slots written (the last token has out_loc −1): 16·8 + 28 bytes.
	if r.MinBytes != 156 {
		t.Errorf("MinBytes = %d, want 156", r.MinBytes)
	}
	st := r.Builds[0].Stats
	// 10.0 … 11.9 µs: the median of 20 is the mean of 10.9 and 11.0.
	if st == nil || st.Median != 10950*time.Nanosecond || st.N != 20 || len(r.Builds[0].TimesNS) != 20 {
		t.Fatalf("stats %+v", st)
	}
	wantGBps := 156 / 10.95e-6 / 1e9
	if math.Abs(r.Builds[0].EffectiveGBps-wantGBps) > 1e-12 {
		t.Errorf("effective GB/s %v, want %v", r.Builds[0].EffectiveGBps, wantGBps)
	}
	// floor = 156 B / 100 GB/s = 1.56 ns; 100 · 1.56 ns / 10.95 µs.
	if want := 100 * (156 / 100e9) / 10.95e-6; math.Abs(r.Builds[0].PctOfFloor-want) > 1e-12 {
		t.Errorf("%% of floor %v, want %v", r.Builds[0].PctOfFloor, want)
	}
	out := benchTable(t, rep)
	texttest.Contains(t, "table", out,
		"bench: suite t, impl cuda, device Fake GPU (sm_90), cold L2: 2.0 MiB written before each run (L2 1.0 MiB), CUDA events, 3 warm-up + 20 timed runs",
		"copy bandwidth: 100.0 GB/s (cuMemcpyDtoD of 1.0 MiB",
		"CASE                          MEDIAN     IQR  MIN BYTES    GB/s  % OF FLOOR",
		"fake_scatter/ramp-n8     10.95µs ±4%  0.95µs      156 B  0.0142     0.0142%",
		"2 cases timed, 0 failed their checks",
	)
}

func TestBenchBaseline(t *testing.T) {
	base := series(20, 100*time.Microsecond, time.Microsecond)
	faster := series(20, 90*time.Microsecond, 900*time.Nanosecond)
	var same []time.Duration
	for i := range 20 {
		same = append(same, base[(i*7)%20])
	}
	for _, tc := range []struct {
		name        string
		new         []time.Duration
		delta       string
		ratio       float64
		significant bool
	}{
		{"10% faster", faster, "-10.0%", 0.9, true},
		{"the same times in another order", same, "~", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bl := &timedFake{name: "cuda"}
			im := &timedFake{name: "cuda", times: [][]time.Duration{tc.new, base}, base: bl}
			rep, err := bench.Bench(context.Background(), bench.BenchConfig{Suite: "t", Items: fakeItems(t)[:1], Impl: im, ImplName: "cuda", Baseline: bl, BaselineName: "base.fatbin", Runs: 20})
			if err != nil {
				t.Fatal(err)
			}
			if len(im.calls) != 1 || !im.calls[0].Baseline {
				t.Fatalf("TimeKernel calls %+v, want one with Baseline", im.calls)
			}
			c := rep.Results[0].Comparison
			if c == nil || math.Abs(c.Ratio-tc.ratio) > 1e-12 || c.Significant != tc.significant || c.NBase != 20 || c.NNew != 20 {
				t.Fatalf("comparison %+v", c)
			}
			if math.Abs(rep.Geomean-tc.ratio) > 1e-12 {
				t.Errorf("geomean %v", rep.Geomean)
			}
			if got := rep.Slowdowns(1.05); len(got) != 0 {
				t.Errorf("slowdowns %v", got)
			}
			row := ""
			for _, l := range strings.Split(benchTable(t, rep), "\n") {
				if strings.HasPrefix(l, "fake_scatter/ramp-n8") {
					row = l
				}
			}
			if f := strings.Fields(row); len(f) != 12 || f[8] != tc.delta || f[1] != "109.5µs" || f[2] != "±4%" || f[5] != fmt.Sprintf("%.3f", tc.ratio) || f[9] != fmt.Sprintf("%.3f", c.P) || f[10] != "20+20" {
				t.Errorf("row %q (%d fields), want delta %s", row, len(f), tc.delta)
			}
		})
	}
}

func TestBenchSlowdown(t *testing.T) {
	base := series(20, 100*time.Microsecond, time.Microsecond)
	slower := series(20, 120*time.Microsecond, 1200*time.Nanosecond)
	bl := &timedFake{name: "cuda"}
	im := &timedFake{name: "cuda", times: [][]time.Duration{slower, base}, base: bl}
	rep, err := bench.Bench(context.Background(), bench.BenchConfig{Items: fakeItems(t)[:1], Impl: im, ImplName: "cuda", Baseline: bl, BaselineName: "b", Runs: 20})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Slowdowns(1.10); len(got) != 1 || math.Abs(got[0].Comparison.Ratio-1.2) > 1e-12 {
		t.Errorf("Slowdowns(1.10) = %v, want the 1.2× case", got)
	}
	if got := rep.Slowdowns(1.25); len(got) != 0 {
		t.Errorf("Slowdowns(1.25) = %v, want none", got)
	}
}

// A wrong kernel is not timed; timed outputs that differ from the checked
// run fail the build.
func TestBenchChecks(t *testing.T) {
	ts := series(20, 10*time.Microsecond, 100*time.Nanosecond)
	wrong := &timedFake{name: "cuda", fault: "off-by-one", times: [][]time.Duration{ts}}
	rep, err := bench.Bench(context.Background(), bench.BenchConfig{Items: fakeItems(t)[:1], Impl: wrong, ImplName: "cuda", Runs: 20})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if !r.Failed() || r.Builds[0].Class != difftest.Mismatch || r.Builds[0].Stats != nil || len(wrong.calls) != 0 || !strings.Contains(strings.Join(r.Warnings, ";"), "not timed") {
		t.Errorf("a mismatching kernel: %+v, calls %d", r, len(wrong.calls))
	}
	drift := &timedFake{name: "cuda", times: [][]time.Duration{ts}, faults: []string{"off-by-one"}}
	rep, err = bench.Bench(context.Background(), bench.BenchConfig{Items: fakeItems(t)[:1], Impl: drift, ImplName: "cuda", Runs: 20})
	if err != nil {
		t.Fatal(err)
	}
	r = rep.Results[0]
	if !r.Failed() || r.Builds[0].Class != difftest.Nondeterministic || !strings.Contains(r.Builds[0].Message, "timed launches (input copy 0): differ from the checked run's outputs: y byte 28") {
		t.Errorf("timed outputs differ: %+v", r.Builds[0])
	}
	texttest.Contains(t, "table", benchTable(t, rep), "failures:\n  fake_scatter/ramp-n8 [cuda]: nondeterministic: timed launches", "1 failed their checks")
	stray := &timedFake{name: "cuda", times: [][]time.Duration{ts}, faults: []string{"write-negative"}}
	rep, _ = bench.Bench(context.Background(), bench.BenchConfig{Items: fakeItems(t)[:1], Impl: stray, ImplName: "cuda", Runs: 20})
	if r := rep.Results[0].Builds[0]; r.Class != difftest.Guard || !strings.Contains(r.Message, "cache: byte 28 is outside what the contract writes") {
		t.Errorf("a timed launch writing a slot it does not own: %+v", r)
	}
}

// selfReported times itself only through RunInfo.KernelTime (a serve
// program): runs alternate between the two builds.
type selfReported struct {
	name  string
	times []time.Duration
	i     int
	log   *[]string
}

func (s *selfReported) Name() string { return s.name }
func (s *selfReported) Close() error { return nil }
func (s *selfReported) Run(_ context.Context, _ difftest.Kernel, c *difftest.Case, outs []*difftest.Buffer) (difftest.RunInfo, error) {
	*s.log = append(*s.log, s.name)
	var t time.Duration
	if s.times != nil {
		t = s.times[s.i%len(s.times)]
		s.i++
	}
	return difftest.RunInfo{KernelTime: t}, fakekernel.Run(c, difftest.TensorsOf(outs), "")
}

func TestBenchByRuns(t *testing.T) {
	var log []string
	a := &selfReported{name: "A", times: series(4, 10*time.Microsecond, time.Microsecond), log: &log}
	b := &selfReported{name: "B", times: series(4, 20*time.Microsecond, time.Microsecond), log: &log}
	rep, err := bench.Bench(context.Background(), bench.BenchConfig{Items: fakeItems(t)[:1], Impl: a, ImplName: "serve:a", Baseline: b, BaselineName: "serve:b", Warmup: 1, Runs: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Checks: A twice (poison A, B), B twice; then warm-up and runs alternating A B, B A, A B, B A.
	if got := strings.Join(log, ""); got != "AABB"+"AB"+"BA"+"AB"+"BA" {
		t.Errorf("run order %s", got)
	}
	r := rep.Results[0]
	if rep.Method.Timer != "impl-reported" || r.Comparison == nil || r.Builds[0].Stats.N != 3 {
		t.Fatalf("result %+v", r)
	}
	texttest.Contains(t, "table", benchTable(t, rep), "times the implementation reports (L2 not controlled)")
	var none []string
	quiet := &selfReported{name: "Q", log: &none}
	_, err = bench.Bench(context.Background(), bench.BenchConfig{Items: fakeItems(t)[:1], Impl: quiet, ImplName: "exec:q", Runs: 3})
	var re *difftest.RunError
	if !errors.As(err, &re) || re.Class != difftest.Unavailable || !strings.Contains(re.Msg, "reports no kernel time") {
		t.Errorf("no kernel time: %v", err)
	}
}
