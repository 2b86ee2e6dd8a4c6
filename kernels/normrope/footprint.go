package normrope

import "github.com/kerneldiff/kerneldiff/difftest"

var _ difftest.Footprinter = Kernel{}

// Footprint returns the memory a case of spec holds (difftest.Footprint)
// from its parameters alone: x, weight, bias, freqs, positions and
// out_loc, the cache, and as scratch the byte ranges of the slots each
// token writes and their complement (two ranges of 16 bytes per token,
// twice) and the freqs table NewCase computes before it copies it into
// freqs. A spec NewCase rejects returns plan's error.
func (Kernel) Footprint(spec difftest.CaseSpec) (difftest.Footprint, error) {
	g, _, err := plan(spec)
	if err != nil {
		return difftest.Footprint{}, err
	}
	return g.footprint(), nil
}

func (g *gen) footprint() difftest.Footprint {
	return difftest.Footprint{
		Inputs: []difftest.Size{
			{Name: NameX, V: difftest.TensorBytes(difftest.BF16, g.n, g.stride)},
			{Name: NameWeight, V: difftest.TensorBytes(difftest.F32, Dim)},
			{Name: NameBias, V: difftest.TensorBytes(difftest.F32, Dim)},
			{Name: NameFreqs, V: difftest.TensorBytes(difftest.F32, g.maxPos, RopeDim)},
			{Name: NamePositions, V: difftest.TensorBytes(difftest.I64, g.n)},
			{Name: NameOutLoc, V: difftest.TensorBytes(difftest.I64, g.n)},
		},
		Outputs: []difftest.Size{{Name: NameCache, V: difftest.TensorBytes(difftest.U8, g.p.NumPages, g.p.PageBytes())}},
		Scratch: []difftest.Size{
			{Name: "written ranges", V: difftest.TensorBytes(difftest.U8, g.n, 64)},
			{Name: "freqs table", V: difftest.TensorBytes(difftest.F32, g.maxPos, RopeDim)},
		},
	}
}
