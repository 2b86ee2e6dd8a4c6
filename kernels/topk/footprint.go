package topk

import (
	"fmt"

	"github.com/kerneldiff/kerneldiff/difftest"
)

var _ difftest.Footprinter = Kernel{}

// Footprint returns the memory a case of spec holds (difftest.Footprint)
// from its parameters alone: scores, seq_lens and page_table, and the
// outputs. A literal entry is sized from its decoded parameters too (its
// scores are what one pastes). A spec NewCase rejects returns the error
// CheckSpec would.
func (Kernel) Footprint(spec difftest.CaseSpec) (difftest.Footprint, error) {
	fam, ok := familyByName(spec.Family)
	if !ok || spec.Kernel != KernelName {
		return difftest.Footprint{}, fmt.Errorf("case %s: not a %s case of a known family", spec.ID(), KernelName)
	}
	g, err := readConfig(spec, fam)
	if err != nil {
		return difftest.Footprint{}, err
	}
	p := &g.Params
	return difftest.Footprint{
		Inputs: []difftest.Size{
			{Name: TensorScores, V: difftest.TensorBytes(p.scoresDType(), p.Batch, p.Stride)},
			{Name: TensorSeqLens, V: difftest.TensorBytes(difftest.I32, p.Batch)},
			{Name: TensorPageTable, V: difftest.TensorBytes(difftest.I32, p.Batch, p.MaxPages)},
		},
		Outputs: difftest.OutputSizes(p.Outputs()),
	}, nil
}
