// Package cli is the difftest command line: flag parsing, dispatch to the
// subcommands, and the mapping of every outcome to an exit code. Only
// main calls os.Exit; Main returns the code.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// Main runs the difftest command line args (without the program name)
// as MainAs does for a program named "difftest".
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return MainAs(ctx, "difftest", args, stdout, stderr)
}

// MainAs runs the difftest command line args (without the program name)
// for the program prog, the name it was invoked by (os.Args[0] as given):
// replay lines name it (see ProgForReplay), so that they run where they
// are printed. It returns the exit code: 0, 1, 2, 3 or 125 (README, exit codes),
// never anything else, with one exception: when ctx was cancelled with a
// *difftest.Interrupted cause (a person stopped the run with SIGINT,
// SIGTERM or SIGHUP; see NotifyInterrupt), the command reports and
// flushes what finished and MainAs returns 128 + the signal number,
// whatever the command returned. A panic inside the harness is recovered
// and reported as an internal error with its own exit code,
// difftest.ExitInternal (3): the stack goes to a file, one line naming it
// to stderr (reportCrash); nothing the run would have said can be trusted. (A panicking implementation is not a panic of
// the harness: it fails its case with class crash.)
func MainAs(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			code = reportCrash(stderr, p, debug.Stack())
		}
		if in, ok := difftest.InterruptedBy(ctx); ok {
			code = in.ExitCode()
		}
	}()
	code = dispatch(context.WithValue(ctx, progKey{}, prog), args, stdout, stderr)
	if code < 0 || code > difftest.ExitUntestable {
		code = difftest.ExitUntestable
	}
	return code
}

// progKey carries MainAs's prog to the commands that print replay lines.
type progKey struct{}

// progOf is the prog MainAs was given, fit for a shell (ProgForReplay).
func progOf(ctx context.Context) string {
	prog, _ := ctx.Value(progKey{}).(string)
	wd, _ := os.Getwd()
	return ProgForReplay(prog, wd)
}

// ProgForReplay is how a replay line names the program invoked as arg0
// (os.Args[0] as given) from the working folder wd, shell-quoted:
//
//   - a bare name ("difftest") as it is: the shell found it in PATH;
//   - a relative path cleaned ("./build/difftest" → "build/difftest"),
//     keeping "./" where the path is one name ("./difftest");
//   - an absolute path inside wd as a relative one
//     ("/repo/build/difftest" from /repo → "build/difftest"), elsewhere as
//     it is;
//   - the temporary binary of `go run` (under a go-build folder) as
//     "go run ./cmd/difftest" (run from the module root);
//   - "" as "difftest".
func ProgForReplay(arg0, wd string) string {
	if arg0 == "" {
		return "difftest"
	}
	if !strings.ContainsRune(arg0, filepath.Separator) {
		return difftest.ShellQuote(arg0)
	}
	p := filepath.Clean(arg0)
	if strings.Contains(p, string(filepath.Separator)+"go-build") && filepath.Base(filepath.Dir(p)) == "exe" {
		return "go run ./cmd/difftest"
	}
	if filepath.IsAbs(p) && wd != "" {
		if rel, err := filepath.Rel(wd, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			p = rel
		}
	}
	if !filepath.IsAbs(p) && !strings.ContainsRune(p, filepath.Separator) {
		p = "." + string(filepath.Separator) + p
	}
	return difftest.ShellQuote(p)
}

// NotifyInterrupt returns a context that is cancelled with a
// *difftest.Interrupted cause when the process receives SIGINT, SIGTERM or
// SIGHUP, and a stop function that releases the signals. From the first
// such signal on, SIGPIPE is ignored (a write to a closed pipe fails
// instead of killing the process, so the reports still reach their
// files). A later SIGINT or SIGTERM is delivered on the returned channel,
// where main may act on it (a second Ctrl-C: give up on the clean-up); a
// later SIGHUP is not (a hang-up often comes twice, from the terminal and
// from the shell).
func NotifyInterrupt(parent context.Context) (ctx context.Context, again <-chan os.Signal, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 4)
	more := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		defer close(more)
		first := true
		for {
			select {
			case s := <-sigs:
				sig, _ := s.(syscall.Signal)
				if first {
					first = false
					signal.Ignore(syscall.SIGPIPE)
					cancel(&difftest.Interrupted{Signal: sig})
					continue
				}
				if sig == syscall.SIGHUP {
					continue
				}
				select {
				case more <- s:
				default:
				}
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return ctx, more, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			cancel(nil)
		})
	}
}

type command struct {
	name, usage, summary string
	run                  func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"run", "run [flags]", "run a suite against an implementation", runCmd},
		{"list", "list [suites|cases|impls|mutants|families|contracts] [--suite NAME|FILE] [--json]", "list what can be run, or the kernels' contracts", listCmd},
		{"replay", "replay [--impl IMPL] FILE.safetensors", "re-run one captured case", replayCmd},
		{"selftest", "selftest [--suite NAME|FILE] [--seed N]", "check that the suite catches every catalog mutant", selftestCmd},
		{"shrink", shrinkUsage, "reduce a failing case to a small reproducer: a capture file, a suite entry, a replay line", shrinkCmd},
		{"merge", "merge -o OUT.jsonl [--junit FILE] SHARD.jsonl...", "join the JSON Lines reports of every shard I/N of one run", mergeCmd},
		{"report", "report RUN.jsonl [BENCH.json ...] [FIGURE.svg ...] -o report.html", "one self-contained HTML page of runs, failures, histograms and bench tables", reportCmd},
		{"bench", "bench [--suite bench] [--baseline FATBIN|IMPL] [--runs N] [--json FILE] [flags]", "time kernels with a cold L2 against the copy-bandwidth floor; A/B two builds", benchCmd},
		{"gpu-check", gpuCheckUsage, "the whole GPU check of a bundle: info, suite, bench, GPU selftest, sanitizers, GPU tests; a table last", gpuCheckCmd},
	}
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return difftest.ExitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return difftest.ExitPass
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	if c, ok := LookupCommand(name); ok {
		return c.Run(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "difftest: unknown command %q (see difftest help)\n", name)
	return difftest.ExitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: difftest COMMAND [flags]")
	fmt.Fprintln(w)
	var lines [][2]string
	for _, c := range commands() {
		lines = append(lines, [2]string{c.usage, c.summary})
	}
	for _, c := range Commands() {
		if !c.Hidden {
			u := c.Usage
			if u == "" {
				u = c.Name
			}
			lines = append(lines, [2]string{u, c.Summary})
		}
	}
	width := 0
	for _, l := range lines {
		width = max(width, len(l[0]))
	}
	for _, l := range lines {
		fmt.Fprintf(w, "  %-*s  %s\n", width, l[0], l[1])
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "exit codes: 0 all passed, 1 a case failed, 2 usage or input file error, 3 internal error (a bug in difftest), 125 nothing could be tested,")
	fmt.Fprintln(w, "128+N stopped by signal N (130 SIGINT, 143 SIGTERM, 129 SIGHUP) after reporting the finished cases")
}

// parseInterspersed parses flags that may come before, between or after
// positional arguments ("replay FILE --impl cuda"), and returns the
// positional ones. A "--" ends flag parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseFlagsOnly parses args for the command name, which takes flags
// only (parseInterspersed). ok is false when the command should stop with
// code: 0 for -h, 2 for a bad flag or, reported on stderr, a positional
// argument.
func parseFlagsOnly(fs *flag.FlagSet, args []string, name string, stderr io.Writer) (code int, ok bool) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagErr(err), false
	}
	if len(pos) > 0 {
		return usageErr(stderr, "%s takes no arguments, got %q", name, pos), false
	}
	return 0, true
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("difftest "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// fail prints a one-line error and returns the exit code ExitCode gives it.
// The line is folded and escaped (difftest.SafeLine): an error may quote a
// file's contents or a program's stderr.
func fail(stderr io.Writer, err error, sum difftest.Summary) int {
	fmt.Fprintf(stderr, "difftest: %s\n", difftest.SafeLine(err.Error()))
	return difftest.ExitCode(sum, err)
}

// usageErr prints a one-line usage or input error, escaped as fail's, and
// returns ExitUsage.
func usageErr(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "difftest: %s\n", difftest.SafeText(fmt.Sprintf(format, args...)))
	return difftest.ExitUsage
}

// flagErr maps a flag parsing error: -h prints usage and exits 0.
func flagErr(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return difftest.ExitPass
	}
	return difftest.ExitUsage
}
