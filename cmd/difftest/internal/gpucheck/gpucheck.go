// Package gpucheck is `difftest gpu-check`: the whole GPU check in one
// command, for a machine with a driver (compute-sanitizer optional:
// without it the memcheck and racecheck steps are skipped), needing
// neither nvcc nor Go. It runs what `make gpu-bundle` put in dist/ (the
// difftest binary itself, kernels.fatbin, faults/, faults.txt, tests/):
//
//	info        difftest info: device, driver, fatbin images, build
//	hostdevice  tests/hostdevice (kernels/emu/probe/hostdevice.cu): the
//	            CPU emulator's f16, bf16 and e4m3 conversions of special
//	            values (the CUDA headers' host code) against the GPU's
//	            cvt, and rsqrtf's distance from 1/sqrt rounded once; it
//	            settles the emulator verdicts that rest on them (SGLang's
//	            top-k and -NaN, adapters/sglang/expected.txt): fails on a
//	            conversion that differs or rsqrt beyond 2 ULP
//	suite       the default suite on the GPU (--impl cuda), JSON + JUnit
//	bench       difftest bench on the bench suite (docs/nightly.md shapes):
//	            kernel times with a cold L2 (CUDA events, 5 warm-up + 30
//	            runs), the copy bandwidth, % of the floor; bench.json, and
//	            the bench table printed after the steps table
//	            (KD_BENCH_RUN=REGEXP times only the shapes it matches)
//	selftest    difftest gpu-selftest: each fault build of faults.txt must
//	            fail one of its kernel's cases of the default suite
//	memcheck    compute-sanitizer memcheck over the quick suite, and over
//	            the MEM_* fault builds (first quick case of their kernel),
//	            which it must flag
//	racecheck   compute-sanitizer racecheck over the quick suite, and over
//	            the RACE_* fault builds, which it must flag
//	gotest      the GPU-tagged Go test binaries (cuda, bridge)
//
// then prints a table, last: step, result, seconds, figures. Each step has
// its own time limit in seconds (Limits; the environment's KD_T_<STEP>,
// e.g. KD_T_SUITE=200, overrides it), so one hang cannot eat the budget:
// info 10, hostdevice 10, suite 70, bench 90, selftest 80, memcheck 35 for the real build
// and memcheck_control 15 per MEM_* build (one case), racecheck 35 per run,
// gotest 75 for both test binaries together (cuda.test first). A command
// past its limit gets SIGTERM, and SIGKILL 5 s later.
//
// A sanitizer step passes only when the tool exits 0, prints a summary for
// at least one process, and difftest's own report of the run
// (memcheck.jsonl, racecheck.jsonl) is complete with every case passed: a
// run the tool never attached to checks nothing. The sanitizer follows the
// GPU worker process (--target-processes all), does not require the parent
// to use CUDA (--require-cuda-init no, where the tool has it), pads every
// allocation under memcheck (--padding 1024, where the tool has it), and
// gives the worker KD_WORKER_EXIT_GRACE=30s to exit. A RACE_* fault build
// counts as flagged when the tool exits 86 with a hazard count above zero,
// a MEM_* build when memcheck exits 86 with an error count above zero and
// an "Invalid __global__ read" report.
//
// Reports go to Config.Reports: info.txt, default.jsonl,
// default.junit.xml, selftest.json, bench.json/.txt, memcheck*.txt/.jsonl,
// racecheck*.txt/.jsonl, gotest-*.txt, table.txt (the steps table, then
// the bench table). A step the machine cannot run (a sanitizer refused by
// the runtime) is skipped, not failed.
package gpucheck

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Steps are the steps in the order they run by default.
var Steps = []string{"info", "hostdevice", "suite", "bench", "selftest", "memcheck", "racecheck", "gotest"}

// DefaultLimits are the steps' time limits (seconds); the keys are the
// step names and memcheck_control, the limit of each MEM_* control run.
var DefaultLimits = map[string]int{
	"info": 10, "hostdevice": 10, "suite": 70, "bench": 90, "selftest": 80, "memcheck": 35,
	"memcheck_control": 15, "racecheck": 35, "gotest": 75,
}

// Config is one gpu-check.
type Config struct {
	Dist      string // the bundle: kernels.fatbin, faults.txt, faults/, tests/
	Difftest  string // the difftest binary the steps run
	Sanitizer string // compute-sanitizer; "" skips memcheck and racecheck
	Device    int
	Steps     []string       // in order; nil means Steps
	Reports   string         // folder of the reports (created)
	Limits    map[string]int // seconds per step; missing keys take DefaultLimits
	BenchRun  string         // --run of the bench step ("" = every shape)
	Log       io.Writer      // each step's output and its "== step: result" line
}

// Row is one line of the steps table.
type Row struct {
	Step, Result, Figures string // Result: ok, FAIL or skip
	Seconds               int
}

// ErrUnknownStep is wrapped by Run's error for a step name it does not know.
var ErrUnknownStep = errors.New("unknown step")

// Check runs the steps and returns their rows; failed reports whether one
// failed. It writes table.txt (the steps table, then the bench table when
// the bench step ran) to cfg.Reports and the same to cfg.Log. The error is
// for an unknown step (before any runs) or a report folder it cannot
// write.
func Check(ctx context.Context, cfg Config) (rows []Row, failed bool, err error) {
	if cfg.Steps == nil {
		cfg.Steps = Steps
	}
	for _, s := range cfg.Steps {
		if !contains(Steps, s) {
			return nil, false, fmt.Errorf("%w %s (steps: %s)", ErrUnknownStep, s, strings.Join(Steps, " "))
		}
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if err := os.MkdirAll(cfg.Reports, 0o755); err != nil {
		return nil, false, err
	}
	c := &checker{Config: cfg, fatbin: filepath.Join(cfg.Dist, "kernels.fatbin")}
	if cfg.Sanitizer != "" {
		out, _ := exec.Command(cfg.Sanitizer, "--help").Output()
		c.sanHelp = string(out)
	}
	start := time.Now()
	for _, s := range cfg.Steps {
		t0 := time.Now()
		r := c.step(ctx, s)
		r.Step = s
		if r.Seconds < 0 {
			r.Seconds = 0
		} else {
			r.Seconds = int(time.Since(t0).Seconds())
		}
		fmt.Fprintf(cfg.Log, "== %s: %s (%s) %ds\n", r.Step, r.Result, r.Figures, r.Seconds)
		rows = append(rows, r)
		failed = failed || r.Result == "FAIL"
	}
	var tb strings.Builder
	fmt.Fprintln(&tb)
	fmt.Fprintf(&tb, "%-10s %-6s %-7s %s\n", "step", "result", "seconds", "figures")
	for _, r := range rows {
		fmt.Fprintf(&tb, "%-10s %-6s %7d %s\n", r.Step, r.Result, r.Seconds, r.Figures)
	}
	total := "ok"
	if failed {
		total = "FAIL"
	}
	fmt.Fprintf(&tb, "%-10s %-6s %7d reports in %s\n", "total", total, int(time.Since(start).Seconds()), cfg.Reports)
	if contains(cfg.Steps, "bench") {
		if b, err := os.ReadFile(filepath.Join(cfg.Reports, "bench.txt")); err == nil && len(b) > 0 {
			fmt.Fprintln(&tb)
			fmt.Fprintln(&tb, "bench: kernel time (median ± its 95% interval) and % of the copy-bandwidth floor")
			tb.Write(b)
		}
	}
	io.WriteString(cfg.Log, tb.String())
	if err := os.WriteFile(filepath.Join(cfg.Reports, "table.txt"), []byte(tb.String()), 0o644); err != nil {
		return rows, failed, err
	}
	return rows, failed, nil
}

type checker struct {
	Config
	fatbin  string
	sanHelp string
}

func (c *checker) limit(step string) int {
	if v, ok := c.Limits[step]; ok {
		return v
	}
	return DefaultLimits[step]
}

func (c *checker) report(name string) string { return filepath.Join(c.Reports, name) }

func (c *checker) step(ctx context.Context, s string) Row {
	switch s {
	case "info":
		return c.info(ctx)
	case "hostdevice":
		return c.hostdevice(ctx)
	case "suite":
		return c.suite(ctx)
	case "bench":
		return c.bench(ctx)
	case "selftest":
		return c.selftest(ctx)
	case "memcheck", "racecheck":
		return c.sanitizerStep(ctx, s)
	}
	return c.gotest(ctx)
}

// run runs argv for at most secs seconds (0: no limit) in its own process
// group, with env added, stdout and stderr to out (a file path; "" keeps
// them in the returned bytes), and returns the exit status the way a shell
// gives it: 124 past the limit, 128+N for a signal, 127 when it cannot
// start.
func (c *checker) run(ctx context.Context, secs int, out string, env []string, dir string, argv ...string) (int, []byte) {
	return c.run2(ctx, secs, out, "", env, dir, argv...)
}

// run2 is run with stderr to its own file errOut (when not "").
func (c *checker) run2(ctx context.Context, secs int, out, errOut string, env []string, dir string, argv ...string) (int, []byte) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var buf strings.Builder
	var f *os.File
	if out != "" {
		var err error
		if f, err = os.Create(out); err != nil {
			return 127, []byte(err.Error())
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
		if errOut != "" {
			ef, err := os.Create(errOut)
			if err != nil {
				return 127, []byte(err.Error())
			}
			defer ef.Close()
			cmd.Stderr = ef
		}
	} else {
		cmd.Stdout, cmd.Stderr = &buf, &buf
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(cmd.Stderr, err)
		return 127, []byte(buf.String())
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var limit <-chan time.Time
	if secs > 0 {
		t := time.NewTimer(time.Duration(secs) * time.Second)
		defer t.Stop()
		limit = t.C
	}
	var err error
	timedOut := false
	select {
	case err = <-done:
	case <-limit:
		timedOut = true
	case <-ctx.Done():
		timedOut = true
	}
	if timedOut {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = <-done
		}
		return 124, []byte(buf.String())
	}
	return exitStatus(err), []byte(buf.String())
}

// exitStatus is the shell's $? for a finished command.
func exitStatus(err error) int {
	var ee *exec.ExitError
	if err == nil {
		return 0
	}
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 127
}

func (c *checker) dt(args ...string) []string { return append([]string{c.Difftest}, args...) }

func (c *checker) info(ctx context.Context) Row {
	out := c.report("info.txt")
	rc, _ := c.run(ctx, c.limit("info"), out, nil, "", c.dt("info", "--fatbin", c.fatbin, "--device", strconv.Itoa(c.Device))...)
	b, _ := os.ReadFile(out)
	c.Log.Write(b)
	text := string(b)
	switch {
	case rc != 0:
		return Row{Result: "FAIL", Figures: fmt.Sprintf("exit %d", rc)}
	case firstLine(text, `(?m)^  unavailable.*$`) != "":
		return Row{Result: "FAIL", Figures: strings.TrimLeft(firstLine(text, `(?m)^  unavailable.*$`), " ")}
	}
	name := field(text, "name")
	if name == "" {
		name = "?"
	}
	return Row{Result: "ok", Figures: name + ", loads " + field(text, "loads")}
}

// field is the value of the first "  KEY: value" line of text.
func field(text, key string) string {
	m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(key) + `: *(.*)$`).FindStringSubmatch(text)
	if m == nil {
		return ""
	}
	return m[1]
}

func firstLine(text, re string) string { return regexp.MustCompile(re).FindString(text) }

func (c *checker) suite(ctx context.Context) Row {
	txt := c.report("default.txt")
	jl := c.report("default.jsonl")
	rc, _ := c.run(ctx, c.limit("suite"), txt, nil, "", c.dt("run", "--suite", "default", "--impl", "cuda", "--fatbin", c.fatbin,
		"--device", strconv.Itoa(c.Device), "--timeout", "20s", "--json", jl, "--junit", c.report("default.junit.xml"))...)
	b, _ := os.ReadFile(txt)
	c.Log.Write(lastLines(b, 5))
	fig, _ := Summary(jl)
	switch rc {
	case 0:
		return Row{Result: "ok", Figures: fig}
	case 124:
		return Row{Result: "FAIL", Figures: "time-out; " + fig}
	}
	return Row{Result: "FAIL", Figures: fmt.Sprintf("exit %d; %s; first: %s", rc, fig, FirstFailure(jl))}
}

func lastLines(b []byte, n int) []byte {
	lines := strings.SplitAfter(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s := strings.Join(lines, "")
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return []byte(s)
}

var caughtRe = regexp.MustCompile(`[0-9]+ of [0-9]+ mutants caught`)

func (c *checker) selftest(ctx context.Context) Row {
	log := c.report("selftest.txt")
	rc, _ := c.run(ctx, c.limit("selftest"), log, nil, "", c.dt("gpu-selftest", "--suite", "default", "--fatbin", c.fatbin,
		"--faults", filepath.Join(c.Dist, "faults"), "--list", filepath.Join(c.Dist, "faults.txt"), "--device", strconv.Itoa(c.Device),
		"--parallel", "4", "--timeout", "20s", "--json", c.report("selftest.json"))...)
	b, _ := os.ReadFile(log)
	c.Log.Write(b)
	verdict := caughtRe.FindString(string(b))
	switch rc {
	case 0:
		return Row{Result: "ok", Figures: verdict + " (fault builds)"}
	case 1:
		var missed strings.Builder
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 3 && f[2] == "NO" {
				missed.WriteString(f[1] + " ")
			}
		}
		return Row{Result: "FAIL", Figures: verdict + "; not caught: " + missed.String()}
	case 124:
		return Row{Result: "FAIL", Figures: "time-out"}
	}
	return Row{Result: "FAIL", Figures: fmt.Sprintf("exit %d: %s", rc, strings.TrimRight(string(lastLines(b, 1)), "\n"))}
}

func (c *checker) bench(ctx context.Context) Row {
	args := c.dt("bench", "--suite", "bench", "--impl", "cuda", "--fatbin", c.fatbin, "--device", strconv.Itoa(c.Device),
		"--runs", "30", "--warmup", "5", "--timeout", "20s", "--json", c.report("bench.json"))
	if c.BenchRun != "" {
		args = append(args, "--run", c.BenchRun)
	}
	// stdout (the table) and stderr apart: the table is printed after the
	// steps table.
	cmdOut := c.report("bench.txt")
	errOut := c.report("bench.err")
	rc, _ := c.run2(ctx, c.limit("bench"), cmdOut, errOut, nil, "", args...)
	fig := BenchFigures(c.report("bench.json"))
	switch rc {
	case 0:
		return Row{Result: "ok", Figures: fig}
	case 124:
		return Row{Result: "FAIL", Figures: "time-out; " + fig}
	}
	b, _ := os.ReadFile(errOut)
	return Row{Result: "FAIL", Figures: fmt.Sprintf("exit %d; %s; %s", rc, fig, strings.TrimRight(string(lastLines(b, 1)), "\n"))}
}

// sanitize runs the tool over a difftest run of the quick suite of fatbin
// for at most secs, the tool's output and difftest's to log, difftest's
// JSON Lines report beside it (.jsonl for .txt). It returns the exit
// status (86: the tool reported errors).
func (c *checker) sanitize(ctx context.Context, tool, fatbin, log string, secs int, extra ...string) int {
	opts := []string{"--tool", tool, "--target-processes", "all", "--error-exitcode", "86", "--print-limit", "20"}
	if strings.Contains(c.sanHelp, "--require-cuda-init") {
		opts = append(opts, "--require-cuda-init", "no")
	}
	// memcheck reports an access outside every allocation; with padding
	// after each one, an overrun into a neighbouring buffer is outside too.
	if tool == "memcheck" && strings.Contains(c.sanHelp, "--padding") {
		opts = append(opts, "--padding", "1024")
	}
	argv := append(append([]string{c.Sanitizer}, opts...), c.dt("run", "--suite", "quick", "--impl", "cuda", "--fatbin", fatbin,
		"--device", strconv.Itoa(c.Device), "--timeout", "30s", "--json", strings.TrimSuffix(log, ".txt")+".jsonl")...)
	rc, _ := c.run(ctx, secs, log, []string{"KD_WORKER_EXIT_GRACE=30s"}, "", append(argv, extra...)...)
	return rc
}

var refusedRe = regexp.MustCompile(`(?i)Device not supported|not supported on this|Unable to find injection library`)

func (c *checker) sanitizerStep(ctx context.Context, tool string) Row {
	if c.Sanitizer == "" {
		return Row{Result: "skip", Figures: "compute-sanitizer not found", Seconds: -1}
	}
	log := c.report(tool + ".txt")
	rc := c.sanitize(ctx, tool, c.fatbin, log, c.limit(tool))
	b, _ := os.ReadFile(log)
	if refusedRe.Match(b) {
		l := regexp.MustCompile(`(?i).*(not supported|injection).*`).FindString(string(b))
		return Row{Result: "skip", Figures: strings.TrimLeft(l, "= ")}
	}
	verdict, fig := c.sanitizedVerdict(rc, log)
	prefix := "MEM_"
	if tool == "racecheck" {
		prefix = "RACE_"
	}
	if !c.controls(ctx, tool, prefix, &fig) {
		verdict = "FAIL"
	}
	return Row{Result: verdict, Figures: fig}
}

// sanitizedVerdict: ok needs the tool's exit status 0, at least one
// process summary from the tool, and difftest's own report of the run
// complete with every case passed.
func (c *checker) sanitizedVerdict(rc int, log string) (string, string) {
	b, _ := os.ReadFile(log)
	san := SanitizerSum(string(b))
	dt, ok := Summary(strings.TrimSuffix(log, ".txt") + ".jsonl")
	if ok && rc == 0 && san != "no summary" {
		return "ok", san + "; difftest " + dt
	}
	cut := ""
	if rc == 124 {
		cut = " (time-out)"
	}
	return "FAIL", fmt.Sprintf("exit %d%s; %s; difftest %s", rc, cut, san, dt)
}

// controls runs the tool over every fault build of faults.txt named
// prefix* and appends "; NAME flagged (N hazards|errors)" or "; NAME NOT
// flagged (...)" to fig; false when one was not flagged. A memcheck
// control runs on the first quick case of its kernel (its stray access
// shows on every launch); a racecheck control on its kernel's quick cases
// with --failfast (a race may show only in some).
func (c *checker) controls(ctx context.Context, tool, prefix string, fig *string) bool {
	builds, _ := readFaults(filepath.Join(c.Dist, "faults.txt"))
	ok := true
	for _, fb := range builds {
		if !strings.HasPrefix(fb.name, prefix) {
			continue
		}
		flog := c.report(tool + "-" + fb.name + ".txt")
		fatbin := filepath.Join(c.Dist, "faults", fb.name+".fatbin")
		var rc, n int
		var what, note string
		if tool == "memcheck" {
			sel := "^" + regexp.QuoteMeta(fb.kernel+"/")
			if first := c.firstQuickCase(ctx, fb.kernel); first != "" {
				sel = "^" + regexp.QuoteMeta(first) + "$"
			}
			rc = c.sanitize(ctx, "memcheck", fatbin, flog, c.limit("memcheck_control"), "--run", sel)
			b, _ := os.ReadFile(flog)
			n, what = SanitizerCount("ERROR", string(b)), "errors"
			if !strings.Contains(string(b), "Invalid __global__ read") {
				note = ", no invalid read reported"
			}
		} else {
			rc = c.sanitize(ctx, "racecheck", fatbin, flog, c.limit("racecheck"), "--run", "^"+fb.kernel+"/", "--failfast")
			b, _ := os.ReadFile(flog)
			n, what = SanitizerCount("RACECHECK", string(b)), "hazards"
		}
		if n == 1 {
			what = strings.TrimSuffix(what, "s")
		}
		if rc == 86 && n > 0 && note == "" {
			*fig += fmt.Sprintf("; %s flagged (%d %s)", fb.name, n, what)
		} else {
			ok = false
			*fig += fmt.Sprintf("; %s NOT flagged (exit %d%s, %d %s)", fb.name, rc, note, n, what)
		}
	}
	return ok
}

// firstQuickCase is the first case of the quick suite of the kernel, from
// `difftest list cases --suite quick`; "" when there is none.
func (c *checker) firstQuickCase(ctx context.Context, kernel string) string {
	rc, out := c.run(ctx, 0, "", nil, "", c.dt("list", "cases", "--suite", "quick")...)
	if rc != 0 {
		return ""
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], kernel+"/") {
			return f[0]
		}
	}
	return ""
}

type faultBuild struct{ name, kernel string }

// readFaults reads NAME<TAB>mutant<TAB>kernel<TAB>what lines ('#'
// comments skipped).
func readFaults(path string) ([]faultBuild, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []faultBuild
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		if f := strings.Split(l, "\t"); len(f) >= 3 && f[0] != "" {
			out = append(out, faultBuild{f[0], f[2]})
		}
	}
	return out, nil
}

// hostdevice runs the bundle's tests/hostdevice, its output to
// hostdevice.txt: ok when it exits 0 (every conversion agrees, rsqrt
// within 2 ULP), FAIL with the first differing value otherwise, skip
// without the binary or without a GPU (exit 125). The figures are its
// summary line and the f16 of -NaN on both sides.
func (c *checker) hostdevice(ctx context.Context) Row {
	bin := filepath.Join(c.Dist, "tests", "hostdevice")
	if !isExec(bin) {
		return Row{Result: "skip", Figures: "no tests/hostdevice in the bundle"}
	}
	log := c.report("hostdevice.txt")
	rc, _ := c.run(ctx, c.limit("hostdevice"), log, nil, c.Dist, bin)
	b, _ := os.ReadFile(log)
	var summary, negNaN, first string
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "hostdevice: "):
			summary = strings.TrimPrefix(line, "hostdevice: ")
		case strings.HasPrefix(line, "f16 of -NaN"):
			negNaN = line
		case first == "" && strings.Contains(line, ": host 0x"):
			first = line
		}
	}
	fig := strings.Join(nonEmpty(summary, negNaN), "; ")
	switch {
	case rc == 0:
		return Row{Result: "ok", Figures: fig}
	case rc == 125:
		return Row{Result: "skip", Figures: "no GPU: " + summary}
	case rc == 124:
		return Row{Result: "FAIL", Figures: fmt.Sprintf("timed out after %ds", c.limit("hostdevice"))}
	}
	return Row{Result: "FAIL", Figures: strings.Join(nonEmpty(fmt.Sprintf("exit %d", rc), fig, first), "; ")}
}

// nonEmpty returns the non-empty strings of ss, in order.
func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (c *checker) gotest(ctx context.Context) Row {
	budget := c.limit("gotest")
	t0 := time.Now()
	var bins []string
	cudaTest := filepath.Join(c.Dist, "tests", "cuda.test")
	if isExec(cudaTest) {
		bins = append(bins, cudaTest)
	}
	others, _ := filepath.Glob(filepath.Join(c.Dist, "tests", "*.test"))
	sort.Strings(others)
	for _, b := range others {
		if b != cudaTest && isExec(b) {
			bins = append(bins, b)
		}
	}
	verdict, fig := "ok", ""
	add := func(s string) {
		if fig != "" {
			fig += "; "
		}
		fig += s
	}
	for _, bin := range bins {
		base := strings.TrimSuffix(filepath.Base(bin), ".test")
		log := c.report("gotest-" + base + ".txt")
		left := budget - int(time.Since(t0).Seconds())
		if left < 10 {
			verdict = "FAIL"
			add(fmt.Sprintf("%s not run (%ds left of %ds)", base, left, budget))
			continue
		}
		// -test.timeout ends the binary 5 s before the kill, so Go prints
		// which test hung.
		rc, _ := c.run(ctx, left, log, []string{"KD_FATBIN=" + c.fatbin}, c.Dist, bin, "-test.v", "-test.timeout", fmt.Sprintf("%ds", left-5))
		b, _ := os.ReadFile(log)
		text := string(b)
		count := func(p string) int { return len(regexp.MustCompile(`(?m)^--- `+p).FindAllString(text, -1)) }
		add(fmt.Sprintf("%s %d pass/%d fail/%d skip", base, count("PASS"), count("FAIL"), count("SKIP")))
		if rc != 0 {
			verdict = "FAIL"
			if rc == 124 {
				fig += " (time-out)"
			}
			n := 0
			for _, l := range strings.Split(text, "\n") {
				if n < 10 && regexp.MustCompile(`^(--- FAIL|panic: test timed out|\s+\S+_test.go:)`).MatchString(l) {
					fmt.Fprintln(c.Log, l)
					n++
				}
			}
		}
	}
	if fig == "" {
		return Row{Result: "FAIL", Figures: "no test binaries in " + filepath.Join(c.Dist, "tests")}
	}
	return Row{Result: verdict, Figures: fig}
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Summary reads a difftest JSON Lines report and returns "P passed, F
// failed (CLASS=N ...), kernel time T ms" ("(no summary line)" added
// when the run was cut short; "no report" for a missing or empty file),
// and whether the run is a pass: it ends with its summary line, at least
// one case passed, none failed, and the summary agrees.
func Summary(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "no report", false
	}
	defer f.Close()
	var p, nf int
	var kt int64
	classes := map[string]int{}
	var sum map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	lines := 0
	for sc.Scan() {
		lines++
		var r map[string]any
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		switch r["type"] {
		case "case":
			if v, ok := r["kernel_time_ns"].(float64); ok {
				kt += int64(v)
			}
			if r["verdict"] == "pass" {
				p++
			} else {
				nf++
				cl, _ := r["class"].(string)
				if cl == "" {
					cl = "?"
				}
				classes[cl]++
			}
		case "summary":
			sum = r
		}
	}
	if lines == 0 {
		return "no report", false
	}
	var cls []string
	for k, v := range classes {
		cls = append(cls, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(cls)
	s := fmt.Sprintf("%d passed, %d failed", p, nf)
	if len(cls) > 0 {
		s += " (" + strings.Join(cls, " ") + ")"
	}
	s += fmt.Sprintf(", kernel time %.1f ms", float64(kt)/1e6)
	if sum == nil {
		s += " (no summary line)"
	}
	ok := sum != nil && p > 0 && nf == 0 && sum["passed"] == float64(p) && sum["failed"] == float64(0)
	return s, ok
}

// FirstFailure returns "case (class)" of the first failing case of a JSON
// Lines report, "-" when there is none.
func FirstFailure(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "-"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var r struct{ Type, Case, Class, Verdict string }
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Type == "case" && r.Verdict == "fail" {
			return fmt.Sprintf("%s (%s)", r.Case, r.Class)
		}
	}
	return "-"
}

// BenchFigures reads a bench report and returns "N cases timed, copy
// bandwidth B GB/s, % of floor LO … HI (median M)", the cases that failed
// their checks, and "(emulated: meaningless)" for emulated times; or what
// is missing.
func BenchFigures(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return "no report"
	}
	var r struct {
		Emulated  bool `json:"emulated"`
		Bandwidth *struct {
			GBps float64 `json:"gbps"`
		} `json:"bandwidth"`
		Results []struct {
			Case   string `json:"case"`
			Builds []struct {
				Verdict    string          `json:"verdict"`
				Stats      json.RawMessage `json:"stats"`
				PctOfFloor float64         `json:"pct_of_floor"`
			} `json:"builds"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return "unreadable report: " + err.Error()
	}
	var pct []float64
	var failed []string
	for _, x := range r.Results {
		if len(x.Builds) > 0 && len(x.Builds[0].Stats) > 0 && string(x.Builds[0].Stats) != "null" {
			pct = append(pct, x.Builds[0].PctOfFloor)
		}
		for _, bd := range x.Builds {
			if bd.Verdict == "fail" {
				failed = append(failed, x.Case)
				break
			}
		}
	}
	sort.Float64s(pct)
	bw := 0.0
	if r.Bandwidth != nil {
		bw = r.Bandwidth.GBps
	}
	s := fmt.Sprintf("%d cases timed, copy bandwidth %.1f GB/s", len(pct), bw)
	if len(pct) > 0 {
		s += fmt.Sprintf(", %% of floor %s … %s (median %s)", g3(pct[0]), g3(pct[len(pct)-1]), g3(pct[len(pct)/2]))
	}
	if len(failed) > 0 {
		s += fmt.Sprintf(", %d failed their checks: %s", len(failed), strings.Join(failed[:min(3, len(failed))], " "))
	}
	if r.Emulated {
		s += " (emulated: meaningless)"
	}
	return s
}

// g3 formats as C's %.3g (3 significant digits, no trailing zeros).
func g3(x float64) string { return strconv.FormatFloat(x, 'g', 3, 64) }

var (
	errSumRe  = regexp.MustCompile(`ERROR SUMMARY: ([0-9]+) error`)
	raceSumRe = regexp.MustCompile(`RACECHECK SUMMARY: ([0-9]+) hazard`)
)

// SanitizerSum sums the tool's summaries in its output: "E errors (P
// processes)", preceded by "H hazards, " when racecheck printed its own;
// "no summary" when the tool printed none (it followed no process that
// used CUDA).
func SanitizerSum(out string) string {
	var errs, procs, haz, rprocs int
	for _, m := range errSumRe.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		errs += n
		procs++
	}
	for _, m := range raceSumRe.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		haz += n
		rprocs++
	}
	if procs == 0 && rprocs == 0 {
		return "no summary"
	}
	s := ""
	if rprocs > 0 {
		s = fmt.Sprintf("%d hazards, ", haz)
	}
	es := "es"
	if procs == 1 {
		es = ""
	}
	return fmt.Sprintf("%s%d errors (%d process%s)", s, errs, procs, es)
}

// SanitizerCount sums the counts of every "WHAT SUMMARY: N" line (WHAT:
// ERROR or RACECHECK).
func SanitizerCount(what, out string) int {
	n := 0
	for _, m := range regexp.MustCompile(what+` SUMMARY: ([0-9]+)`).FindAllStringSubmatch(out, -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}
