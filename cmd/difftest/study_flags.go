package main

import (
	"fmt"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/kernels/pipeline"
)

// studyFlags are the values of `difftest study needle`'s flags that
// checkStudyFlags checks before anything runs.
type studyFlags struct {
	K, H, P, Device int
	Timeout         time.Duration
	Seed            uint64
	Lengths         []int
	Margins         []float64
	Keys            []string
	Outliers        int
	OutlierScale    float64
	JSON, SVG       string
	Fatbin          string
}

// checkStudyFlags reports the first flag of the study that cannot work, as
// a usage error before any case runs: K, H and P outside the pipeline's
// ranges (Params.Check), a negative --device or --timeout, a case the
// lengths, margins, key distributions and outlier settings make that the
// pipeline refuses (CheckSpec, for every one of them), and a --json or --svg that cannot be written
// (a folder, a FIFO or device, a missing folder, the --fatbin input, or
// both naming one file).
func checkStudyFlags(f studyFlags) error {
	switch {
	case f.K < 1 || f.K > pipeline.MaxK:
		return fmt.Errorf("--K %d: must be in [1, %d]", f.K, pipeline.MaxK)
	case f.H < 1 || f.H > pipeline.MaxHeads:
		return fmt.Errorf("--H %d: must be in [1, %d]", f.H, pipeline.MaxHeads)
	case f.P < 1 || f.P > 1<<10 || f.P&(f.P-1) != 0:
		return fmt.Errorf("--P %d: must be a power of two in [1, 1024]", f.P)
	case f.Device < 0:
		return fmt.Errorf("--device %d: must be ≥ 0", f.Device)
	case f.Timeout < 0:
		return fmt.Errorf("--timeout %v: must be ≥ 0 (0 = no time-out)", f.Timeout)
	}
	for _, kd := range f.Keys {
		for _, m := range f.Margins {
			for _, S := range f.Lengths {
				if err := pipeline.CheckSpec(pipeline.StudySpec(kd, S, m, f.K, f.H, f.P, f.Outliers, f.OutlierScale)); err != nil {
					return err
				}
			}
		}
	}
	for _, o := range []struct{ flag, path string }{{"--json", f.JSON}, {"--svg", f.SVG}} {
		if err := difftest.CheckOutputPath(o.flag, o.path); err != nil {
			return err
		}
		if err := difftest.CheckNotInput(o.flag, o.path, "--fatbin", f.Fatbin); err != nil {
			return err
		}
	}
	if f.JSON != "" && f.SVG != "" && difftest.SamePath(f.JSON, f.SVG) {
		return fmt.Errorf("--json %s and --svg %s name the same file: give each its own", f.JSON, f.SVG)
	}
	return nil
}
