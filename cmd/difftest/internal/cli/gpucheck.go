// `difftest gpu-check`: the whole GPU check of a bundle (package gpucheck).

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/gpucheck"
	"github.com/kerneldiff/kerneldiff/difftest"
)

const gpuCheckUsage = `gpu-check [--device N] [--steps "info suite ..."] [--dist DIR]`

// gpuCheckCmd runs the steps of gpucheck.Check on the bundle beside this
// binary (--dist), the reports to $OUT (else a fresh folder under /tmp).
// Exit 0 when every step passed or was skipped, 1 when one failed, 2 on
// usage or a broken bundle.
func gpuCheckCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("gpu-check", stderr)
	device := fs.Int("device", 0, "CUDA device ordinal")
	steps := fs.String("steps", strings.Join(gpucheck.Steps, " "), "the steps to run, in order")
	dist := fs.String("dist", "", "the bundle folder (default: the folder of this difftest)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage of difftest gpu-check:\n  difftest %s\n\n", gpuCheckUsage)
		fmt.Fprintln(stderr, "The whole GPU check of a bundle (make gpu-bundle): info, the default suite, bench,")
		fmt.Fprintln(stderr, "the GPU selftest of the fault builds, compute-sanitizer memcheck and racecheck on quick,")
		fmt.Fprintln(stderr, "the GPU Go tests; a table last. Reports go to $OUT (else a fresh folder under /tmp).")
		fmt.Fprintln(stderr, "KD_T_<STEP>=SECONDS overrides a step's time limit; KD_BENCH_RUN=REGEXP times only those shapes.")
		fmt.Fprintln(stderr, "Exit status: 0 every step passed or was skipped, 1 a step failed, 2 usage or a broken bundle.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, ok := parseFlagsOnly(fs, args, "gpu-check", stderr); !ok {
		return code
	}
	self, err := os.Executable()
	if err != nil {
		return usageErr(stderr, "gpu-check: cannot find this binary: %v", err)
	}
	if *dist == "" {
		*dist = filepath.Dir(self)
	}
	for _, f := range []string{"kernels.fatbin", "faults.txt"} {
		if _, err := os.Stat(filepath.Join(*dist, f)); err != nil {
			fmt.Fprintf(stderr, "gpu-check: %s missing: build the bundle with make gpu-bundle\n", filepath.Join(*dist, f))
			return difftest.ExitUsage
		}
	}
	reports := os.Getenv("OUT")
	if reports == "" {
		if reports, err = os.MkdirTemp("", "gpu-check."); err != nil {
			fmt.Fprintln(stderr, "gpu-check:", err)
			return difftest.ExitUsage
		}
	}
	limits := map[string]int{}
	for step := range gpucheck.DefaultLimits {
		if v := os.Getenv("KD_T_" + strings.ToUpper(step)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return usageErr(stderr, "gpu-check: KD_T_%s=%q: want a number of seconds", strings.ToUpper(step), v)
			}
			limits[step] = n
		}
	}
	_, failed, err := gpucheck.Check(ctx, gpucheck.Config{
		Dist: *dist, Difftest: self, Sanitizer: findSanitizer(), Device: *device, Steps: strings.Fields(*steps),
		Reports: reports, Limits: limits, BenchRun: os.Getenv("KD_BENCH_RUN"), Log: stdout,
	})
	switch {
	case errors.Is(err, gpucheck.ErrUnknownStep):
		return usageErr(stderr, "gpu-check: %v", err)
	case err != nil:
		fmt.Fprintln(stderr, "gpu-check:", err)
		return difftest.ExitFail
	case failed:
		return difftest.ExitFail
	}
	return difftest.ExitPass
}

// findSanitizer is compute-sanitizer on PATH, else under $CUDA_HOME,
// /usr/local/cuda or /opt/cuda; "" when there is none.
func findSanitizer() string {
	if p, err := exec.LookPath("compute-sanitizer"); err == nil {
		return p
	}
	for _, d := range []string{os.Getenv("CUDA_HOME"), "/usr/local/cuda", "/opt/cuda"} {
		if d == "" {
			continue
		}
		if p := filepath.Join(d, "bin", "compute-sanitizer"); isExecutable(p) {
			return p
		}
	}
	return ""
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
