package pipeline

import (
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/kernels/normrope"
)

var _ difftest.Footprinter = Kernel{}

// Footprint returns the memory a case of spec holds (difftest.Footprint)
// from its parameters alone: the stage-1 inputs, the page table, the exact
// queries and weights, and the top-k; as scratch, the stages' own outputs
// (stage 1's cache, stage 2's logits, each four times as a stage's outputs
// are) and the f64 keys of the exact pipeline. A spec NewCase rejects
// returns plan's error.
func (Kernel) Footprint(spec difftest.CaseSpec) (difftest.Footprint, error) {
	g, err := plan(spec)
	if err != nil {
		return difftest.Footprint{}, err
	}
	p := &g.Params
	n := 0
	for _, L := range g.lengths {
		n += L
	}
	np, err := normrope.Preset(p.Preset, p.PageSize)
	if err != nil {
		return difftest.Footprint{}, err
	}
	cache := difftest.TensorBytes(difftest.U8, p.NumPages, np.PageBytes())
	return difftest.Footprint{
		Inputs: []difftest.Size{
			{Name: normrope.NameX, V: difftest.TensorBytes(difftest.BF16, n, normrope.Dim)},
			{Name: normrope.NameFreqs, V: difftest.TensorBytes(difftest.F32, p.Stride, normrope.RopeDim)},
			{Name: normrope.NamePositions, V: difftest.TensorBytes(difftest.I64, n)},
			{Name: normrope.NameOutLoc, V: difftest.TensorBytes(difftest.I64, n)},
			{Name: "page_table", V: difftest.TensorBytes(difftest.I32, p.Batch, p.MaxPages)},
			{Name: NameQExact, V: difftest.TensorBytes(difftest.F32, p.Batch, p.Heads, normrope.Dim)},
		},
		Outputs: difftest.OutputSizes(outputsOf(*p)),
		Scratch: []difftest.Size{
			{Name: "stage 1 cache", V: 4 * cache},
			{Name: "stage 2 logits", V: 4 * difftest.TensorBytes(difftest.F32, p.Batch, p.Stride)},
			{Name: "exact keys", V: difftest.TensorBytes(difftest.F64, n, normrope.Dim)},
		},
	}, nil
}
