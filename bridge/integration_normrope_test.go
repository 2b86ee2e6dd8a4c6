package bridge

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/cuda/fakecuda"
	"github.com/kerneldiff/kerneldiff/difftest"
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
		a := packedArgs(args[0])
		xStride, n, maxPos, numPages := a.i64(56), a.i64(64), a.i64(72), a.i64(80)
		eps := math.Float32frombits(a.u32(88))
		P := 1 << a.i32(92)
		if want := (n + 7) / 8; int(grid.X) != want || block.X != 256 {
			return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorLaunchFailed, Desc: "launch geometry does not cover the tokens"}
		}
		names := map[int]string{0: "rms", 1: "layer"}
		styles := map[int]string{0: "neox", 1: "interleaved"}
		stores := map[int]string{0: "fp8", 1: "bf16", 2: "fp4"}
		scales := map[int]string{0: "plain", 1: "ue8m0"}
		params, _ := json.Marshal(map[string]any{
			"norm": names[a.i32(96)], "rope_offset": a.i32(100), "rope_style": styles[a.i32(104)], "hadamard": a.i32(108) != 0,
			"store": stores[a.i32(112)], "scale_fmt": scales[a.i32(116)], "page_size": P, "num_pages": numPages, "eps": eps, "model": "v4",
		})
		pageBytes := map[int]int{0: 132 * P, 1: 256 * P, 2: 68 * P}[a.i32(112)]
		r := newDeviceTensors(d, a)
		if err := r.readAll(
			devTensorAt{0, normrope.NameX, difftest.BF16, []int{n, xStride}}, devTensorAt{8, normrope.NameWeight, difftest.F32, []int{128}},
			devTensorAt{16, normrope.NameBias, difftest.F32, []int{128}}, devTensorAt{24, normrope.NameFreqs, difftest.F32, []int{maxPos, 64}},
			devTensorAt{32, normrope.NamePositions, difftest.I64, []int{n}}, devTensorAt{40, normrope.NameOutLoc, difftest.I64, []int{n}},
		); err != nil {
			return err
		}
		cache, dev, err := r.read(48, normrope.NameCache, difftest.U8, numPages, pageBytes)
		if err != nil {
			return err
		}
		if err := r.reference(normrope.KernelName, params, cache); err != nil {
			return err
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
	runQuickThroughHarness(t, normrope.KernelName, "fake-normrope", "fake-normrope-bug", "planted canary write")
}
