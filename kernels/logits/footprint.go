package logits

import "github.com/kerneldiff/kerneldiff/difftest"

var _ difftest.Footprinter = Kernel{}

// Footprint returns the memory a case of spec holds (difftest.Footprint)
// from its parameters alone: q, weights, the cache, seq_lens and
// page_table, and the logits. A spec NewCase rejects returns plan's error.
func (Kernel) Footprint(spec difftest.CaseSpec) (difftest.Footprint, error) {
	g, err := plan(spec)
	if err != nil {
		return difftest.Footprint{}, err
	}
	p := &g.Params
	return difftest.Footprint{
		Inputs: []difftest.Size{
			{Name: NameQ, V: difftest.TensorBytes(p.QDType(), p.QShape()...)},
			{Name: NameWeights, V: difftest.TensorBytes(difftest.F32, p.Rows(), p.Heads)},
			{Name: NameCache, V: difftest.TensorBytes(difftest.U8, p.NumPages, p.Pitch())},
			{Name: NameSeqLens, V: difftest.TensorBytes(difftest.I32, p.LensShape()...)},
			{Name: NamePageTable, V: difftest.TensorBytes(difftest.I32, p.Batch, p.MaxPages)},
		},
		Outputs: difftest.OutputSizes(p.Outputs()),
	}, nil
}
