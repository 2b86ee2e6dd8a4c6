package bridge

import (
	"encoding/json"
	"testing"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/cuda/fakecuda"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/kernels/logits"
)

// fakeLogits is kd_indexer_logits on the fake device: it decodes the
// packed kd_logits_params (offsets as in TestPackLogitsLayout), checks the
// grid covers every (row, tile), rebuilds the case from device memory and
// writes the reference's logits in place. With bug set it also adds 1 to
// the last logit of row 0 below its length (a wrong score the comparator
// must catch).
func fakeLogits(bug bool) fakecuda.Kernel {
	return func(d *fakecuda.Driver, grid, block cuda.Dim3, args [][]byte) error {
		a := packedArgs(args[0])
		stride, maxPages, numPages := a.i64(48), a.i64(56), a.i64(64)
		batch, heads, log2P, store, clean, tiles := a.i32(72), a.i32(76), a.i32(80), a.i32(84), a.i32(88), a.i32(92)
		pitch, nextN, bf16Out := a.i64(96), a.i32(104), a.i32(108)
		rows := batch * nextN
		if tiles != (stride+63)/64 || int(grid.X) != rows*tiles || block.X != 256 {
			return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorLaunchFailed, Desc: "launch geometry does not cover the rows and tiles"}
		}
		P := 1 << log2P
		st, qType, qHead, pageBytes := "fp8", difftest.U8, 128, 132*P
		switch store {
		case 1:
			st, qType, pageBytes = "bf16", difftest.BF16, 256*P
		case 2:
			st, qHead, pageBytes = "fp4", 68, 68*P
		}
		pm := map[string]any{"store": st, "page_size": P, "heads": heads, "clean": clean == 1, "accum_bits": 24,
			"batch": batch, "stride": stride, "max_pages": maxPages, "num_pages": numPages, "next_n": nextN}
		if pitch != pageBytes {
			pm["page_stride"] = pitch
		}
		outType := difftest.F32
		if bf16Out == 1 {
			pm["logits_dtype"], outType = "bf16", difftest.BF16
		}
		params, _ := json.Marshal(pm)
		qShape, lensShape := []int{batch, heads, qHead}, []int{batch}
		if nextN > 1 {
			qShape, lensShape = []int{batch, nextN, heads, qHead}, []int{batch, nextN}
		}
		r := newDeviceTensors(d, a)
		if err := r.readAll(
			devTensorAt{0, logits.NameQ, qType, qShape}, devTensorAt{8, logits.NameWeights, difftest.F32, []int{rows, heads}},
			devTensorAt{16, logits.NameCache, difftest.U8, []int{numPages, pitch}}, devTensorAt{24, logits.NameSeqLens, difftest.I32, lensShape},
			devTensorAt{32, logits.NamePageTable, difftest.I32, []int{batch, maxPages}},
		); err != nil {
			return err
		}
		out, dev, err := r.read(40, logits.NameLogits, outType, rows, stride)
		if err != nil {
			return err
		}
		if err := r.reference(logits.KernelName, params, out); err != nil {
			return err
		}
		if L := int(r.ts[logits.NameSeqLens].I32(0)); bug && L > 0 {
			if bf16Out == 1 {
				out.SetU16(L-1, out.U16(L-1)^0x0100) // an exponent bit flipped
			} else {
				out.SetF32(L-1, out.F32(L-1)+1)
			}
		}
		copy(dev, out.Data)
		return nil
	}
}

// indexer_logits' quick-suite cases through the harness pipeline on the
// fake device: the packed struct, the grid and the guarded output travel
// as on a GPU; a wrong score fails the case.
func TestLogitsThroughHarness(t *testing.T) {
	runQuickThroughHarness(t, logits.KernelName, "fake-logits", "fake-logits-bug", "wrong score")
}
