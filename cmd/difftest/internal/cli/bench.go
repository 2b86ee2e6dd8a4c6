package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/render"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/bench"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/fixtures"
)

// benchCmd is `difftest bench`: kernel times with a cold L2 against the
// copy-bandwidth floor, and with --baseline an A/B comparison of two
// builds (bench.Bench). Exit 0 when every case passed its checks (a
// slowdown is reported, not failed, unless --max-slowdown is given), 1
// when a check failed or a significant slowdown exceeds --max-slowdown,
// 2 for usage, 125 when nothing could be timed.
func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench", stderr)
	impl := fs.String("impl", difftest.DefaultImpl(), "implementation: cuda, emu, cudasrc:PATH, cudasrc-emu:PATH, or serve:CMD / exec:CMD (timed by the kernel time they report)")
	fatbin := fs.String("fatbin", "", "compiled kernels, a fatbin `FILE` (cuda, emu); default build/kernels.fatbin")
	baseline := fs.String("baseline", "", "time against a baseline: a fatbin `FILE` (cuda, emu: both builds in one worker, interleaved, same inputs), or an implementation (serve:CMD, exec:CMD, cudasrc:PATH, cudasrc-emu:PATH, reference, mutant:NAME)")
	device := fs.Int("device", 0, "CUDA device ordinal (cuda, emu)")
	suiteName := fs.String("suite", "bench", "suite `NAME|FILE`: bench (the shapes of docs/nightly.md), any embedded suite, or a TOML file")
	runRe := fs.String("run", "", "time only cases whose id matches `REGEXP`")
	seed := fs.Uint64("seed", 1, "suite seed: inputs are drawn from (seed, case id)")
	warmup := fs.Int("warmup", 5, "untimed runs before the timed ones, per build")
	runs := fs.Int("runs", 30, "timed runs per build and case (≥ 2; ≥ 6 for a median interval)")
	cold := fs.String("cold", "flush", "cold L2: flush (write a buffer of twice the L2 before each run) or rotate (input copies exceeding twice the L2)")
	timeout := fs.Duration("timeout", difftest.DefaultTimeout, "time-out per run of the implementation")
	jsonOut := fs.String("json", "", "write the bench report (JSON) to `FILE`, for difftest report and dashboards")
	maxSlow := fs.String("max-slowdown", "", "exit 1 when a case is significantly slower than the baseline by more than `X` (a ratio such as 1.10, or 10%)")
	if code, ok := parseFlagsOnly(fs, args, "bench", stderr); !ok {
		return code
	}
	if err := checkTimeout(*timeout); err != nil {
		return usageErr(stderr, "%v", err)
	}
	if *runs < 2 || *warmup < 0 || *runs > maxBenchRuns || *warmup > maxBenchRuns {
		return usageErr(stderr, "--runs %d --warmup %d: want runs ≥ 2 and warmup ≥ 0, each at most %d", *runs, *warmup, maxBenchRuns)
	}
	if *device < 0 {
		return usageErr(stderr, "--device %d: must be ≥ 0", *device)
	}
	coldMode, err := bench.ParseColdCache(*cold)
	if err != nil {
		return usageErr(stderr, "%v", err)
	}
	slowLimit := 0.0
	if *maxSlow != "" {
		if slowLimit, err = parseSlowdown(*maxSlow); err != nil {
			return usageErr(stderr, "%v", err)
		}
	}
	if *maxSlow != "" && *baseline == "" {
		return usageErr(stderr, "--max-slowdown needs --baseline")
	}
	if *impl == "" {
		return usageErr(stderr, "no --impl given and this build has no cuda implementation")
	}
	if err := checkOutputFiles("--json", *jsonOut); err != nil {
		return usageErr(stderr, "%v", err)
	}
	if err := difftest.CheckNotInput("--json", *jsonOut, "--suite", *suiteName, "--fatbin", *fatbin, "--baseline", *baseline); err != nil {
		return usageErr(stderr, "%v", err)
	}
	sel := difftest.Selection{Seed: *seed, Repeat: 1}
	if *runRe != "" {
		if sel.Run, err = regexp.Compile(*runRe); err != nil {
			return usageErr(stderr, "--run: %v", err)
		}
	}
	suite, err := loadBenchSuite(*suiteName)
	if err != nil {
		return fail(stderr, err, difftest.Summary{})
	}
	items := suite.Items(sel)
	if len(items) == 0 {
		return usageErr(stderr, "no case of suite %s matches --run %q (difftest list cases --suite %s)", suite.Name, *runRe, *suiteName)
	}

	fileBaseline := *baseline != "" && !implBaseline(*baseline)
	if fileBaseline && !deviceImpl(*impl) {
		return usageErr(stderr, "--baseline %s: a fatbin baseline needs --impl cuda or emu; for %s give an implementation (serve:CMD, exec:CMD)", *baseline, *impl)
	}
	opts := difftest.ImplOptions{Fatbin: *fatbin, Device: *device, Timeout: *timeout, Context: ctx}
	if fileBaseline {
		opts.Baseline = *baseline
	}
	main, code := openNamedImpl(*impl, opts, stderr)
	if main == nil {
		return code
	}
	defer main.Close()
	var base difftest.Impl
	if fileBaseline {
		if bp, ok := main.(bench.BaselineProvider); ok {
			base = bp.Baseline()
		}
		if base == nil {
			return usageErr(stderr, "--impl %s does not take a fatbin --baseline", *impl)
		}
	} else if *baseline != "" {
		b, code := openNamedImpl(*baseline, difftest.ImplOptions{Fatbin: *fatbin, Device: *device, Timeout: *timeout, Context: ctx}, stderr)
		if b == nil {
			return code
		}
		defer b.Close()
		base = b
	}

	prog := newProgress(stderr)
	rep, benchErr := bench.Bench(ctx, bench.BenchConfig{
		Suite: *suiteName, Items: items, Impl: main, ImplName: *impl, Baseline: base, BaselineName: *baseline,
		Warmup: *warmup, Runs: *runs, Cold: coldMode, Timeout: *timeout,
		Progress: func(done, total int, _ time.Duration) { prog.update(done, total, 0, 0) },
	})
	prog.finish()
	if rep != nil && *jsonOut != "" {
		werr := writeFileAtomic(*jsonOut, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", " ")
			return enc.Encode(rep)
		})
		if werr != nil && benchErr == nil {
			benchErr = fmt.Errorf("--json %s: %w", *jsonOut, werr)
		}
	}
	if rep != nil && (len(rep.Results) > 0 || benchErr == nil) {
		if err := render.WriteBenchTable(stdout, rep); err != nil && benchErr == nil {
			benchErr = err
		}
	}
	if benchErr != nil {
		var in *difftest.Interrupted
		if errors.As(benchErr, &in) {
			return in.ExitCode()
		}
		var re *difftest.RunError
		if errors.As(benchErr, &re) && re.Class == difftest.Unavailable {
			fmt.Fprintf(stderr, "difftest: bench: %s\n", difftest.SafeLine(re.Msg))
			return difftest.ExitUntestable
		}
		return fail(stderr, benchErr, difftest.Summary{})
	}
	code = difftest.ExitPass
	if n := rep.Failed(); n > 0 {
		fmt.Fprintf(stderr, "difftest: bench: %d case(s) failed their checks: their times are not results\n", n)
		code = difftest.ExitFail
	}
	if slowLimit > 0 {
		if slow := rep.Slowdowns(slowLimit); len(slow) > 0 {
			var ids []string
			for _, r := range slow {
				ids = append(ids, fmt.Sprintf("%s (%.3f×)", r.Case, r.Comparison.Ratio))
			}
			fmt.Fprintf(stderr, "difftest: bench: %d case(s) slower than the baseline by more than --max-slowdown %s: %s\n", len(slow), *maxSlow, strings.Join(ids, ", "))
			code = difftest.ExitFail
		}
	}
	return code
}

// parseSlowdown reads --max-slowdown: a ratio above 1 ("1.10") or a
// percentage ("10%", meaning 1.10).
func parseSlowdown(s string) (float64, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v <= 0 {
			return 0, fmt.Errorf("--max-slowdown %q: want a ratio above 1 (1.10) or a positive percentage (10%%)", s)
		}
		return 1 + v/100, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 1 {
		return 0, fmt.Errorf("--max-slowdown %q: want a ratio above 1 (1.10) or a positive percentage (10%%)", s)
	}
	return v, nil
}

// implBaseline tells an implementation name given to --baseline from a
// fatbin path: reference, mutant:NAME, exec:CMD, serve:CMD, cudasrc:PATH,
// cudasrc-emu:PATH, or a registered implementation other than cuda and
// emu (which take a fatbin).
func implBaseline(s string) bool {
	if _, ok := difftest.LookupImpl(s); ok && !deviceImpl(s) {
		return true
	}
	for _, p := range []string{"serve:", "exec:", "mutant:", "cudasrc:", "cudasrc-emu:"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return s == "reference"
}

// deviceImpl tells the implementations that load a fatbin.
func deviceImpl(name string) bool { return name == "cuda" || name == "emu" }

// openNamedImpl resolves an implementation name as --impl does (usage
// errors exit 2, an implementation that cannot run here 125).
func openNamedImpl(name string, opts difftest.ImplOptions, stderr io.Writer) (difftest.Impl, int) {
	f := implFlags{impl: name, fatbin: opts.Fatbin, device: opts.Device, timeout: opts.Timeout, buildTimeout: bridgeBuildTimeout}
	if opts.Baseline == "" {
		return f.openImpl(opts.Context, stderr)
	}
	impl, err := difftest.NewImpl(name, opts)
	if err != nil {
		var re *difftest.RunError
		if errors.As(err, &re) && re.Class == difftest.Unavailable {
			fmt.Fprintf(stderr, "difftest: %s unavailable: %s\n", name, difftest.SafeLine(re.Msg))
			return nil, difftest.ExitUntestable
		}
		return nil, fail(stderr, err, difftest.Summary{})
	}
	return impl, 0
}

// loadBenchSuite resolves bench's --suite: an embedded bench suite
// (fixtures.BenchSuites), else what run's --suite takes.
func loadBenchSuite(name string) (*difftest.Suite, error) {
	if !strings.ContainsRune(name, os.PathSeparator) && !strings.HasSuffix(name, ".toml") {
		if m, _ := fs.Glob(fixtures.BenchSuites(), name+"/*.toml"); len(m) > 0 {
			return suite.LoadSuiteFS(fixtures.BenchSuites(), name)
		}
	}
	return loadSuite(name)
}
