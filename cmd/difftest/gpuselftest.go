// `difftest gpu-selftest`: the command line of bridge.GPUSelftest, its
// table and JSON.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kerneldiff/kerneldiff/bridge"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
	"github.com/kerneldiff/kerneldiff/fixtures"
)

// runGPUSelftest is `difftest gpu-selftest`: it returns the exit code, 0
// when every fault build was caught (and, with --reference, the real
// build passed), 1 when one was not, 2 on a usage error or a malformed
// fault list, 125 when nothing could be tested (a missing fault build, no
// usable device).
func runGPUSelftest(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("difftest gpu-selftest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	suiteName := fs.String("suite", "default", "suite `NAME|FILE|DIR`: an embedded suite (see difftest list suites), a TOML file, or a folder of capture files")
	seed := fs.Uint64("seed", 1, "suite seed")
	fatbin := fs.String("fatbin", bridge.DefaultFatbin, "the real build, relative to the working directory; its folder's faults/ holds the fault builds")
	faultsDir := fs.String("faults", "", "folder of the fault builds NAME.fatbin (default: faults/ next to --fatbin)")
	list := fs.String("list", "", "fault list (default: faults.txt next to --fatbin, else kernels/faults.txt)")
	reference := fs.Bool("reference", false, "also run the real build, which must pass every case")
	device := fs.Int("device", 0, "CUDA device ordinal")
	timeout := fs.Duration("timeout", 2*time.Minute, "time-out per run on one case")
	parallel := fs.Int("parallel", 4, "fault builds run at once (one worker process each)")
	jsonOut := fs.String("json", "", "also write the rows as JSON to `FILE`")
	if code, ok := parseNoArgs(fs, args, "gpu-selftest", stderr); !ok {
		return code
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
	builds, err := bridge.ReadFaultList(lst)
	if err != nil {
		fmt.Fprintln(stderr, "gpu-selftest:", err)
		return difftest.ExitUsage
	}
	st, err := suite.Resolve(*suiteName, fixtures.Suites())
	if err != nil {
		fmt.Fprintln(stderr, "gpu-selftest:", err)
		return difftest.ExitUsage
	}
	rows, ok, err := bridge.GPUSelftest(ctx, bridge.GPUSelftestConfig{
		Suite: st, Large: *suiteName == bridge.LargeSuite, Seed: *seed,
		Fatbin: *fatbin, Builds: builds, FaultsDir: dir, Reference: *reference,
		Device: *device, Timeout: *timeout, Parallel: *parallel,
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
