package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/bench"
)

// checkOutputFiles takes pairs of (flag, path) and reports the first path
// that cannot be an output file, before any work is done: an existing
// path must be a regular file and its folder must exist
// (difftest.CheckOutputPath: a folder, a device such as /dev/null or a
// FIFO is refused, since the report is renamed into place over it), and
// the folder must take a new file (a temporary probe, removed at once).
// An empty path (flag not given) is skipped. The error reads "-o out: is
// a folder, not a file".
func checkOutputFiles(flagsAndPaths ...string) error {
	for k := 0; k+1 < len(flagsAndPaths); k += 2 {
		flag, path := flagsAndPaths[k], flagsAndPaths[k+1]
		if path == "" {
			continue
		}
		if err := difftest.CheckOutputPath(flag, path); err != nil {
			return err
		}
		dir := filepath.Dir(path)
		probe, err := os.CreateTemp(dir, ".difftest-probe-*")
		if err != nil {
			return fmt.Errorf("%s %s: cannot write in folder %s: %v", flag, path, dir, errors.Unwrap(err))
		}
		probe.Close()
		os.Remove(probe.Name())
	}
	return nil
}

// jsonStallGrace is how long a write of the --json report may still block
// after a person stopped the run (a FIFO whose reader stopped reading).
const jsonStallGrace = 2 * time.Second

// maxBenchRuns bounds bench's --runs and --warmup: far beyond any useful
// count, and far from the overflow of the counts derived from them.
const maxBenchRuns = bench.MaxBenchRuns
