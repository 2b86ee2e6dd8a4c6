//go:build gpu

// Worker isolation on a real GPU (go test -tags gpu): the same fault
// sequence as TestWorkerFaultsAndRestart, with real device faults from
// testdata/test_copy.ptx, and the production worker loading the kernels'
// fatbin (KD_FATBIN, default ../build/kernels.fatbin).

package bridge

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
)

func TestGPUWorkerFaultsAndRestart(t *testing.T) {
	im := testImpl(t, 5*time.Second, "ptx")
	t.Logf("device: %s", im.Device())
	steps := []struct {
		name  string
		fault byte
		want  difftest.Class
		msg   string
	}{
		{"first case passes", faultNone, difftest.Pass, ""},
		{"illegal address", faultIllegal, difftest.IllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS"},
		{"next case passes", faultNone, difftest.Pass, ""},
		{"trap", faultLaunch, difftest.LaunchError, "CUDA_ERROR_"},
		{"next case passes", faultNone, difftest.Pass, ""},
		{"misaligned store", faultMisalign, difftest.IllegalAddress, "CUDA_ERROR_MISALIGNED_ADDRESS"},
		{"next case passes", faultNone, difftest.Pass, ""},
		{"hang", faultHang, difftest.Timeout, "time-out"},
		{"next case passes", faultNone, difftest.Pass, ""},
		{"missing entry point", faultNoEntry, difftest.LaunchError, "no entry point kd_test_missing"},
		{"last case passes", faultNone, difftest.Pass, ""},
	}
	for i, s := range steps {
		c := copyCase(s.name, s.fault, 4096+i)
		bufs := difftest.NewBuffers(c, difftest.PoisonA)
		t0 := time.Now()
		info, err := im.Run(context.Background(), nil, c, bufs)
		t.Logf("%-20s %v in %v (kernel %v)", s.name, err, time.Since(t0).Round(time.Millisecond), info.KernelTime)
		if s.want == difftest.Pass {
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			checkCopy(t, c, bufs[0], difftest.PoisonA)
			if info.KernelTime <= 0 {
				t.Errorf("%s: no kernel time", s.name)
			}
			continue
		}
		var re *difftest.RunError
		if !errors.As(err, &re) || re.Class != s.want || !strings.Contains(re.Msg, s.msg) {
			t.Fatalf("%s: got %v, want class %s with %q", s.name, err, s.want, s.msg)
		}
	}
}

func TestGPURealWorkerLoadsFatbin(t *testing.T) {
	path := os.Getenv("KD_FATBIN")
	if path == "" {
		path = "../build/kernels.fatbin"
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no fatbin: %v", err)
	}
	im, err := newImpl(time.Minute, spawnTest("real", "--fatbin", path), packers())
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	p := im.Properties()
	t.Logf("device %q, properties %v", im.Device(), p)
	if p[difftest.PropDevice] == "" || p[difftest.PropCUDA] == "" {
		t.Errorf("properties %v lack the device or CUDA version", p)
	}
}
