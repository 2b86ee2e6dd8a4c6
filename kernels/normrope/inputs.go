// Typed access to a validated case's input tensors (contract order of
// docs/contracts/norm_rope_store.md): x, weight, bias, freqs, positions, out_loc.

package normrope

import (
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// Contract names of the inputs, in order, and of the output.
const (
	NameX         = "x"
	NameWeight    = "weight"
	NameBias      = "bias"
	NameFreqs     = "freqs"
	NamePositions = "positions"
	NameOutLoc    = "out_loc"
	NameCache     = "cache"
)

// InputNames returns the input tensor names in contract order: x, weight,
// bias, freqs, positions, out_loc.
func InputNames() []string {
	return []string{NameX, NameWeight, NameBias, NameFreqs, NamePositions, NameOutLoc}
}

// inputs is a validated case, unpacked: shapes and exact f64 parameters.
type inputs struct {
	p      Params
	n      int // tokens
	stride int // row stride of x, elements
	maxPos int // rows of freqs
	x      *difftest.Tensor
	freqs  *difftest.Tensor
	pos    *difftest.Tensor
	loc    *difftest.Tensor
	w, b   [Dim]float64
	w32    [Dim]float32
	b32    [Dim]float32
}

// paramsOf returns the Params of a case (stored by value or by pointer).
func paramsOf(c *difftest.Case) (Params, error) { return difftest.ParamsOf[Params](c) }

// load validates c and unpacks it.
func load(c *difftest.Case) (*inputs, error) {
	if err := validate(c); err != nil {
		return nil, err
	}
	p, _ := paramsOf(c)
	in := &inputs{p: p, x: c.Input(NameX), freqs: c.Input(NameFreqs), pos: c.Input(NamePositions), loc: c.Input(NameOutLoc)}
	in.n, in.stride = in.x.Shape[0], in.x.Shape[1]
	in.maxPos = in.freqs.Shape[0]
	wt, bt := c.Input(NameWeight), c.Input(NameBias)
	for i := 0; i < Dim; i++ {
		in.w32[i], in.b32[i] = wt.F32(i), bt.F32(i)
		in.w[i], in.b[i] = float64(in.w32[i]), float64(in.b32[i])
	}
	return in, nil
}

// row returns token t's 128 values as exact f64 (bf16 widens exactly).
func (in *inputs) row(t int, x *[Dim]float64) {
	base := t * in.stride
	for i := range x {
		x[i] = numeric.BF16ToF64(in.x.U16(base + i))
	}
}

// row32 returns token t's 128 values as exact f32.
func (in *inputs) row32(t int, x *[Dim]float32) {
	base := t * in.stride
	for i := range x {
		x[i] = numeric.BF16ToF32(in.x.U16(base + i))
	}
}

// cosSin returns the freqs row of position pos: 64 f32 values, (cos_j,
// sin_j) interleaved.
func (in *inputs) cosSin(pos int64) []float32 {
	row := make([]float32, RopeDim)
	for k := range row {
		row[k] = in.freqs.F32(int(pos)*RopeDim + k)
	}
	return row
}
