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
	"runtime/debug"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// Main runs the difftest command line args (without the program name)
// and returns its exit code: 0, 1, 2 or 125 (DESIGN.md §7), never
// anything else. A panic inside the harness is recovered and reported as
// an internal error with exit code 125: nothing it would have said can be
// trusted. (A panicking implementation is not a panic of the harness: it
// fails its case with class crash.)
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "difftest: internal error: panic: %v\n%s", p, debug.Stack())
			code = difftest.ExitUntestable
		}
	}()
	code = dispatch(ctx, args, stdout, stderr)
	if code < 0 || code > difftest.ExitUntestable {
		code = difftest.ExitUntestable
	}
	return code
}

type command struct {
	name, usage, summary string
	run                  func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"run", "run [flags]", "run a suite against an implementation", runCmd},
		{"list", "list [suites|cases|impls|mutants|families] [--suite NAME|FILE]", "list what can be run", listCmd},
		{"replay", "replay [--impl IMPL] FILE.safetensors", "re-run one captured case", replayCmd},
		{"selftest", "selftest [--suite NAME|FILE] [--seed N]", "check that the suite catches every catalog mutant", selftestCmd},
		{"merge", "merge -o OUT.jsonl [--junit FILE] SHARD.jsonl...", "join the JSON Lines reports of every shard I/N of one run", mergeCmd},
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
	if c, ok := difftest.LookupCommand(name); ok {
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
	for _, c := range difftest.Commands() {
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
	fmt.Fprintln(w, "exit codes: 0 all passed, 1 a case failed, 2 usage or input file error, 125 nothing could be tested")
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
