// Input validation of the topk_transform contract (docs/contracts/topk_transform.md,
// "Parameters" and the slot rule).

package topk

import (
	"cmp"
	"math"
	"slices"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// Validate checks every precondition of docs/contracts/topk_transform.md before any
// implementation runs, and returns the first broken rule as a
// *difftest.InputError naming the tensor (or parameter), the index and the
// rule. The rules, in the order they are checked:
//
//   - K ≥ 1; P ≥ 1 and a power of two. (Any K ≥ 1 is accepted here: the Go
//     reference and mutants run with small K such as 4. The CUDA entry
//     points exist only for K ∈ {512, 1024, 2048}; the launcher calls
//     CheckEntryPointK.)
//   - the size limits: K ≤ MaxK, P ≤ MaxPageSize, batch ≤ MaxBatch,
//     stride ≤ MaxSeqLen, max_pages ≤ MaxPages, batch·stride ≤ MaxScores,
//     batch·max_pages ≤ MaxTableEntries, batch·K ≤ MaxOutputEntries (the
//     error names the parameter or product and the limit).
//   - score_dtype is "", "f32", "bf16" or "f16"; scores is f32 (BF16,
//     F16 for a 16-bit score_dtype) [batch, stride], seq_lens i32 [batch], page_table i32
//     [batch, max_pages], agreeing with the params; the declared outputs
//     are page_indices i32 [batch, K] and, when return_raw, raw_indices
//     i32 [batch, K].
//   - per row b: 0 ≤ seq_lens[b] ≤ stride; max_pages ≥ ceil(L/P).
//   - per used page j < ceil(L/P): page_table[b][j] ≥ 0, and the largest
//     slot of that page, page_table[b][j]·P + min(P, L − j·P) − 1, computed
//     in 64-bit, fits in int32.
//   - when raw_indices is not returned: page_table[b][0 : ceil(L/P)] holds
//     no repeated id, because the checker recovers positions by inverting
//     it (docs/contracts/topk_transform.md, rule 2).
//
// Entries of page_table past ceil(L/P) are never read by the contract and
// are not checked.
func Validate(c *difftest.Case) error {
	p, err := paramsOf(c)
	if err != nil {
		return err
	}
	if err := checkLimits(p); err != nil {
		return err
	}
	if err := checkScoreDType(p.ScoreDType); err != nil {
		return err
	}
	scores, seqLens, table, err := inputsOf(c)
	if err != nil {
		return err
	}
	if err := checkShape(scores, p.Batch, p.Stride); err != nil {
		return err
	}
	if err := checkShape(seqLens, p.Batch); err != nil {
		return err
	}
	if err := checkShape(table, p.Batch, p.MaxPages); err != nil {
		return err
	}
	if err := checkOutputs(c, p); err != nil {
		return err
	}
	shift := p.log2P()
	var order []int
	for b := 0; b < p.Batch; b++ {
		L := int(seqLens.I32(b))
		if L < 0 {
			return difftest.Inputf(TensorSeqLens, []int{b}, "must be ≥ 0, got %d", L)
		}
		if L > p.Stride {
			return difftest.Inputf(TensorSeqLens, []int{b}, "must be ≤ the scores row stride %d, got %d", p.Stride, L)
		}
		used := (L + p.P - 1) >> shift
		if used > p.MaxPages {
			return difftest.Inputf(TensorPageTable, []int{b}, "too short: seq_lens[%d] = %d needs ceil(%d/%d) = %d pages, the row has max_pages = %d", b, L, L, p.P, used, p.MaxPages)
		}
		row := b * p.MaxPages
		for j := 0; j < used; j++ {
			id := int64(table.I32(row + j))
			if id < 0 {
				return difftest.Inputf(TensorPageTable, []int{b, j}, "page id must be ≥ 0 within the used range (j < %d), got %d", used, id)
			}
			inPage := min(int64(p.P), int64(L)-int64(j)<<shift)
			if last := id*int64(p.P) + inPage - 1; last > math.MaxInt32 {
				return difftest.Inputf(TensorPageTable, []int{b, j}, "slot %d·%d + %d = %d does not fit in int32", id, p.P, inPage-1, last)
			}
		}
		if p.ReturnRaw || used < 2 {
			continue
		}
		order = order[:0]
		for j := 0; j < used; j++ {
			order = append(order, j)
		}
		slices.SortFunc(order, func(x, y int) int {
			if c := cmp.Compare(table.I32(row+x), table.I32(row+y)); c != 0 {
				return c
			}
			return x - y
		})
		for i := 1; i < used; i++ {
			j0, j1 := order[i-1], order[i]
			if table.I32(row+j0) == table.I32(row+j1) {
				return difftest.Inputf(TensorPageTable, []int{b, j1}, "page id %d repeats page_table[%d][%d]; without raw_indices the used range must be injective (the checker inverts it)", table.I32(row+j1), b, j0)
			}
		}
	}
	return nil
}

// CheckEntryPointK reports whether a CUDA entry point exists for k
// (EntryPointKs); the error is a *difftest.InputError on "K".
func CheckEntryPointK(k int) error {
	if slices.Contains(EntryPointKs[:], k) {
		return nil
	}
	return difftest.Inputf("K", nil, "no CUDA entry point for K = %d (instantiated: 512, 1024, 2048)", k)
}

// inputsOf returns the three inputs by contract name.
func inputsOf(c *difftest.Case) (scores, seqLens, table *difftest.Tensor, err error) {
	want := []struct {
		name  string
		dtype difftest.DType
		dst   **difftest.Tensor
	}{
		{TensorScores, scoresDTypeOf(c), &scores},
		{TensorSeqLens, difftest.I32, &seqLens},
		{TensorPageTable, difftest.I32, &table},
	}
	for _, w := range want {
		t := c.Input(w.name)
		if t == nil {
			return nil, nil, nil, difftest.Inputf(w.name, nil, "missing input tensor")
		}
		if err := t.CheckLayout(w.dtype, -1); err != nil {
			return nil, nil, nil, err
		}
		*w.dst = t
	}
	return scores, seqLens, table, nil
}

// checkShape requires t.Shape == shape.
func checkShape(t *difftest.Tensor, shape ...int) error {
	if !slices.Equal(t.Shape, shape) {
		return difftest.Inputf(t.Name, nil, "shape must be %v (from the params), got %v", shape, t.Shape)
	}
	return nil
}

// checkOutputs requires the case's declared outputs to be Params.Outputs.
func checkOutputs(c *difftest.Case, p *Params) error {
	want := p.Outputs()
	if len(c.Outputs) != len(want) {
		return difftest.Inputf("outputs", nil, "must be %d tensors (return_raw = %v), got %d", len(want), p.ReturnRaw, len(c.Outputs))
	}
	for i, w := range want {
		g := c.Outputs[i]
		if g.Name != w.Name || g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) || g.InOut {
			return difftest.Inputf(w.Name, nil, "output %d must be %s %s %v, got %s %s %v", i, w.Name, w.DType, w.Shape, g.Name, g.DType, g.Shape)
		}
	}
	return nil
}
