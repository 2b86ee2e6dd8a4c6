package bridge

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/cuda/fakecuda"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/fixtures"
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
		a := args[0]
		le := binary.LittleEndian
		i64 := func(off int) int { return int(int64(le.Uint64(a[off:]))) }
		i32 := func(off int) int { return int(int32(le.Uint32(a[off:]))) }
		stride, maxPages, numPages := i64(48), i64(56), i64(64)
		batch, heads, log2P, store, clean, tiles := i32(72), i32(76), i32(80), i32(84), i32(88), i32(92)
		pitch, nextN, bf16Out := i64(96), i32(104), i32(108)
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
			{0, logits.NameQ, qType, qShape}, {8, logits.NameWeights, difftest.F32, []int{rows, heads}},
			{16, logits.NameCache, difftest.U8, []int{numPages, pitch}}, {24, logits.NameSeqLens, difftest.I32, lensShape},
			{32, logits.NamePageTable, difftest.I32, []int{batch, maxPages}},
		} {
			if _, err := read(in.off, in.name, in.dt, in.shape...); err != nil {
				return err
			}
		}
		dev, err := read(40, logits.NameLogits, outType, rows, stride)
		if err != nil {
			return err
		}
		c, err := logits.FromTensors("device", params, ts)
		if err != nil {
			return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorAssert, Desc: err.Error()}
		}
		out := ts[logits.NameLogits]
		if err := logits.Compute(c, out); err != nil {
			return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorAssert, Desc: err.Error()}
		}
		if L := int(ts[logits.NameSeqLens].I32(0)); bug && L > 0 {
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
	suite, err := suite.LoadSuiteFS(fixtures.Suites(), "quick")
	if err != nil {
		t.Fatal(err)
	}
	k, ok := difftest.LookupKernel(logits.KernelName)
	if !ok {
		t.Fatal("indexer_logits not registered")
	}
	for _, tc := range []struct {
		mode string
		want difftest.Verdict
	}{{"fake-logits", difftest.VerdictPass}, {"fake-logits-bug", difftest.VerdictFail}} {
		t.Run(tc.mode, func(t *testing.T) {
			im, err := newImpl(time.Minute, spawnTest(tc.mode), packers())
			if err != nil {
				t.Fatal(err)
			}
			defer im.Close()
			ran := 0
			for i, sc := range suite.Cases {
				if sc.Spec.Kernel != logits.KernelName {
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
				t.Fatal("the quick suite has no indexer_logits case")
			}
			if tc.want == difftest.VerdictFail {
				t.Errorf("the wrong score passed all %d cases", ran)
			}
		})
	}
}
