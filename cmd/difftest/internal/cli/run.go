package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/render"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/proc"
	"github.com/kerneldiff/kerneldiff/difftest/report"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/fixtures"
)

// implFlags are the flags every command that runs cases shares.
type implFlags struct {
	impl    string
	fatbin  string
	device  int
	timeout time.Duration
	// maxMemory is --max-memory, the memory budget of one case in bytes
	// (0 = none).
	maxMemory memoryFlag
	// buildTimeout is --build-timeout, the limit of a cudasrc adapter
	// build.
	buildTimeout time.Duration
	json         string
	junit        string
	// diagnose is --diagnose (diagnose.go).
	diagnose diagnoseFlag

	// devices (more than one) and allDevices: --device 0,2,3 and --device
	// all, one worker per device (devices.go).
	devices    []int
	allDevices bool
}

func (f *implFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.impl, "impl", difftest.DefaultImpl(), "implementation: cuda, emu (the CUDA source on the CPU emulator), cudasrc:PATH or cudasrc-emu:PATH (your own CUDA source and its adapter, docs/byo.md), reference, mutant:NAME, exec:CMD or serve:CMD (required in a build without cuda)")
	fs.StringVar(&f.fatbin, "fatbin", "", "compiled kernels, a fatbin `FILE` (cuda); default build/kernels.fatbin, relative to the working directory")
	fs.Var(deviceFlag{f}, "device", "CUDA device `N`, a list 0,2,3, or all: one worker per device, cases spread across them (cuda, emu)")
	fs.DurationVar(&f.timeout, "timeout", difftest.DefaultTimeout, "time-out per run of the implementation on one case, e.g. 90s; 0 = no time-out (negative is an error); run --suite quick defaults to 1m")
	fs.Var(&f.maxMemory, "max-memory", "memory budget of one case, a `SIZE` such as 8G or 512M (0 = none): a case sized over it (inputs ×2, outputs ×4, the reference's scratch) is refused by name, with its sizes, before its inputs are drawn; auto = 3/4 of this machine's memory or its control group's limit")
	fs.DurationVar(&f.buildTimeout, "build-timeout", bridgeBuildTimeout, "limit of one build of a cudasrc: or cudasrc-emu: adapter (nvcc or the emulator's compiler), e.g. 30m; a build still running after a few seconds prints its progress on stderr; 0 is an error")
	fs.StringVar(&f.json, "json", "", "write a JSON Lines report to `FILE`, one line per case as it ends")
	fs.StringVar(&f.junit, "junit", "", "write a JUnit XML report to `FILE` (replaced whole when the run ends; not the --json file)")
	fs.Var(&f.diagnose, "diagnose", diagnoseUsage)
}

// bridgeBuildTimeout is --build-timeout's default, the bridge's
// CudasrcBuildTimeout (cli does not link the bridge).
const bridgeBuildTimeout = 15 * time.Minute

// memoryFlag is --max-memory: a size in bytes (difftest.ParseBytes),
// or, until it is set, "auto": difftest.DefaultMaxMemory, read from the
// machine when the run starts (so --help and docs/flags.md print the
// same on every machine).
type memoryFlag struct {
	set bool
	n   int64
}

// String returns "auto" before Set, else the budget in binary units.
func (m *memoryFlag) String() string {
	switch {
	case m == nil || !m.set:
		return "auto"
	case m.n == 0:
		return "0"
	}
	return strings.ReplaceAll(difftest.FormatBytes(m.n), " ", "")
}

// Set parses a size such as 8G (difftest.ParseBytes); "auto" is the
// default.
func (m *memoryFlag) Set(s string) error {
	if s == "auto" {
		*m = memoryFlag{}
		return nil
	}
	n, err := difftest.ParseBytes(s)
	if err != nil {
		return err
	}
	*m = memoryFlag{set: true, n: n}
	return nil
}

// bytes is the budget: the value set, or else difftest.DefaultMaxMemory.
func (m memoryFlag) bytes() int64 {
	if !m.set {
		return difftest.DefaultMaxMemory()
	}
	return m.n
}

// replayOptions are the flags every replay line of this run repeats.
func (f *implFlags) replayOptions(ctx context.Context, suite string) difftest.ReplayOptions {
	return difftest.ReplayOptions{Prog: progOf(ctx), Suite: suite, Impl: f.impl, Fatbin: f.fatbin, Device: f.device, Timeout: f.timeout}
}

// checkReportPaths rejects --json and --junit naming one file (the JUnit
// report would replace the JSON Lines one when the run ends), either
// naming one of the run's inputs (given as pairs flag, path: the suite
// file or folder, the capture, the fatbin), a --json that is neither a
// regular file nor a FIFO (a folder, a device, a socket), and a --junit
// that cannot be written: anything but a regular file (a FIFO or device
// node is never replaced), or a folder that does not exist or takes no
// new file. The JUnit file itself is not touched before the run ends, so
// a run that is killed leaves the previous one.
func (f *implFlags) checkReportPaths(inFlagsAndPaths ...string) error {
	if f.json != "" && f.junit != "" && difftest.SamePath(f.json, f.junit) {
		return fmt.Errorf("--json %s and --junit %s name the same file: give each report its own", f.json, f.junit)
	}
	if f.fatbin != "" {
		inFlagsAndPaths = append(inFlagsAndPaths, "--fatbin", f.fatbin)
	}
	for _, o := range [][2]string{{"--json", f.json}, {"--junit", f.junit}} {
		if err := difftest.CheckNotInput(o[0], o[1], inFlagsAndPaths...); err != nil {
			return err
		}
	}
	if st, err := os.Stat(f.json); f.json == "" || err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		if err := difftest.CheckOutputPath("--json", f.json); err != nil {
			return err
		}
	}
	if f.junit == "" {
		return nil
	}
	if st, err := os.Stat(f.junit); err == nil && st.IsDir() {
		return fmt.Errorf("--junit %s: is a folder, want a file", f.junit)
	}
	if err := difftest.CheckOutputPath("--junit", f.junit); err != nil {
		return err
	}
	probe, err := os.CreateTemp(filepath.Dir(f.junit), "."+filepath.Base(f.junit)+".*.tmp")
	if err != nil {
		return fmt.Errorf("--junit %s: cannot write there: %v", f.junit, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// checkTimeout rejects a negative --timeout: 0 is the one way to ask for
// no time-out, and "-1s" is more likely a typo than a request for none.
func checkTimeout(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("--timeout %v: must be ≥ 0 (0 = no time-out)", d)
	}
	return nil
}

// openImpl resolves --impl. A usage problem exits 2, an implementation
// that cannot run here exits 125, both with one line.
func (f *implFlags) openImpl(ctx context.Context, stderr io.Writer) (difftest.Impl, int) {
	if f.impl == "" {
		return nil, usageErr(stderr, "no --impl given and this build has no cuda implementation; use --impl reference, mutant:NAME or exec:CMD")
	}
	for _, prefix := range []string{"exec:", "serve:"} {
		if cmd, ok := strings.CutPrefix(f.impl, prefix); ok {
			if _, err := proc.SplitCommand(cmd); err != nil {
				return nil, usageErr(stderr, "--impl %s: %v", f.impl, err)
			}
		}
	}
	if f.buildTimeout <= 0 {
		return nil, usageErr(stderr, "--build-timeout %v: must be > 0", f.buildTimeout)
	}
	impl, err := difftest.NewImpl(f.impl, difftest.ImplOptions{Fatbin: f.fatbin, Device: f.device, Devices: f.devices, AllDevices: f.allDevices, Timeout: f.timeout, Context: ctx,
		BuildTimeout: f.buildTimeout, Log: stderr})
	if err != nil {
		var re *difftest.RunError
		if errors.As(err, &re) && re.Class == difftest.Unavailable {
			fmt.Fprintf(stderr, "difftest: %s unavailable: %s\n", f.impl, difftest.SafeLine(re.Msg))
			return nil, difftest.ExitUntestable
		}
		return nil, fail(stderr, err, difftest.Summary{})
	}
	return impl, 0
}

// header describes the run for the JSON and JUnit reports.
func (f *implFlags) header(impl difftest.Impl, suite string, seed uint64, repeat int, shard string) difftest.Header {
	h := difftest.Header{
		Type: "header", Suite: suite, Seed: seed, Repeat: repeat, Shard: shard, Impl: f.impl,
		GeneratorVersion: difftest.GeneratorVersion, GitCommit: gitCommit(), Started: time.Now().UTC(),
		Properties: map[string]string{},
	}
	if pp, ok := impl.(difftest.PropertyProvider); ok {
		for k, v := range pp.Properties() {
			h.Properties[k] = v
		}
	}
	if f.fatbin != "" && h.Properties[difftest.PropFatbin] == "" {
		// Streamed: a hash needs no bound, and a FIFO or device is refused.
		if fb, _, err := difftest.OpenRegular(f.fatbin); err == nil {
			hs := sha256.New()
			if _, err := io.Copy(hs, fb); err == nil {
				h.Properties[difftest.PropFatbin] = hex.EncodeToString(hs.Sum(nil))
			}
			fb.Close()
		}
	}
	return h
}

// gitCommit is the VCS revision the binary was built from ("" when the
// build did not record one, as under go test), with "+dirty" for a
// modified work tree.
func gitCommit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" && dirty {
		rev += "+dirty"
	}
	return rev
}

// loadSuite resolves --suite (suite.Resolve, for every subcommand): a folder of capture files (LoadCaptureDir),
// an embedded suite name, or a file on disk (anything with a path
// separator or a .toml suffix, or an existing file).
func loadSuite(name string) (*difftest.Suite, error) {
	return suite.Resolve(name, fixtures.Suites())
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", stderr)
	var f implFlags
	f.register(fs)
	suiteName := fs.String("suite", "default", "suite `NAME|FILE|DIR`: an embedded suite (see difftest list suites), a TOML file, or a folder of capture files")
	runRe := fs.String("run", "", "run only cases whose id matches `REGEXP`")
	seed := fs.Uint64("seed", 1, "suite seed: inputs are drawn from (seed, case id)")
	repeat := fs.Int("repeat", 1, "run seeds seed … seed+N−1")
	shardFlag := fs.String("shard", "", "run shard `I/N` of the cases (0 ≤ I < N, split by case index), or auto: from a Slurm array, a Kubernetes indexed Job or KD_SHARD")
	failfast := fs.Bool("failfast", false, "stop after the first failing case")
	saveDir := fs.String("save-failures", "", "save each failing case as a capture file in `DIR` (for difftest replay)")
	var params paramList
	fs.Var(&params, "param", "set suite param `NAME=VALUE` in every case --run selects that takes it, e.g. accum_bits=8 (repeatable; see difftest list families)")
	if code, ok := parseFlagsOnly(fs, args, "run", stderr); !ok {
		return code
	}
	if !flagGiven(fs, "timeout") {
		f.timeout = difftest.DefaultTimeoutFor(*suiteName)
	}
	if err := checkTimeout(f.timeout); err != nil {
		return usageErr(stderr, "%v", err)
	}
	if *repeat < 1 {
		return usageErr(stderr, "--repeat %d: must be ≥ 1", *repeat)
	}
	sel := difftest.Selection{Seed: *seed, Repeat: *repeat}
	var err error
	if *runRe != "" {
		if sel.Run, err = regexp.Compile(*runRe); err != nil {
			return usageErr(stderr, "--run: %v", err)
		}
	}
	if *shardFlag == "auto" {
		if sel.Shard, err = autoShard(stderr); err != nil {
			return usageErr(stderr, "%v", err)
		}
	} else if *shardFlag != "" {
		if sel.Shard, err = difftest.ParseShard(*shardFlag); err != nil {
			return usageErr(stderr, "%v", err)
		}
	}
	st, err := loadSuite(*suiteName)
	if err != nil {
		return fail(stderr, err, difftest.Summary{})
	}
	if err := suite.SetParams(st, params, sel.Run); err != nil {
		return usageErr(stderr, "%v", err)
	}
	items, err := st.Select(sel)
	if err != nil {
		return usageErr(stderr, "%v", err)
	}
	if items.Len() == 0 {
		return usageErr(stderr, "%s", noMatchMessage(fs, st.Name))
	}
	if err := f.checkReportPaths("--suite", *suiteName); err != nil {
		return usageErr(stderr, "%v", err)
	}
	start := time.Now() // the summary's time includes the implementation's start-up
	impl, code := f.openImpl(ctx, stderr)
	if impl == nil {
		return code
	}
	defer impl.Close()

	opts := f.replayOptions(ctx, *suiteName)
	opts.Params = params
	cases, selected := report.SelectionOf(st, sel.Run)
	return execute(ctx, &f, impl, execution{
		suite: *suiteName, items: items, seed: *seed, repeat: *repeat, shard: sel.Shard.String(), cases: cases, selected: selected,
		failfast: *failfast, saveDir: *saveDir, start: start, params: params,
		replay:        func(r *difftest.Record) string { return difftest.ReplayCommand(onDevice(opts, r), r.Case, r.Seed) },
		replayCapture: func(r *difftest.Record) string { return difftest.ReplayCaptureLine(onDevice(opts, r), r.Capture) },
	}, stdout, stderr)
}

type execution struct {
	suite    string
	items    difftest.ItemSource
	seed     uint64
	repeat   int
	shard    string
	cases    int   // suite cases per seed (Header.Cases)
	selected []int // suite positions --run kept, nil = all (Header.Selected)
	failfast bool
	saveDir  string
	// start is when the run began, before the implementation was opened:
	// a serve program's start-up until its hello counts in the summary's
	// time (difftest.Config.Start).
	start  time.Time
	params []string // --param overrides (Header.Params)
	replay func(*difftest.Record) string
	// replayCapture, when set, is the replay line of a saved capture.
	replayCapture func(*difftest.Record) string
}

// execute runs the items, streams the JSON report, then writes the JUnit
// report and prints the table. It returns the exit code. When a person
// stops the run (ctx cancelled with a *difftest.Interrupted), the cases
// that finished are reported the same way, the summary says so, and the
// code is 128 + the signal.
func execute(ctx context.Context, f *implFlags, impl difftest.Impl, e execution, stdout, stderr io.Writer) int {
	h := f.header(impl, e.suite, e.seed, e.repeat, e.shard)
	h.Cases, h.Selected, h.Params = e.cases, e.selected, e.params
	var jw *report.JSONLWriter
	if f.json != "" {
		jf, err := difftest.CreateStream("--json", f.json)
		if err != nil {
			return usageErr(stderr, "%v", err)
		}
		defer jf.Close()
		// A FIFO whose reader stopped reading cannot hold the run: once a
		// person stops it, a blocked write gives up within
		// jsonStallGrace (the summary still reaches a reader that reads).
		defer context.AfterFunc(ctx, func() { _ = jf.SetWriteDeadline(time.Now().Add(jsonStallGrace)) })()
		jw = report.NewJSONLWriter(jf)
		if err := jw.Header(h); err != nil {
			return fail(stderr, err, difftest.Summary{})
		}
	}
	rep := &report.Report{Header: h}
	prog := newProgress(stderr)
	cfg := difftest.Config{
		Suite: e.suite, Source: e.items, Impl: impl, ImplName: f.impl, Timeout: f.timeout, MaxMemory: f.maxMemory.bytes(),
		FailFast: e.failfast, SaveFailures: e.saveDir, Replay: e.replay, ReplayCapture: e.replayCapture, Start: e.start,
		OnRecord: func(r *difftest.Record) error {
			rep.Records = append(rep.Records, r)
			if jw != nil {
				return jw.Record(r)
			}
			return nil
		},
		Progress: prog.update,
		Diagnose: f.diagnose.hook(),
	}
	sum, runErr := runPooled(ctx, cfg, impl, rep, stderr)
	prog.finish()
	rep.Summary = &sum
	if pp, ok := impl.(difftest.PropertyProvider); ok {
		// A device implementation may learn more once it has run (a
		// restarted worker, a lazily opened device, an exec program's
		// version line): the JSON Lines header is written, so the summary
		// line carries what changed.
		for k, v := range pp.Properties() {
			if v != "" && rep.Header.Properties[k] != v {
				rep.Header.Properties[k] = v
				if sum.Properties == nil {
					sum.Properties = map[string]string{}
				}
				sum.Properties[k] = v
			}
		}
	}
	var in *difftest.Interrupted
	interrupted := errors.As(runErr, &in)
	// The files first: after a signal, stdout may be a closed pipe or a
	// terminal that hung up.
	if jw != nil {
		if err := jw.Summary(sum); err != nil && runErr == nil {
			runErr = err
		}
	}
	if f.junit != "" {
		if err := writeJUnitFile(f.junit, rep); err != nil {
			err = fmt.Errorf("--junit %s: %w", f.junit, err)
			if interrupted {
				fmt.Fprintf(stderr, "difftest: %v\n", err)
			} else if runErr == nil {
				runErr = err
			}
		}
	}
	if len(rep.Records) > 0 || runErr == nil || interrupted {
		if err := render.WriteTable(stdout, rep); err != nil && runErr == nil {
			runErr = err
		}
	}
	if interrupted {
		fmt.Fprintf(stderr, "difftest: %v: %d finished case(s) reported\n", in, len(rep.Records))
		return in.ExitCode()
	}
	if runErr != nil {
		var re *difftest.RunError
		if errors.As(runErr, &re) && re.Class == difftest.Unavailable {
			fmt.Fprintf(stderr, "difftest: %s unavailable: %s\n", f.impl, difftest.SafeLine(re.Msg))
			return difftest.ExitCode(sum, runErr)
		}
		return fail(stderr, runErr, sum)
	}
	return difftest.ExitCode(sum, nil)
}

// writeJUnitFile writes rep as JUnit XML to path through a temporary file
// in the same folder, renamed into place when complete: a run killed
// while writing leaves the previous file, never a partial one.
func writeJUnitFile(path string, rep *report.Report) error {
	return writeFileAtomic(path, func(w io.Writer) error { return report.WriteJUnit(w, rep) })
}

// paramList is the repeatable --param NAME=VALUE flag; each value is
// checked as it is given (suite.ParseParamAssign).
type paramList []string

func (p *paramList) String() string { return strings.Join(*p, " ") }

func (p *paramList) Set(s string) error {
	if _, _, err := suite.ParseParamAssign(s); err != nil {
		return err
	}
	*p = append(*p, s)
	return nil
}
