// The least memory traffic of topk_transform, for difftest bench's
// bandwidth floor (docs/nightly.md).

package topk

import (
	"github.com/kerneldiff/kerneldiff/difftest"
)

// MinBytes implements bench.TrafficModel: the bytes any correct
// kernel must move for case c, summed over the rows b with L_b =
// seq_lens[b]: it reads each valid score once (4·L_b; nothing past L_b),
// its row's length (4), and the page-table entries of at least
// ⌈min(L_b, K) / P⌉ pages (4 each: the chosen positions cover at least
// that many pages), and writes the whole output row (4·K for
// page_indices, and 4·K more for raw_indices when returned, −1 padding
// included). A case whose params do not decode counts 0.
func (Kernel) MinBytes(c *difftest.Case) int64 {
	p, err := paramsOf(c)
	lens := c.Input(TensorSeqLens)
	if err != nil || lens == nil || p.P < 1 {
		return 0
	}
	outs := int64(1)
	if p.ReturnRaw {
		outs = 2
	}
	var n int64
	for b := 0; b < lens.Len(); b++ {
		L := max(int64(lens.I32(b)), 0)
		picks := min(L, int64(p.K))
		n += 4*L + 4 + 4*((picks+int64(p.P)-1)/int64(p.P)) + 4*int64(p.K)*outs
	}
	return n
}
