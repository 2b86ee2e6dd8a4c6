package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

const shrinkUsage = "shrink (FILE.safetensors | --suite S --run ID [--seed N]) --impl IMPL [-o DIR] [--budget D] [--timeout D] [-v]"

// shrinkCmd reduces one failing case (a capture file, or a suite case and
// seed) to a small one that still fails the same way, and writes it as a
// capture file and a suite entry, with its replay line. Exit codes: 0 a
// reproducer was written; 2 usage, a bad suite or capture, a selection
// that is not exactly one case, or a case the implementation passes
// (nothing to shrink); 125 nothing could be tested (the implementation is
// unavailable, an internal error); 128 + N stopped by signal N (the
// smallest case found so far is written first).
func shrinkCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("shrink", stderr)
	f := implFlags{buildTimeout: bridgeBuildTimeout} // shrink has no --build-timeout
	fs.StringVar(&f.impl, "impl", difftest.DefaultImpl(), "implementation that fails the case: cuda, emu, cudasrc:PATH, cudasrc-emu:PATH, reference, mutant:NAME, exec:CMD or serve:CMD")
	fs.StringVar(&f.fatbin, "fatbin", "", "compiled kernels, a fatbin `FILE` (cuda)")
	fs.IntVar(&f.device, "device", 0, "CUDA device ordinal (cuda)")
	fs.DurationVar(&f.timeout, "timeout", difftest.DefaultTimeout, "time-out per run of the implementation (each attempt runs it twice); 0 = none")
	suiteName := fs.String("suite", "default", "suite `NAME|FILE` of --run")
	runRe := fs.String("run", "", "the case: a `REGEXP` matching exactly one case id of --suite")
	seed := fs.Uint64("seed", 1, "suite seed of --run")
	outDir := fs.String("o", "build/shrunk", "write the capture file and the suite entry into `DIR` (created if needed; build/ is where the build puts everything and what a .gitignore already ignores)")
	budget := fs.Duration("budget", triage.DefaultShrinkBudget, "total time for all attempts")
	verbose := fs.Bool("v", false, "print every attempt, not only the kept ones")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagErr(err)
	}
	runGiven := flagGiven(fs, "run")
	switch {
	case len(pos) > 1:
		return usageErr(stderr, "shrink takes one capture file, got %d arguments (%s)", len(pos), shrinkUsage)
	case len(pos) == 1 && runGiven:
		return usageErr(stderr, "shrink: give a capture file or --run, not both (%s)", shrinkUsage)
	case len(pos) == 0 && !runGiven:
		return usageErr(stderr, "shrink: no case: give a capture file or --suite S --run ID (%s)", shrinkUsage)
	}
	if err := checkTimeout(f.timeout); err != nil {
		return usageErr(stderr, "%v", err)
	}
	if *budget <= 0 {
		return usageErr(stderr, "--budget %v: must be > 0", *budget)
	}
	var c *difftest.Case
	var k difftest.Kernel
	if len(pos) == 1 {
		if c, _, err = difftest.ReadCapture(pos[0]); err != nil {
			return fail(stderr, err, difftest.Summary{})
		}
		if !flagGiven(fs, "impl") && c.Impl != "" {
			f.impl = c.Impl
			fmt.Fprintf(stderr, "difftest: shrinking on --impl %s, the implementation %s was saved from (--impl runs another)\n", difftest.ShellQuote(c.Impl), pos[0])
		}
		k, _ = difftest.LookupKernel(c.Kernel)
	} else {
		re, err := regexp.Compile(*runRe)
		if err != nil {
			return usageErr(stderr, "--run: %v", err)
		}
		suite, err := loadSuite(*suiteName)
		if err != nil {
			return fail(stderr, err, difftest.Summary{})
		}
		items := suite.Items(difftest.Selection{Seed: *seed, Run: re})
		if len(items) != 1 {
			var ids []string
			for _, it := range items[:min(len(items), 5)] {
				ids = append(ids, it.Spec.ID())
			}
			return usageErr(stderr, "shrink: --run %q selects %d cases of suite %s, want exactly one %v", *runRe, len(items), suite.Name, ids)
		}
		if k, c, err = difftest.GenerateCase(items[0]); err != nil {
			return fail(stderr, err, difftest.Summary{})
		}
	}
	if _, ok := k.(triage.Reducer); !ok {
		return usageErr(stderr, "shrink: kernel %s cannot shrink its cases", k.Name())
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return usageErr(stderr, "-o %s: %v", *outDir, err)
	}
	impl, code := f.openImpl(ctx, stderr)
	if impl == nil {
		return code
	}
	defer impl.Close()

	log := func(line string) {
		if *verbose || !strings.HasPrefix(line, "  no ") && !strings.HasPrefix(line, "  skip ") && !strings.HasPrefix(line, "  error ") {
			fmt.Fprintln(stderr, "shrink: "+line)
		}
	}
	res, err := triage.Shrink(ctx, k, c, triage.ShrinkConfig{Impl: impl, Timeout: f.timeout, Budget: *budget, Log: log})
	if in, stopped := difftest.InterruptedBy(ctx); stopped {
		// What was shrunk so far is still a reproducer: write it.
		if err == nil {
			writeShrunk(ctx, &f, res, *outDir, stdout, stderr)
		}
		fmt.Fprintf(stderr, "difftest: shrink %v\n", in)
		return in.ExitCode()
	}
	if err != nil {
		if errors.Is(err, triage.ErrShrinkPasses) {
			return usageErr(stderr, "shrink: %v: nothing to shrink", err)
		}
		return fail(stderr, err, difftest.Summary{})
	}
	return writeShrunk(ctx, &f, res, *outDir, stdout, stderr)
}

// writeShrunk writes the shrunk case as DIR/KERNEL__NAME-shrunk__seedN.safetensors
// (with got. and want. outputs) and, when the kernel can express it, as a
// suite entry DIR/NAME-shrunk.toml, then prints the summary, the kept
// steps, the files and the replay lines.
func writeShrunk(ctx context.Context, f *implFlags, res *triage.ShrinkResult, dir string, stdout, stderr io.Writer) int {
	c := *res.Shrunk
	name := strings.TrimPrefix(res.Original.ID, res.Original.Kernel+"/")
	name = strings.TrimSuffix(name, "-shrunk") + "-shrunk"
	c.ID = c.Kernel + "/" + name
	path, err := difftest.SaveCapture(dir, &c, res.Outcome, f.impl)
	if err != nil {
		return fail(stderr, err, difftest.Summary{})
	}
	var b strings.Builder
	removed := 0.0
	if res.OriginalBytes > 0 {
		removed = 100 * float64(res.OriginalBytes-res.ShrunkBytes) / float64(res.OriginalBytes)
	}
	fmt.Fprintf(&b, "shrunk %s (seed %d) under %s in %d attempts, %s:\n", difftest.SafeText(res.Original.ID), res.Original.Seed, difftest.SafeText(f.impl), res.Attempts, res.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(&b, "  from %s (%d input bytes)\n", res.OriginalSize, res.OriginalBytes)
	fmt.Fprintf(&b, "  to   %s (%d input bytes): %.1f%% removed\n", res.ShrunkSize, res.ShrunkBytes, removed)
	fmt.Fprintf(&b, "  still fails: %s: %s\n", difftest.SafeText(string(res.Record.Class)), difftest.SafeLine(res.Record.Message))
	if len(res.FinalDiagnosis) > 0 {
		fmt.Fprintf(&b, "  diagnosis: %s", strings.Join(res.FinalDiagnosis, ", "))
		if len(res.Diagnosis) > 0 && len(res.FinalDiagnosis) != len(res.Diagnosis) {
			fmt.Fprintf(&b, " (the original: %s)", strings.Join(res.Diagnosis, ", "))
		}
		b.WriteString("\n")
	}
	if res.Note != "" {
		fmt.Fprintf(&b, "  stopped early: %s\n", difftest.SafeLine(res.Note))
	}
	fmt.Fprintf(&b, "  %d step(s) kept:\n", len(res.Steps))
	for _, s := range res.Steps {
		fmt.Fprintf(&b, "    %s\n", difftest.SafeText(s))
	}
	opts := f.replayOptions(ctx, path)
	fmt.Fprintf(&b, "capture: %s\n", difftest.SafeText(path))
	fmt.Fprintf(&b, "replay:  %s\n", difftest.SafeText(difftest.ReplayCaptureLine(opts, path)))
	entry, err := triage.SuiteEntry(&c, name)
	switch {
	case err == nil:
		toml := filepath.Join(dir, unsafeFileChars.ReplaceAllString(name, "_")+".toml")
		if werr := writeFileAtomic(toml, func(w io.Writer) error { _, e := io.WriteString(w, entry); return e }); werr != nil {
			return fail(stderr, werr, difftest.Summary{})
		}
		opts.Suite = toml
		fmt.Fprintf(&b, "suite:   %s\n", difftest.SafeText(toml))
		fmt.Fprintf(&b, "replay:  %s\n", difftest.SafeText(difftest.ReplayCommand(opts, c.ID, c.Seed)))
	case errors.Is(err, triage.ErrNoSuiteEntry):
		fmt.Fprintf(&b, "suite:   none (%s)\n", difftest.SafeLine(err.Error()))
	default:
		return fail(stderr, err, difftest.Summary{})
	}
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return fail(stderr, err, difftest.Summary{})
	}
	return difftest.ExitPass
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)
