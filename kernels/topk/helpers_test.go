package topk

import (
	"math"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
)

// Bit patterns used across the hand-worked tests.
const (
	posNaN = 0x7FC00000
	negNaN = 0xFFC00000
	posInf = 0x7F800000
	negInf = 0xFF800000
	negZ   = 0x80000000
)

// fb returns the bits of an f32.
func fb(f float32) uint32 { return math.Float32bits(f) }

// handCase builds a case from explicit rows of score bits (each padded to
// the longest row with +NaN), seq_lens and page-table rows (padded with −1).
func handCase(t testing.TB, K, P int, raw bool, scores [][]uint32, lens []int32, table [][]int32) *difftest.Case {
	t.Helper()
	stride, maxPages := 0, 0
	for _, r := range scores {
		stride = max(stride, len(r))
	}
	for _, r := range table {
		maxPages = max(maxPages, len(r))
	}
	B := len(lens)
	p := &Params{K: K, P: P, ReturnRaw: raw, Batch: B, Stride: stride, MaxPages: maxPages, Family: "hand"}
	s := difftest.MustTensor(TensorScores, difftest.F32, B, stride)
	l := difftest.MustTensor(TensorSeqLens, difftest.I32, B)
	pt := difftest.MustTensor(TensorPageTable, difftest.I32, B, maxPages)
	for b := 0; b < B; b++ {
		for i := 0; i < stride; i++ {
			x := uint32(posNaN)
			if b < len(scores) && i < len(scores[b]) {
				x = scores[b][i]
			}
			s.SetU32(b*stride+i, x)
		}
		l.SetI32(b, lens[b])
		for j := 0; j < maxPages; j++ {
			x := int32(-1)
			if b < len(table) && j < len(table[b]) {
				x = table[b][j]
			}
			pt.SetI32(b*maxPages+j, x)
		}
	}
	return &difftest.Case{ID: "topk_transform/hand", Kernel: KernelName, Family: "hand", Params: p,
		Inputs: []*difftest.Tensor{s, l, pt}, Outputs: p.Outputs()}
}

// newOuts allocates the case's outputs filled with a poison pattern
// (difftest.PoisonA, 0xA5 bytes), as the harness does.
func newOuts(c *difftest.Case) []*difftest.Tensor {
	return difftest.PoisonedTensors(c, difftest.PoisonA)
}

// runRef runs the reference into poisoned outputs and fails the test on
// error (kerneltest.Reference).
func runRef(t testing.TB, c *difftest.Case) []*difftest.Tensor {
	t.Helper()
	return kerneltest.Reference(t, Kernel{}, c)
}

// rowI32 returns row b of an i32 [B, K] tensor.
func rowI32(t *difftest.Tensor, b, K int) []int32 {
	r := make([]int32, K)
	for j := range r {
		r[j] = t.I32(b*K + j)
	}
	return r
}

// setRow writes vals into row b of an i32 [B, K] tensor.
func setRow(t *difftest.Tensor, b, K int, vals []int32) {
	for j, v := range vals {
		t.SetI32(b*K+j, v)
	}
}
