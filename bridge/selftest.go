// The selftest of docs/mutants.md on the device (`difftest gpu-selftest`,
// whose command line is cmd/difftest's).
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
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// FaultBuild is one line of kernels/faults.txt. Suite, from the optional
// fifth column, names the suite whose cases can catch the build when the
// default suite cannot ("large": a cache beyond 2 GiB); empty for the rest.
type FaultBuild struct {
	Name, Mutant, Kernel, Fault, Suite string
}

// LargeSuite is the name of the opt-in suite of the heavy shapes (a cache
// beyond 2 GiB), and the fault list's fifth column for the builds only it
// can catch.
const LargeSuite = "large"

// ReadFaultList parses the fault list: NAME<TAB>mutant<TAB>kernel<TAB>what
// with an optional fifth column <TAB>suite, '#' comments and blank lines
// skipped. Errors name the line.
func ReadFaultList(path string) ([]FaultBuild, error) {
	f, _, err := difftest.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []FaultBuild
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
		b := FaultBuild{Name: cols[0], Mutant: cols[1], Kernel: cols[2], Fault: cols[3]}
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

// GPUSelftestConfig is a selftest of fault builds on the device
// (`difftest gpu-selftest`).
type GPUSelftestConfig struct {
	Suite *difftest.Suite // the cases (suite.Resolve)
	// Large says Suite is the large suite (LargeSuite): then only the
	// builds whose fault list line names it run, else only the others.
	Large     bool
	Seed      uint64
	Fatbin    string       // the real build (run with Reference)
	Builds    []FaultBuild // the fault list (ReadFaultList)
	FaultsDir string       // the folder of the fault builds NAME.fatbin
	Reference bool         // also run the real build, which must pass every case
	Device    int
	Timeout   time.Duration // per run on one case
	Parallel  int           // fault builds run at once (one worker process each)
}

// GPUSelftest runs each fault build of c.Builds but the sanitizer
// controls (mutant "-") through the cuda implementation on its kernel's
// cases of c.Suite, one worker per build started at its first case, and
// returns the selftest's rows and whether every build was caught (and,
// with c.Reference, the real build passed). Errors, when nothing could be
// tested: a fault build missing from c.FaultsDir, the selftest's own (a
// *difftest.RunError of class Unavailable when no device can run the
// kernels).
func GPUSelftest(ctx context.Context, c GPUSelftestConfig) ([]triage.SelftestRow, bool, error) {
	var subjects []triage.SelftestSubject
	var impls []*lazyImpl
	add := func(kernel, name, fault, path string) {
		l := &lazyImpl{opts: difftest.ImplOptions{Fatbin: path, Device: c.Device, Timeout: c.Timeout}}
		impls = append(impls, l)
		subjects = append(subjects, triage.SelftestSubject{Kernel: kernel, Name: name, Fault: fault, Impl: l})
	}
	if c.Reference {
		for _, k := range difftest.Kernels() {
			add(k.Name(), "reference", "", c.Fatbin)
		}
	}
	for _, b := range c.Builds {
		if b.Mutant == "-" { // a sanitizer control
			continue
		}
		// A build the default suite cannot catch (faults.txt's fifth
		// column: large) runs with the large suite only, and the large
		// suite runs only those.
		if (b.Suite == LargeSuite) != c.Large {
			continue
		}
		path := filepath.Join(c.FaultsDir, b.Name+".fatbin")
		if _, err := os.Stat(path); err != nil {
			return nil, false, fmt.Errorf("fault build %s missing: %v (scripts/build-kernels BUILD --faults)", b.Name, err)
		}
		add(b.Kernel, b.Name, b.Fault, path)
	}
	defer func() {
		for _, l := range impls {
			l.Close()
		}
	}()
	return triage.Selftest(ctx, triage.SelftestConfig{
		Suite: c.Suite, Seed: c.Seed, Timeout: c.Timeout, Parallel: c.Parallel, Subjects: subjects,
	})
}
