package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/render"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/filekind"
	"github.com/kerneldiff/kerneldiff/difftest/report"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
	"github.com/kerneldiff/kerneldiff/fixtures"
)

// listCmd prints suites, cases, implementations, mutants, input families
// or contracts.
func listCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("list", stderr)
	suiteName := fs.String("suite", "default", "suite `NAME|FILE` of list cases: an embedded suite (see difftest list suites) or a TOML file")
	asJSON := fs.Bool("json", false, "list contracts: print the contracts as JSON (python/src/kerneldiff/contracts.json is this output); list cases: one JSON object per case and line (case, index, kernel, family, file)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagErr(err)
	}
	what := "suites"
	if len(pos) == 1 {
		what = pos[0]
	} else if len(pos) > 1 {
		return usageErr(stderr, "list takes one of suites, cases, impls, mutants, families, contracts")
	}
	if *asJSON && what != "contracts" && what != "cases" {
		return usageErr(stderr, "list %s: --json goes with list contracts or list cases", what)
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	defer tw.Flush()
	switch what {
	case "suites":
		fmt.Fprintln(tw, "SUITE\tCASES\tKERNELS")
		for _, name := range suite.SuiteNames(fixtures.Suites()) {
			s, err := suite.LoadSuiteFS(fixtures.Suites(), name)
			if err != nil {
				tw.Flush()
				return fail(stderr, err, difftest.Summary{})
			}
			per := map[string]int{}
			var order []string
			for _, c := range s.Cases {
				if per[c.Spec.Kernel] == 0 {
					order = append(order, c.Spec.Kernel)
				}
				per[c.Spec.Kernel]++
			}
			var parts []string
			for _, k := range order {
				parts = append(parts, fmt.Sprintf("%s %d", k, per[k]))
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\n", name, len(s.Cases), strings.Join(parts, ", "))
		}
	case "cases":
		s, err := loadSuite(*suiteName)
		if err != nil {
			tw.Flush()
			return fail(stderr, err, difftest.Summary{})
		}
		if *asJSON {
			tw.Flush()
			return writeCasesJSON(stdout, stderr, s)
		}
		fmt.Fprintln(tw, "CASE\tFAMILY\tFILE")
		for _, c := range s.Cases {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Spec.ID(), c.Spec.Family, c.File)
		}
	case "impls":
		for _, n := range difftest.ImplNames() {
			if !strings.HasPrefix(n, "mutant:") {
				fmt.Fprintln(tw, n)
			}
		}
		fmt.Fprintln(tw, "mutant:NAME (see difftest list mutants)")
	case "mutants":
		fmt.Fprintln(tw, "KERNEL\tMUTANT\tFAULT")
		for _, k := range difftest.Kernels() {
			for _, m := range k.Mutants() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", k.Name(), m.Name, m.Fault)
			}
		}
	case "families":
		if err := writeFamilies(tw); err != nil {
			return fail(stderr, err, difftest.Summary{})
		}
	case "contracts":
		if err := writeContracts(tw, stdout, *asJSON); err != nil {
			return fail(stderr, err, difftest.Summary{})
		}
	default:
		return usageErr(stderr, "list %s: want suites, cases, impls, mutants, families or contracts", what)
	}
	return difftest.ExitPass
}

// caseLine is one line of list cases --json: what a program that maps the
// cases onto its own tests (the Python package's pytest plugin) needs
// before anything runs. Index is the case's position in the expanded
// suite, as in the run's per-case record.
type caseLine struct {
	Case   string `json:"case"`
	Index  int    `json:"index"`
	Kernel string `json:"kernel"`
	Family string `json:"family"`
	File   string `json:"file"`
}

// writeCasesJSON prints the suite's cases as JSON Lines, in suite order.
func writeCasesJSON(stdout, stderr io.Writer, s *difftest.Suite) int {
	enc := json.NewEncoder(stdout)
	for i, c := range s.Cases {
		if err := enc.Encode(caseLine{Case: c.Spec.ID(), Index: i, Kernel: c.Spec.Kernel, Family: c.Spec.Family, File: c.File}); err != nil {
			return fail(stderr, err, difftest.Summary{})
		}
	}
	return difftest.ExitPass
}

// replayCmd re-runs one case saved as a capture file.
func replayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("replay", stderr)
	var f implFlags
	f.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(stderr, "replay takes one capture file, got %d arguments", len(pos))
	}
	if err := checkTimeout(f.timeout); err != nil {
		return usageErr(stderr, "%v", err)
	}
	if err := f.checkReportPaths("capture", pos[0]); err != nil {
		return usageErr(stderr, "%v", err)
	}
	file := pos[0]
	c, _, err := difftest.ReadCapture(file)
	if err != nil {
		return fail(stderr, err, difftest.Summary{})
	}
	if w := difftest.GeneratorWarning(c); w != "" {
		fmt.Fprintf(stderr, "difftest: warning: %s: %s\n", file, w)
	}
	if !flagGiven(fs, "impl") && c.Impl != "" {
		// The implementation the failure was saved from, not the build's
		// default: a capture from serve: replays there off-GPU too.
		f.impl = c.Impl
		fmt.Fprintf(stderr, "difftest: replaying on --impl %s, the implementation %s was saved from (--impl runs another)\n", difftest.ShellQuote(c.Impl), file)
	}
	start := time.Now()
	impl, code := f.openImpl(ctx, stderr)
	if impl == nil {
		return code
	}
	defer impl.Close()
	item := difftest.Item{Seed: c.Seed, Case: c, SuiteCase: difftest.SuiteCase{File: file, Spec: difftest.CaseSpec{Kernel: c.Kernel, Family: c.Family, Name: strings.TrimPrefix(c.ID, c.Kernel+"/")}}}
	opts := f.replayOptions(ctx, file)
	return execute(ctx, &f, impl, execution{
		suite: file, items: difftest.ItemList{item}, seed: c.Seed, repeat: 1, cases: 1, start: start,
		replay: func(*difftest.Record) string { return difftest.ReplayCaptureLine(opts, file) },
	}, stdout, stderr)
}

// selftestCmd runs the suite against every mutant and the reference.
func selftestCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("selftest", stderr)
	suiteName := fs.String("suite", "default", "suite `NAME|FILE`: an embedded suite (see difftest list suites) or a TOML file")
	seed := fs.Uint64("seed", 1, "suite seed")
	timeout := fs.Duration("timeout", difftest.DefaultTimeout, "time-out per run of a mutant on one case; 0 = no time-out (negative is an error)")
	parallel := fs.Int("parallel", runtime.GOMAXPROCS(0), "mutants run at once")
	if code, ok := parseFlagsOnly(fs, args, "selftest", stderr); !ok {
		return code
	}
	if err := checkTimeout(*timeout); err != nil {
		return usageErr(stderr, "%v", err)
	}
	suite, err := loadSuite(*suiteName)
	if err != nil {
		return fail(stderr, err, difftest.Summary{})
	}
	prog := newProgress(stderr)
	start := time.Now()
	rows, ok, err := triage.Selftest(ctx, triage.SelftestConfig{
		Suite: suite, Seed: *seed, Timeout: *timeout, Parallel: *parallel,
		Progress: func(done, total int) { prog.update(done, total, 0, time.Since(start)) },
	})
	prog.finish()
	if in, stopped := difftest.InterruptedBy(ctx); stopped {
		// Mutants stop at their first caught case: a partial table would
		// say nothing about the ones not run.
		fmt.Fprintf(stderr, "difftest: selftest %v before every mutant ran: no verdict\n", in)
		return in.ExitCode()
	}
	if err != nil {
		return fail(stderr, err, difftest.Summary{})
	}
	if err := triage.WriteSelftestTable(stdout, rows, ok); err != nil {
		return fail(stderr, err, difftest.Summary{})
	}
	if !ok {
		return difftest.ExitFail
	}
	return difftest.ExitPass
}

// mergeCmd joins the reports of every shard of one split into one JSON
// Lines file (and JUnit). The output is named by -o, never by position:
// `difftest merge s0.jsonl s1.jsonl s2.jsonl` must not overwrite s0.jsonl.
// Exit 2, with nothing written, for a usage error, an output that cannot
// be a file, an input that is not a regular file or not a report, and any
// disagreement report.MergeNamed finds (a missing shard, a lost or
// invented case, a summary that does not count its case lines); else the
// exit code of the merged run (0, 1, or 125 when a shard did not finish
// and nothing failed).
func mergeCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("merge", stderr)
	outPath := fs.String("o", "", "write the merged JSON Lines report to `OUT.jsonl` (required; not one of the inputs; an existing file is replaced)")
	junit := fs.String("junit", "", "also write the merged report as JUnit XML to `FILE`")
	suiteName := fs.String("suite", "", "check the case ids against suite `NAME|FILE|DIR` (default: the one each shard's header names, from the working folder)")
	ins, err := parseInterspersed(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if *outPath == "" {
		return usageErr(stderr, "merge: no output: give -o OUT.jsonl (%s)", mergeUsage)
	}
	if len(ins) == 0 {
		return usageErr(stderr, "merge: no shard reports given (%s)", mergeUsage)
	}
	for _, out := range []string{*outPath, *junit} {
		if out == "" {
			continue
		}
		for _, in := range ins {
			if difftest.SamePath(out, in) {
				return usageErr(stderr, "merge: output %s is also an input; it would overwrite that shard's report", out)
			}
		}
	}
	if *junit != "" && difftest.SamePath(*outPath, *junit) {
		return usageErr(stderr, "merge: -o and --junit name the same file %s", *junit)
	}
	if err := checkOutputFiles("-o", *outPath, "--junit", *junit); err != nil {
		return usageErr(stderr, "merge: %v", err)
	}
	var reps []*report.Report
	for _, in := range ins {
		rep, err := report.ReadJSONLFile(in)
		if err != nil {
			return usageErr(stderr, "merge: %v", err)
		}
		reps = append(reps, rep)
	}
	if err := checkShardIDs(ins, reps, *suiteName); err != nil {
		return usageErr(stderr, "%v", err)
	}
	m, err := report.MergeNamed(ins, reps)
	if err != nil {
		return usageErr(stderr, "%v", err)
	}
	werr := writeFileAtomic(*outPath, func(w io.Writer) error {
		jw := report.NewJSONLWriter(w)
		if err := jw.Header(m.Header); err != nil {
			return err
		}
		for _, r := range m.Records {
			if err := jw.Record(r); err != nil {
				return err
			}
		}
		return jw.Summary(*m.Summary)
	})
	if werr == nil && *junit != "" {
		werr = writeJUnitFile(*junit, m)
	}
	if werr != nil {
		return fail(stderr, werr, difftest.Summary{})
	}
	fmt.Fprintln(stdout, render.SummaryLine(*m.Summary))
	if m.Summary.Aborted != "" && m.Summary.Failed == 0 {
		// A shard that did not finish leaves cases untested.
		return difftest.ExitUntestable
	}
	return difftest.ExitCode(*m.Summary, nil)
}

const mergeUsage = "difftest merge -o OUT.jsonl [--junit FILE] SHARD.jsonl..."

// writeFileAtomic writes path through a temporary file in its folder,
// renamed into place only when write and close succeed: an existing file
// is either replaced whole or left as it was.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	err = write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = refuseSpecial(path)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// refuseSpecial is writeFileAtomic's last check before the rename: a FIFO,
// device node, socket or folder that appeared at path since the flags
// were checked is never replaced.
func refuseSpecial(path string) error {
	st, err := os.Lstat(path)
	if err != nil || st.Mode().IsRegular() || st.Mode()&os.ModeSymlink != 0 {
		return nil
	}
	return fmt.Errorf("%s: is %s, not a file: not replaced", path, filekind.Of(st.Mode()))
}
