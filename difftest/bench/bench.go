// difftest bench (docs/nightly.md): kernel time with a cold L2, its median
// and interquartile range over N runs after warm-up, the least bytes each
// kernel must move, the device's copy bandwidth measured in the same run,
// and the ratio of the two (% of the bandwidth floor); with a baseline
// build, both timed interleaved on the same inputs and compared as
// benchstat compares (difftest/bench/stats).
//
// The method follows the kernel benchmarks of the projects whose kernels
// these are:
//   - FlashInfer (flashinfer.testing.bench_gpu_time): CUDA events around
//     each launch, the L2 flushed before each run by writing a buffer of at
//     least twice its size, and the median reported;
//   - sglang's kernel benchmarks: rotating copies of the inputs whose total
//     exceeds the L2, each run reading the copy the previous runs left
//     coldest (ColdRotate);
//   - vLLM's kernel benchmarks: the effective bandwidth, the bytes a kernel
//     must move divided by its time, against the device's measured copy
//     bandwidth.
//
// A fast wrong kernel is not a result: every case runs the whole check
// pipeline (RunCase) on each build before it is timed, and the outputs of
// the timed launches are checked again afterwards (guards, canaries, and
// the same result as the checked run by Kernel.Equivalent).

package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/bench/stats"
)

// ColdCache says how bench keeps each timed run from finding its data in
// the L2 cache.
type ColdCache string

const (
	// ColdFlush writes a flush buffer of at least twice the L2 (the device
	// attribute) before every timed run, outside the timed events
	// (FlashInfer's bench_gpu_time, Triton's do_bench).
	ColdFlush ColdCache = "flush"
	// ColdRotate allocates enough copies of the inputs and outputs that
	// together they exceed twice the L2, and times run i on copy
	// i mod copies (sglang's kernel benchmarks).
	ColdRotate ColdCache = "rotate"
)

// ParseColdCache parses "flush" or "rotate".
func ParseColdCache(s string) (ColdCache, error) {
	switch c := ColdCache(s); c {
	case ColdFlush, ColdRotate:
		return c, nil
	}
	return "", fmt.Errorf("--cold %q: want flush or rotate", s)
}

// TimingOptions is what bench asks of an implementation that times itself
// (KernelTimer).
type TimingOptions struct {
	Warmup int       // untimed runs before the timed ones (each build)
	Runs   int       // timed runs per build, ≥ 1
	Cold   ColdCache // how the L2 is kept cold
	// Baseline asks for the implementation's baseline build too
	// (BaselineProvider), interleaved with it: run i times the builds in
	// the order 0, 1 for even i and 1, 0 for odd i, on the same inputs.
	Baseline bool
}

// Timing is the result of one KernelTimer call.
type Timing struct {
	// Times holds each build's timed runs, [build][run], build 0 the
	// implementation and build 1 its baseline: device time between two
	// CUDA events around the launch alone.
	Times [][]time.Duration
	// Outputs holds, [build][copy][output], each input copy's guarded
	// output buffers after the last timed launch on it. They start as
	// NewBuffers(c, Poison) before the first launch.
	Outputs [][][]*difftest.Buffer
	Poison  difftest.Poison
	// Copies is the number of input copies rotated (1 with ColdFlush).
	Copies int
	// FlushBytes is the size of the buffer written before each run
	// (ColdFlush), 0 with ColdRotate; ColdBytes the bytes between two
	// runs on the same data (the flush buffer, or the other copies).
	FlushBytes int64
	ColdBytes  int64
	// L2Bytes is the device's L2 cache size as the driver reports it.
	L2Bytes int64
	// Timer names the clock: "cuda-events".
	Timer string
}

// KernelTimer is an optional interface of an Impl that times the kernel
// itself on its device, with the L2 kept cold as opt asks (the `cuda` and
// `emu` implementations). An implementation without it is timed by bench
// from the kernel time its runs report (RunInfo.KernelTime), without
// control of the cache.
type KernelTimer interface {
	TimeKernel(ctx context.Context, k difftest.Kernel, c *difftest.Case, opt TimingOptions) (*Timing, error)
}

// BaselineProvider is an optional interface of an Impl loaded with a
// baseline build beside its own (`cuda --baseline FATBIN`): Baseline
// returns the Impl that runs the baseline build on the same device and
// worker (for the checks), or nil when there is none; TimeKernel with
// TimingOptions.Baseline times both.
type BaselineProvider interface {
	Baseline() difftest.Impl
}

// Bandwidth is the device's copy bandwidth as bench measures it: a
// device-to-device copy of Bytes timed with events, counting the bytes
// read and the bytes written (2·Bytes per copy), as a kernel's floor
// counts what it reads and what it writes.
type Bandwidth struct {
	Bytes int64       `json:"bytes"` // one copy's size
	Time  stats.Stats `json:"time"`  // of the timed copies
	// GBps is 2·Bytes / the median time, in 10⁹ bytes per second.
	GBps float64 `json:"gbps"`
}

// BandwidthMeter is an optional interface of an Impl that can measure its
// device's copy bandwidth (cuMemcpyDtoD between two buffers of at least
// four times the L2).
type BandwidthMeter interface {
	CopyBandwidth(ctx context.Context, warmup, runs int) (*Bandwidth, error)
}

// TrafficModel is an optional interface of a Kernel: MinBytes returns the
// bytes any correct implementation of c must move between device memory
// and the chip at the least: each input byte it must read once and each
// output byte it must write once (what the kernel's doc says it counts).
// Bench divides it by the copy bandwidth for the floor time.
type TrafficModel interface {
	MinBytes(c *difftest.Case) int64
}

// BenchConfig describes one `difftest bench`.
type BenchConfig struct {
	Suite    string
	Items    []difftest.Item
	Impl     difftest.Impl
	ImplName string
	// Baseline, when set, is timed against Impl on every case. When it is
	// Impl's own BaselineProvider.Baseline and Impl is a KernelTimer, the
	// two builds are timed interleaved in one TimeKernel call; otherwise
	// bench alternates runs of the two implementations itself.
	Baseline     difftest.Impl
	BaselineName string
	Warmup       int           // in [0, MaxBenchRuns]; default 0
	Runs         int           // in [2, MaxBenchRuns]
	Cold         ColdCache     // "" means ColdFlush
	Timeout      time.Duration // per run of a check; the timing call gets Timeout·(runs+warmup+1)·builds
	Alpha        float64       // significance level; 0 means DefaultAlpha
	// OnResult receives each case's result as it ends.
	OnResult func(*BenchResult) error
	// Progress, when set, is called after each case.
	Progress func(done, total int, elapsed time.Duration)
}

// BenchReport is the JSON document `difftest bench --json` writes and
// `difftest report` reads.
type BenchReport struct {
	Type       string            `json:"type"` // "bench"
	Version    int               `json:"version"`
	Suite      string            `json:"suite"`
	Impl       string            `json:"impl"`
	Baseline   string            `json:"baseline,omitempty"`
	Properties map[string]string `json:"properties,omitempty"` // device, driver, emulated, fatbin hashes (Prop*)
	Method     BenchMethod       `json:"method"`
	Bandwidth  *Bandwidth        `json:"bandwidth,omitempty"`
	Results    []*BenchResult    `json:"results"`
	// Geomean is the geometric mean of the significant and insignificant
	// ratios alike over the cases with a comparison (benchstat's summary
	// row), 0 without a baseline.
	Geomean float64       `json:"geomean_ratio,omitempty"`
	Started time.Time     `json:"started"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Emulated is true when the times come from the emulated driver: they
	// are the CPU emulator's and mean nothing about a GPU.
	Emulated bool `json:"emulated,omitempty"`
}

// BenchReportVersion is BenchReport.Version.
const BenchReportVersion = 1

// BenchMethod records how the times were taken.
type BenchMethod struct {
	Warmup     int       `json:"warmup"`
	Runs       int       `json:"runs"`
	Cold       ColdCache `json:"cold"`
	Timer      string    `json:"timer"` // "cuda-events", or "impl-reported" (RunInfo.KernelTime, cache not controlled)
	L2Bytes    int64     `json:"l2_bytes,omitempty"`
	FlushBytes int64     `json:"flush_bytes,omitempty"`
	Alpha      float64   `json:"alpha"`
}

// BenchResult is one case of a bench run.
type BenchResult struct {
	Index       int             `json:"index"`
	Case        string          `json:"case"`
	Kernel      string          `json:"kernel"`
	Family      string          `json:"family"`
	Params      json.RawMessage `json:"params"`
	Seed        uint64          `json:"seed"`
	InputSHA256 string          `json:"input_sha256"`
	// MinBytes is the kernel's TrafficModel floor, 0 when it has none.
	MinBytes int64 `json:"min_bytes,omitempty"`
	// Builds holds the implementation (0) and the baseline (1).
	Builds     []BuildResult     `json:"builds"`
	Comparison *stats.Comparison `json:"comparison,omitempty"`
	Copies     int               `json:"copies,omitempty"`     // input copies rotated
	ColdBytes  int64             `json:"cold_bytes,omitempty"` // bytes between two runs on the same data
	Warnings   []string          `json:"warnings,omitempty"`
}

// BuildResult is one build's verdict and times on one case.
type BuildResult struct {
	Name    string           `json:"name"`
	Verdict difftest.Verdict `json:"verdict"` // of the check before timing and of the timed outputs
	Class   difftest.Class   `json:"class,omitempty"`
	Message string           `json:"message,omitempty"`
	TimesNS []int64          `json:"times_ns,omitempty"` // every timed run, in run order
	Stats   *stats.Stats     `json:"stats,omitempty"`
	// EffectiveGBps is MinBytes / the median time (vLLM's effective
	// bandwidth), 10⁹ bytes per second; 0 without a floor.
	EffectiveGBps float64 `json:"effective_gbps,omitempty"`
	// PctOfFloor is 100 · floor / median, floor = MinBytes / the copy
	// bandwidth: 100 % is a kernel as fast as copying its bytes.
	PctOfFloor float64 `json:"pct_of_floor,omitempty"`
}

// Failed reports whether any build of r failed its checks.
func (r *BenchResult) Failed() bool {
	for _, b := range r.Builds {
		if b.Verdict == difftest.VerdictFail {
			return true
		}
	}
	return false
}

// Bench runs cfg.Items: for each case, the checks on every build, then
// the timing, then the checks of the timed outputs. It measures the copy
// bandwidth first when the implementation is a BandwidthMeter. It stops
// on a *SuiteError, an *InternalError, an Unavailable implementation or
// a cancelled ctx, returning what it has; a failing check is recorded in
// the result and the run goes on (the CLI exits 1 for it).
func Bench(ctx context.Context, cfg BenchConfig) (*BenchReport, error) {
	start := time.Now()
	if cfg.Cold == "" {
		cfg.Cold = ColdFlush
	}
	if cfg.Alpha <= 0 {
		cfg.Alpha = stats.DefaultAlpha
	}
	rep := &BenchReport{
		Type: "bench", Version: BenchReportVersion, Suite: cfg.Suite, Impl: cfg.ImplName, Baseline: cfg.BaselineName,
		Method:  BenchMethod{Warmup: cfg.Warmup, Runs: cfg.Runs, Cold: cfg.Cold, Timer: "impl-reported", Alpha: cfg.Alpha},
		Started: start.UTC(), Results: []*BenchResult{},
	}
	if _, ok := cfg.Impl.(KernelTimer); ok && (cfg.Baseline == nil || ownBaseline(cfg.Impl, cfg.Baseline)) {
		rep.Method.Timer = "cuda-events"
	}
	if cfg.Runs < 2 || cfg.Warmup < 0 || cfg.Runs > MaxBenchRuns || cfg.Warmup > MaxBenchRuns {
		return rep, fmt.Errorf("bench needs runs in [2, %d] and warmup in [0, %d], got %d and %d", MaxBenchRuns, MaxBenchRuns, cfg.Runs, cfg.Warmup)
	}
	if pp, ok := cfg.Impl.(difftest.PropertyProvider); ok {
		rep.Properties = pp.Properties()
		rep.Emulated = rep.Properties[difftest.PropEmulated] != ""
	}
	if bm, ok := cfg.Impl.(BandwidthMeter); ok {
		bw, err := bm.CopyBandwidth(ctx, 3, max(cfg.Runs, 10))
		if err != nil {
			return rep, fmt.Errorf("measuring the copy bandwidth: %w", err)
		}
		rep.Bandwidth = bw
	}
	var ratios []float64
	for n, it := range cfg.Items {
		if ctx.Err() != nil {
			return rep, context.Cause(ctx)
		}
		res, err := benchItem(ctx, cfg, rep, it)
		if err != nil {
			if ctx.Err() != nil {
				err = context.Cause(ctx)
			}
			rep.Elapsed = time.Since(start)
			return rep, err
		}
		rep.Results = append(rep.Results, res)
		if res.Comparison != nil && res.Comparison.Ratio > 0 {
			ratios = append(ratios, res.Comparison.Ratio)
		}
		if cfg.OnResult != nil {
			if err := cfg.OnResult(res); err != nil {
				return rep, err
			}
		}
		if cfg.Progress != nil {
			cfg.Progress(n+1, len(cfg.Items), time.Since(start))
		}
	}
	rep.Geomean = stats.Geomean(ratios)
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// benchItem checks, times and re-checks one case.
func benchItem(ctx context.Context, cfg BenchConfig, rep *BenchReport, it difftest.Item) (*BenchResult, error) {
	k, c, err := difftest.GenerateCase(it)
	if err != nil {
		return nil, err
	}
	sum := difftest.InputDigest(c)
	res := &BenchResult{Index: it.Index, Case: c.ID, Kernel: c.Kernel, Family: c.Family, Params: difftest.MarshalParams(c), Seed: c.Seed, InputSHA256: fmt.Sprintf("%x", sum)}
	if tm, ok := k.(TrafficModel); ok {
		res.MinBytes = tm.MinBytes(c)
	}
	builds, names := []difftest.Impl{cfg.Impl}, []string{cfg.ImplName}
	if cfg.Baseline != nil {
		builds, names = append(builds, cfg.Baseline), append(names, cfg.BaselineName)
	}
	res.Builds = make([]BuildResult, len(builds))
	checked := make([][]*difftest.Tensor, len(builds))
	for b, im := range builds {
		rec := difftest.NewRecord(c, names[b])
		out, err := (&difftest.CaseRun{Impl: im, Timeout: cfg.Timeout}).RunCase(ctx, k, c, rec)
		if err != nil {
			return nil, err
		}
		res.Builds[b] = BuildResult{Name: names[b], Verdict: rec.Verdict, Class: rec.Class, Message: rec.Message}
		res.Warnings = append(res.Warnings, rec.Warnings...)
		checked[b] = out.Got
	}
	if res.Failed() {
		res.Warnings = append(res.Warnings, "not timed: a build failed its checks (a fast wrong kernel is not a result)")
		return res, nil
	}
	for _, b := range res.Builds {
		if b.Verdict == difftest.VerdictSkip {
			res.Warnings = append(res.Warnings, "not timed: "+b.Name+" does not offer this case")
			return res, nil
		}
	}
	opt := TimingOptions{Warmup: cfg.Warmup, Runs: cfg.Runs, Cold: cfg.Cold, Baseline: cfg.Baseline != nil}
	tm, err := timeBuilds(ctx, cfg, builds, k, c, opt)
	if err != nil {
		var re *difftest.RunError
		if !errors.As(err, &re) || re.Class == difftest.Unavailable {
			return nil, err
		}
		for b := range res.Builds {
			res.Builds[b].Verdict, res.Builds[b].Class, res.Builds[b].Message = difftest.VerdictFail, re.Class, "while timing: "+re.Msg
		}
		return res, nil
	}
	rep.Method.Timer = tm.Timer
	if tm.L2Bytes > 0 {
		rep.Method.L2Bytes = tm.L2Bytes
	}
	if tm.FlushBytes > 0 {
		rep.Method.FlushBytes = tm.FlushBytes
	}
	res.Copies, res.ColdBytes = tm.Copies, tm.ColdBytes
	if tm.L2Bytes > 0 && tm.ColdBytes < 2*tm.L2Bytes {
		res.Warnings = append(res.Warnings, fmt.Sprintf("only %d bytes between two runs on the same data, under twice the L2 (%d): the L2 may be warm", tm.ColdBytes, tm.L2Bytes))
	}
	if err := checkTimed(k, c, checked, tm, res); err != nil {
		return nil, err
	}
	if res.Failed() {
		return res, nil
	}
	for b := range res.Builds {
		br := &res.Builds[b]
		st := stats.Summarize(tm.Times[b])
		br.Stats = &st
		for _, t := range tm.Times[b] {
			br.TimesNS = append(br.TimesNS, t.Nanoseconds())
		}
		if res.MinBytes > 0 && st.Median > 0 {
			br.EffectiveGBps = float64(res.MinBytes) / st.Median.Seconds() / 1e9
			if rep.Bandwidth != nil && rep.Bandwidth.GBps > 0 {
				floor := float64(res.MinBytes) / (rep.Bandwidth.GBps * 1e9)
				br.PctOfFloor = 100 * floor / st.Median.Seconds()
			}
		}
	}
	if len(builds) == 2 {
		cmp := stats.CompareTimes(tm.Times[1], tm.Times[0], cfg.Alpha)
		res.Comparison = &cmp
	}
	return res, nil
}

// timeBuilds times the builds: in one KernelTimer call when the
// implementation times itself (and the baseline is its own), else by
// alternating runs of each build and reading RunInfo.KernelTime.
func timeBuilds(ctx context.Context, cfg BenchConfig, builds []difftest.Impl, k difftest.Kernel, c *difftest.Case, opt TimingOptions) (*Timing, error) {
	budget := time.Duration(0)
	if cfg.Timeout > 0 {
		budget = cfg.Timeout * time.Duration((opt.Runs+opt.Warmup+1)*len(builds))
	}
	if kt, ok := cfg.Impl.(KernelTimer); ok && (len(builds) == 1 || ownBaseline(cfg.Impl, builds[1])) {
		if budget > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, budget)
			defer cancel()
		}
		tm, err := kt.TimeKernel(ctx, k, c, opt)
		if err != nil {
			return nil, err
		}
		if len(tm.Times) != len(builds) || len(tm.Outputs) != len(builds) {
			return nil, &difftest.InternalError{Case: c.ID, Err: fmt.Errorf("TimeKernel returned %d builds of times and %d of outputs for %d builds", len(tm.Times), len(tm.Outputs), len(builds))}
		}
		return tm, nil
	}
	return timeByRuns(ctx, cfg, builds, k, c, opt)
}

func ownBaseline(impl, baseline difftest.Impl) bool {
	bp, ok := impl.(BaselineProvider)
	return ok && bp.Baseline() != nil && bp.Baseline() == baseline
}

// timeByRuns times implementations that do not time themselves: each run
// is a whole Run of the case, and its RunInfo.KernelTime the sample (an
// exec or serve program's own timer); the cache is not controlled. Runs
// alternate between the builds as TimingOptions.Baseline describes.
func timeByRuns(ctx context.Context, cfg BenchConfig, builds []difftest.Impl, k difftest.Kernel, c *difftest.Case, opt TimingOptions) (*Timing, error) {
	tm := &Timing{Times: make([][]time.Duration, len(builds)), Outputs: make([][][]*difftest.Buffer, len(builds)), Poison: difftest.PoisonA, Copies: 1, Timer: "impl-reported"}
	for i := 0; i < opt.Warmup+opt.Runs; i++ {
		for j := range builds {
			b := j
			if i%2 == 1 {
				b = len(builds) - 1 - j
			}
			bufs := difftest.NewBuffers(c, difftest.PoisonA)
			info, rerr := difftest.RunGuarded(ctx, builds[b], k, c, bufs, cfg.Timeout)
			if rerr != nil {
				return nil, rerr
			}
			if info.KernelTime <= 0 {
				return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: fmt.Sprintf("%s reports no kernel time, so there is nothing to time (exec: programs never do; a serve: program may send kernel_time_ns)", builds[b].Name())}
			}
			if i >= opt.Warmup {
				tm.Times[b] = append(tm.Times[b], info.KernelTime)
			}
			tm.Outputs[b] = [][]*difftest.Buffer{bufs}
		}
	}
	return tm, nil
}

// checkTimed checks the outputs of the timed launches of every build and
// copy: guards and canaries intact, and the same result as the checked
// run (Kernel.Equivalent). A failure marks the build failed in res.
func checkTimed(k difftest.Kernel, c *difftest.Case, checked [][]*difftest.Tensor, tm *Timing, res *BenchResult) error {
	written := k.Written(c)
	untouched := make([][]difftest.Range, len(c.Outputs))
	for i, o := range c.Outputs {
		var err error
		if untouched[i], err = difftest.Complement(o.Name, o.Bytes(), written[i]); err != nil {
			return &difftest.InternalError{Case: c.ID, Err: err}
		}
	}
	for b := range res.Builds {
		for cp, bufs := range tm.Outputs[b] {
			if len(bufs) != len(c.Outputs) {
				return &difftest.InternalError{Case: c.ID, Err: fmt.Errorf("timed outputs of build %d copy %d: %d buffers, want %d", b, cp, len(bufs), len(c.Outputs))}
			}
			fail := func(class difftest.Class, msg string) {
				br := &res.Builds[b]
				if br.Verdict != difftest.VerdictFail {
					br.Verdict, br.Class, br.Message = difftest.VerdictFail, class, fmt.Sprintf("timed launches (input copy %d): %s", cp, msg)
				}
			}
			if err := difftest.CheckGuards(bufs, tm.Poison); err != nil {
				fail(difftest.Guard, err.Error())
				continue
			}
			outs := difftest.TensorsOf(bufs)
			if err := difftest.CheckCanary(outs, untouched, tm.Poison); err != nil {
				fail(difftest.Guard, err.Error())
				continue
			}
			if err := k.Equivalent(c, checked[b], outs); err != nil {
				fail(difftest.Nondeterministic, "differ from the checked run's outputs: "+err.Error())
			}
		}
	}
	return nil
}

// Slowdowns returns the cases of rep whose comparison is significant with
// a ratio above max (e.g. 1.10 for "more than 10 % slower").
func (rep *BenchReport) Slowdowns(max float64) []*BenchResult {
	var out []*BenchResult
	for _, r := range rep.Results {
		if c := r.Comparison; c != nil && c.Significant && c.Ratio > max && !math.IsInf(c.Ratio, 0) {
			out = append(out, r)
		}
	}
	return out
}

// Failed counts the results with a failed build.
func (rep *BenchReport) Failed() int {
	n := 0
	for _, r := range rep.Results {
		if r.Failed() {
			n++
		}
	}
	return n
}
