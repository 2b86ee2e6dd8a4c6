// `difftest gpu-selftest`: the selftest of docs/mutants.md on the device.
// Each fault build of kernels/faults.txt (the kernels compiled with
// -DKD_FAULT_<NAME>, by scripts/build-kernels --faults) runs through the
// cuda implementation on its kernel's cases of the suite, and must fail
// one; the table is the harness's selftest table, with the fault builds in
// the mutant column and, with --reference, the real build as a row that
// must pass.
//
// Sanitizer controls (catalog mutant "-": RACE_*, MEM_*) are not run
// here: a missing barrier or a stray read need not change any output, so
// their check is compute-sanitizer's racecheck or memcheck
// (scripts/gpu-check).

package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
	"github.com/kerneldiff/kerneldiff/fixtures"
)

// faultBuild is one line of kernels/faults.txt. Suite, from the optional
// fifth column, names the suite whose cases can catch the build when the
// default suite cannot ("large": a cache beyond 2 GiB); empty for the rest.
type faultBuild struct {
	Name, Mutant, Kernel, Fault, Suite string
}

// LargeSuite is the name of the opt-in suite of the heavy shapes (a cache
// beyond 2 GiB), and the fault list's fifth column for the builds only it
// can catch.
const LargeSuite = "large"

// readFaultList parses the fault list: NAME<TAB>mutant<TAB>kernel<TAB>what
// with an optional fifth column <TAB>suite, '#' comments and blank lines
// skipped. Errors name the line.
func readFaultList(path string) ([]faultBuild, error) {
	f, _, err := difftest.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []faultBuild
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) < 4 || cols[0] == "" || cols[2] == "" {
			return nil, fmt.Errorf("%s:%d: want NAME<TAB>mutant<TAB>kernel<TAB>description, got %q", path, n, line)
		}
		b := faultBuild{Name: cols[0], Mutant: cols[1], Kernel: cols[2], Fault: cols[3]}
		if len(cols) > 4 {
			b.Suite = cols[4]
		}
		out = append(out, b)
	}
	return out, sc.Err()
}

// lazyImpl starts its cuda implementation at the first case, so that a
// selftest over twenty builds keeps only --parallel workers alive.
type lazyImpl struct {
	opts difftest.ImplOptions
	mu   sync.Mutex
	im   difftest.Impl
	err  error
}

func (l *lazyImpl) Name() string { return "cuda" }

func (l *lazyImpl) Run(ctx context.Context, k difftest.Kernel, c *difftest.Case, outs []*difftest.Buffer) (difftest.RunInfo, error) {
	l.mu.Lock()
	if l.im == nil && l.err == nil {
		l.im, l.err = NewImpl(l.opts)
	}
	im, err := l.im, l.err
	l.mu.Unlock()
	if err != nil {
		return difftest.RunInfo{}, err
	}
	return im.Run(ctx, k, c, outs)
}

// Close ends the worker once the subject's row is done.
func (l *lazyImpl) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.im == nil {
		return nil
	}
	err := l.im.Close()
	l.im = nil
	return err
}

// GPUSelftest is `difftest gpu-selftest` (cmd/difftest registers it):
// it returns the exit code, 0 when every fault build was caught (and,
// with --reference, the real build passed), 1 when one was not, 2 on a
// usage error or a malformed fault list, 125 when nothing could be tested
// (a missing fault build, no usable device).
func GPUSelftest(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("difftest gpu-selftest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	suiteName := fs.String("suite", "default", "suite `NAME|FILE|DIR`: an embedded suite (see difftest list suites), a TOML file, or a folder of capture files")
	seed := fs.Uint64("seed", 1, "suite seed")
	fatbin := fs.String("fatbin", DefaultFatbin, "the real build, relative to the working directory; its folder's faults/ holds the fault builds")
	faultsDir := fs.String("faults", "", "folder of the fault builds NAME.fatbin (default: faults/ next to --fatbin)")
	list := fs.String("list", "", "fault list (default: faults.txt next to --fatbin, else kernels/faults.txt)")
	reference := fs.Bool("reference", false, "also run the real build, which must pass every case")
	device := fs.Int("device", 0, "CUDA device ordinal")
	timeout := fs.Duration("timeout", 2*time.Minute, "time-out per run on one case")
	parallel := fs.Int("parallel", 4, "fault builds run at once (one worker process each)")
	jsonOut := fs.String("json", "", "also write the rows as JSON to `FILE`")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return difftest.ExitPass
		}
		return difftest.ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gpu-selftest: unexpected argument %q\n", fs.Arg(0))
		return difftest.ExitUsage
	}
	dir := *faultsDir
	if dir == "" {
		dir = filepath.Join(filepath.Dir(*fatbin), "faults")
	}
	lst := *list
	if lst == "" {
		lst = filepath.Join(filepath.Dir(*fatbin), "faults.txt")
		if _, err := os.Stat(lst); err != nil {
			lst = filepath.Join("kernels", "faults.txt")
		}
	}
	builds, err := readFaultList(lst)
	if err != nil {
		fmt.Fprintln(stderr, "gpu-selftest:", err)
		return difftest.ExitUsage
	}
	st, err := suite.Resolve(*suiteName, fixtures.Suites())
	if err != nil {
		fmt.Fprintln(stderr, "gpu-selftest:", err)
		return difftest.ExitUsage
	}
	var subjects []triage.SelftestSubject
	var impls []*lazyImpl
	add := func(kernel, name, fault, path string) {
		l := &lazyImpl{opts: difftest.ImplOptions{Fatbin: path, Device: *device, Timeout: *timeout}}
		impls = append(impls, l)
		subjects = append(subjects, triage.SelftestSubject{Kernel: kernel, Name: name, Fault: fault, Impl: l})
	}
	if *reference {
		for _, k := range difftest.Kernels() {
			add(k.Name(), "reference", "", *fatbin)
		}
	}
	for _, b := range builds {
		if b.Mutant == "-" { // a sanitizer control
			continue
		}
		// A build the default suite cannot catch (faults.txt's fifth
		// column: large) runs with the large suite only, and the large
		// suite runs only those.
		if (b.Suite == LargeSuite) != (*suiteName == LargeSuite) {
			continue
		}
		path := filepath.Join(dir, b.Name+".fatbin")
		if _, err := os.Stat(path); err != nil {
			fmt.Fprintf(stderr, "gpu-selftest: fault build %s missing: %v (scripts/build-kernels BUILD --faults)\n", b.Name, err)
			return difftest.ExitUntestable
		}
		add(b.Kernel, b.Name, b.Fault, path)
	}
	defer func() {
		for _, l := range impls {
			l.Close()
		}
	}()
	rows, ok, err := triage.Selftest(ctx, triage.SelftestConfig{
		Suite: st, Seed: *seed, Timeout: *timeout, Parallel: *parallel, Subjects: subjects,
	})
	if err != nil {
		var re *difftest.RunError
		if errors.As(err, &re) && re.Class == difftest.Unavailable {
			fmt.Fprintf(stderr, "gpu-selftest: cuda unavailable: %s\n", difftest.SafeLine(re.Msg))
		} else {
			fmt.Fprintln(stderr, "gpu-selftest:", err)
		}
		return difftest.ExitUntestable
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rows, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(stderr, "gpu-selftest:", err)
			return difftest.ExitUntestable
		}
	}
	if err := triage.WriteSelftestTable(stdout, rows, ok); err != nil {
		return difftest.ExitUntestable
	}
	if !ok {
		return difftest.ExitFail
	}
	return difftest.ExitPass
}
