package bridge

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/cuda/fakecuda"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/kernels/topk"
)

// fakeTopk is kd_topk_transform_<K> on the fake device: it decodes the
// packed kd_topk_params (offsets as in TestPackTopkLayout), reads the
// tensors from device memory, rebuilds the case from them and computes
// the outputs with the Go reference, and writes the outputs back. With bug set it then adds 1 to the first slot
// of every non-empty row. So the harness's verdict on a run through the
// worker checks every step in between: packing, pointers, guards, copies.
func fakeTopk(bug bool) fakecuda.Kernel {
	return func(d *fakecuda.Driver, grid, _ cuda.Dim3, args [][]byte) error {
		a := packedArgs(args[0])
		stride, maxPages := a.i64(40), a.i64(48)
		batch, log2P, k := a.i32(56), a.i32(60), a.i32(64)
		if int(grid.X) != batch {
			return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorLaunchFailed, Desc: "grid.x is not the batch"}
		}
		r := newDeviceTensors(d, a)
		// score_dtype at offset 68: KD_TOPK_SCORES_F32, _BF16, _F16.
		dtypes := []struct {
			dt   difftest.DType
			name string
		}{{difftest.F32, ""}, {difftest.BF16, topk.ScoreBF16}, {difftest.F16, topk.ScoreF16}}
		code := a.i32(68)
		if code < 0 || code >= len(dtypes) {
			return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorAssert, Desc: "score_dtype out of range"}
		}
		if err := r.readAll(
			devTensorAt{0, topk.TensorScores, dtypes[code].dt, []int{batch, stride}}, devTensorAt{8, topk.TensorSeqLens, difftest.I32, []int{batch}},
			devTensorAt{16, topk.TensorPageTable, difftest.I32, []int{batch, maxPages}},
		); err != nil {
			return err
		}
		p := &topk.Params{K: k, P: 1 << log2P, Batch: batch, Stride: stride, MaxPages: maxPages, ReturnRaw: fakecuda.Ptr(a, 32) != 0, ScoreDType: dtypes[code].name}
		pi, piDev, err := r.read(24, topk.TensorPageIndices, difftest.I32, batch, k)
		if err != nil {
			return err
		}
		outs, devs := []*difftest.Tensor{pi}, [][]byte{piDev}
		if p.ReturnRaw {
			raw, rawDev, err := r.read(32, topk.TensorRawIndices, difftest.I32, batch, k)
			if err != nil {
				return err
			}
			outs, devs = append(outs, raw), append(devs, rawDev)
		}
		params, _ := json.Marshal(p)
		if err := r.reference(topk.KernelName, params, outs...); err != nil {
			return err
		}
		if bug {
			for b := 0; b < batch; b++ {
				if r.ts[topk.TensorSeqLens].I32(b) > 0 {
					pi.SetI32(b*k, pi.I32(b*k)+1)
				}
			}
		}
		for i := range outs {
			copy(devs[i], outs[i].Data)
		}
		return nil
	}
}

// topkFakeKernels maps every kd_topk_transform_<K> entry to fakeTopk.
func topkFakeKernels(bug bool) map[string]fakecuda.Kernel {
	ks := map[string]fakecuda.Kernel{}
	for _, k := range topkEntryKs {
		ks[fmtEntry("kd_topk_transform_%d", k)] = fakeTopk(bug)
	}
	return ks
}

func newTopkFake(bug bool) *fakecuda.Driver { return fakecuda.New(topkFakeKernels(bug)) }

// The cuda implementation through the harness's own pipeline (guards,
// poison A and B, reference, checker) on generated topk_transform cases,
// with a fake device computing the reference: every case passes; with a
// planted off-by-one slot every case with a non-empty row fails.
func TestTopkThroughHarness(t *testing.T) {
	specs := []difftest.CaseSpec{
		{Kernel: topk.KernelName, Family: "gaussian", Name: "k512-edges", Params: map[string]any{"K": int64(512), "P": int64(64), "lengths": []any{int64(0), int64(1), int64(511), int64(512), int64(513), int64(1500)}}},
		{Kernel: topk.KernelName, Family: "needle", Name: "k1024-needle", Params: map[string]any{"K": int64(1024), "P": int64(1), "lengths": []any{int64(4500)}}},
		{Kernel: topk.KernelName, Family: "equal", Name: "k2048-ties", Params: map[string]any{"K": int64(2048), "P": int64(256), "lengths": []any{int64(3000), int64(2048)}, "raw": false}},
		{Kernel: topk.KernelName, Family: "specials", Name: "k512-specials", Params: map[string]any{"K": int64(512), "P": int64(2), "lengths": []any{int64(700)}}},
	}
	for _, tc := range []struct {
		mode string
		want difftest.Verdict
	}{{"fake-topk", difftest.VerdictPass}, {"fake-topk-bug", difftest.VerdictFail}} {
		t.Run(tc.mode, func(t *testing.T) {
			im, err := newImpl(time.Minute, spawnTest(tc.mode), packers())
			if err != nil {
				t.Fatal(err)
			}
			defer im.Close()
			k, _ := difftest.LookupKernel(topk.KernelName)
			for _, spec := range specs {
				c, err := topk.NewCase(spec, 7, rng.CaseKey(7, spec.ID()))
				if err != nil {
					t.Fatalf("%s: %v", spec.ID(), err)
				}
				if err := k.Validate(c); err != nil {
					t.Fatalf("%s: %v", spec.ID(), err)
				}
				var rec difftest.Record
				cr := difftest.CaseRun{Impl: im, Timeout: time.Minute}
				if _, err := cr.RunCase(context.Background(), k, c, &rec); err != nil {
					t.Fatalf("%s: %v", spec.ID(), err)
				}
				if rec.Verdict != tc.want {
					t.Errorf("%s: verdict %s (%s: %s), want %s", spec.ID(), rec.Verdict, rec.Class, rec.Message, tc.want)
				}
				if tc.want == difftest.VerdictPass && rec.KernelTime <= 0 {
					t.Errorf("%s: no kernel time recorded", spec.ID())
				}
				if tc.want == difftest.VerdictFail && rec.Class != difftest.Mismatch {
					t.Logf("%s: caught as %s: %s", spec.ID(), rec.Class, rec.Message)
				}
			}
		})
	}
}
