package bridge

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/cuda/fakecuda"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/fixtures"
	"github.com/kerneldiff/kerneldiff/kernels/normrope"
)

// fakeNormRope is kd_norm_rope_store on the fake device: it decodes the
// packed kd_normrope_params (offsets as in TestPackNormRopeLayout),
// rebuilds the case from device memory, and stores the reference into the
// device cache in place (the cache is in/out: bytes it does not own keep
// the harness's canary). With bug set it also writes one byte of the
// first unwritten slot's neighbour page, which the canary check catches.
func fakeNormRope(bug bool) fakecuda.Kernel {
	return func(d *fakecuda.Driver, grid, block cuda.Dim3, args [][]byte) error {
		a := args[0]
		le := binary.LittleEndian
		i64 := func(off int) int { return int(int64(le.Uint64(a[off:]))) }
		i32 := func(off int) int32 { return int32(le.Uint32(a[off:])) }
		xStride, n, maxPos, numPages := i64(56), i64(64), i64(72), i64(80)
		eps := math.Float32frombits(le.Uint32(a[88:]))
		P := 1 << i32(92)
		if want := (n + 7) / 8; int(grid.X) != want || block.X != 256 {
			return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorLaunchFailed, Desc: "launch geometry does not cover the tokens"}
		}
		names := map[int32]string{0: "rms", 1: "layer"}
		styles := map[int32]string{0: "neox", 1: "interleaved"}
		stores := map[int32]string{0: "fp8", 1: "bf16", 2: "fp4"}
		scales := map[int32]string{0: "plain", 1: "ue8m0"}
		params, _ := json.Marshal(map[string]any{
			"norm": names[i32(96)], "rope_offset": i32(100), "rope_style": styles[i32(104)], "hadamard": i32(108) != 0,
			"store": stores[i32(112)], "scale_fmt": scales[i32(116)], "page_size": P, "num_pages": numPages, "eps": eps, "model": "v4",
		})
		pageBytes := map[int32]int{0: 132 * P, 1: 256 * P, 2: 68 * P}[i32(112)]
		ts := map[string]*difftest.Tensor{}
		read := func(off int, name string, dt difftest.DType, shape ...int) ([]byte, error) {
			t := difftest.MustTensor(name, dt, shape...)
			b, err := d.Bytes(fakecuda.Ptr(a, off), uint64(len(t.Data)))
			if err != nil {
				return nil, err
			}
			copy(t.Data, b)
			ts[name] = t
			return b, nil
		}
		for _, in := range []struct {
			off   int
			name  string
			dt    difftest.DType
			shape []int
		}{
			{0, normrope.NameX, difftest.BF16, []int{n, xStride}}, {8, normrope.NameWeight, difftest.F32, []int{128}},
			{16, normrope.NameBias, difftest.F32, []int{128}}, {24, normrope.NameFreqs, difftest.F32, []int{maxPos, 64}},
			{32, normrope.NamePositions, difftest.I64, []int{n}}, {40, normrope.NameOutLoc, difftest.I64, []int{n}},
		} {
			if _, err := read(in.off, in.name, in.dt, in.shape...); err != nil {
				return err
			}
		}
		dev, err := read(48, normrope.NameCache, difftest.U8, numPages, pageBytes)
		if err != nil {
			return err
		}
		c, err := normrope.FromTensors("device", params, ts)
		if err != nil {
			return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorAssert, Desc: err.Error()}
		}
		cache := ts[normrope.NameCache]
		if err := normrope.Compute(c, cache); err != nil {
			return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorAssert, Desc: err.Error()}
		}
		if bug {
			cache.Data[len(cache.Data)-1] ^= 0xFF // the last byte of the cache, owned by no written slot in these cases
		}
		copy(dev, cache.Data)
		return nil
	}
}

// norm_rope_store's quick-suite cases through the harness pipeline on the
// fake device: the in/out cache travels with its canary and guards.
func TestNormRopeThroughHarness(t *testing.T) {
	suite, err := suite.LoadSuiteFS(fixtures.Suites(), "quick")
	if err != nil {
		t.Fatal(err)
	}
	k, ok := difftest.LookupKernel(normrope.KernelName)
	if !ok {
		t.Fatal("norm_rope_store not registered")
	}
	for _, tc := range []struct {
		mode string
		want difftest.Verdict
	}{{"fake-normrope", difftest.VerdictPass}, {"fake-normrope-bug", difftest.VerdictFail}} {
		t.Run(tc.mode, func(t *testing.T) {
			im, err := newImpl(time.Minute, spawnTest(tc.mode), packers())
			if err != nil {
				t.Fatal(err)
			}
			defer im.Close()
			ran := 0
			for i, sc := range suite.Cases {
				if sc.Spec.Kernel != normrope.KernelName {
					continue
				}
				_, c, err := difftest.GenerateCase(difftest.Item{Index: i, Seed: 1, SuiteCase: sc})
				if err != nil {
					t.Fatal(err)
				}
				rec := difftest.NewRecord(c, "cuda")
				cr := difftest.CaseRun{Impl: im, Timeout: time.Minute}
				if _, err := cr.RunCase(context.Background(), k, c, rec); err != nil {
					t.Fatalf("%s: %v", c.ID, err)
				}
				ran++
				if tc.want == difftest.VerdictPass && rec.Verdict != difftest.VerdictPass {
					t.Errorf("%s: %s (%s)", c.ID, rec.Class, rec.Message)
				}
				if tc.want == difftest.VerdictFail && rec.Verdict == difftest.VerdictFail {
					t.Logf("%s caught: %s: %s", c.ID, rec.Class, rec.Message)
					return
				}
			}
			if ran == 0 {
				t.Fatal("the quick suite has no norm_rope_store case")
			}
			if tc.want == difftest.VerdictFail {
				t.Errorf("the planted canary write passed all %d cases", ran)
			}
		})
	}
}
