// Input validation of norm_rope_store (docs/contracts/norm_rope_store.md step 5 and the
// parameter table): a case that breaks one of these rules is rejected
// before any implementation runs.

package normrope

import (
	"fmt"
	"math"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// Validate checks case c against the contract and returns the first broken
// rule as an *difftest.InputError (wrapping difftest.ErrInvalidInput)
// naming the tensor, the index and the rule:
//
//   - params: see Params.Check (enums, P a power of two, the cache size,
//     eps a positive normal f32, the preset label);
//   - the six inputs present in contract order with their dtypes and shapes:
//     x bf16 [N, x_stride] with N in [1, MaxTokens], x_stride in [128,
//     MaxXStride] and N·x_stride·2 ≤ MaxXBytes, weight and bias f32 [128],
//     freqs f32 [max_pos, 64] with max_pos in [1, MaxPositions], positions
//     and out_loc i64 [N];
//   - weight and bias finite (model parameters);
//   - one output cache u8 [num_pages, 132·P] (FP8), [num_pages, 68·P] (FP4) or [num_pages, 256·P]
//     (BF16), InOut;
//   - positions[i] in [0, max_pos);
//   - out_loc[i] = −1 or in [0, num_pages·P), and the non-negative values
//     distinct (a duplicate names both indices);
//   - freqs rows positions[i] finite for every token (the table is a model
//     constant, like weight; a NaN there would make the token unchecked);
//   - the case compares something: when some token has out_loc ≥ 0, at
//     least one such token has a specified value (finite x whose f32 sums
//     fit, see dontCare). Only the families whose point is don't-care
//     tokens (nonfinite, bf16-max; Case.Family, also kept in captures) may
//     have every written token don't care: they still check the canaries,
//     and Check says so in a warning. A case where no token writes is a
//     canary-only case and is valid.
func Validate(c *difftest.Case) error { return validate(c) }

func validate(c *difftest.Case) error {
	p, err := paramsOf(c)
	if err != nil {
		return err
	}
	if err := p.Check(); err != nil {
		return err
	}
	if len(c.Inputs) != len(InputNames()) {
		return difftest.Inputf("inputs", nil, "want %d tensors %v, got %d", len(InputNames()), InputNames(), len(c.Inputs))
	}
	for i, name := range InputNames() {
		if c.Inputs[i] == nil || c.Inputs[i].Name != name {
			got := "<nil>"
			if c.Inputs[i] != nil {
				got = c.Inputs[i].Name
			}
			return difftest.Inputf("inputs", []int{i}, "must be %q, got %q", name, got)
		}
	}
	x, w, b, freqs, pos, loc := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3], c.Inputs[4], c.Inputs[5]
	if err := x.CheckLayout(difftest.BF16, 2); err != nil {
		return err
	}
	n := x.Shape[0]
	if x.Shape[1] < Dim {
		return difftest.Inputf(NameX, nil, "row stride must be ≥ %d, got shape %v", Dim, x.Shape)
	}
	if err := checkSizes(n, x.Shape[1], NameX, NameX); err != nil {
		return err
	}
	for _, t := range []*difftest.Tensor{w, b} {
		if err := shape1(t, difftest.F32, Dim); err != nil {
			return err
		}
		for i := 0; i < Dim; i++ {
			if v := float64(t.F32(i)); math.IsNaN(v) || math.IsInf(v, 0) {
				return difftest.Inputf(t.Name, []int{i}, "must be finite, got %g", v)
			}
		}
	}
	if err := freqs.CheckLayout(difftest.F32, 2); err != nil {
		return err
	}
	if freqs.Shape[0] < 1 || freqs.Shape[1] != RopeDim {
		return difftest.Inputf(NameFreqs, nil, "shape must be [max_pos ≥ 1, %d], got %v", RopeDim, freqs.Shape)
	}
	if err := checkMaxPos(freqs.Shape[0], NameFreqs); err != nil {
		return err
	}
	maxPos := int64(freqs.Shape[0])
	for _, t := range []*difftest.Tensor{pos, loc} {
		if err := shape1(t, difftest.I64, n); err != nil {
			return err
		}
	}
	if err := checkOutputs(c, p); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if v := pos.I64(i); v < 0 || v >= maxPos {
			return difftest.Inputf(NamePositions, []int{i}, "must be in [0, max_pos = %d), got %d", maxPos, v)
		}
	}
	slots := int64(p.NumSlots())
	owner := make(map[int64]int, n)
	for i := 0; i < n; i++ {
		v := loc.I64(i)
		switch {
		case v < -1:
			return difftest.Inputf(NameOutLoc, []int{i}, "must be −1 (skip) or a slot ≥ 0, got %d", v)
		case v == -1:
			continue
		case v >= slots:
			return difftest.Inputf(NameOutLoc, []int{i}, "slot %d is beyond the cache (num_pages·P = %d·%d = %d slots)", v, p.NumPages, p.PageSize, slots)
		}
		if j, dup := owner[v]; dup {
			return difftest.Inputf(NameOutLoc, []int{i}, "slot %d duplicates out_loc[%d]; non-negative slots must be distinct", v, j)
		}
		owner[v] = i
	}
	if err := checkFreqsRows(freqs, pos); err != nil {
		return err
	}
	return checkCoverage(c, p, x, loc)
}

// checkFreqsRows requires the freqs row of every token's position to be
// finite; the error names the first bad element.
func checkFreqsRows(freqs, pos *difftest.Tensor) error {
	seen := make(map[int64]bool)
	for t := 0; t < pos.Len(); t++ {
		row := pos.I64(t)
		if seen[row] {
			continue
		}
		seen[row] = true
		for k := 0; k < RopeDim; k++ {
			if v := float64(freqs.F32(int(row)*RopeDim + k)); math.IsNaN(v) || math.IsInf(v, 0) {
				return difftest.Inputf(NameFreqs, []int{int(row), k}, "must be finite in every row a token reads (positions[%d] = %d), got %g", t, row, v)
			}
		}
	}
	return nil
}

// checkCoverage requires a case with written tokens to have at least one
// whose value is specified (see Validate), unless its family is one of
// the deliberately don't-care families.
func checkCoverage(c *difftest.Case, p Params, x, loc *difftest.Tensor) error {
	if families[c.Family].dontCareOK {
		return nil
	}
	written, first, why := 0, -1, ""
	var row [Dim]float64
	stride := x.Shape[1]
	for t := 0; t < loc.Len(); t++ {
		if loc.I64(t) < 0 {
			continue
		}
		written++
		for i := range row {
			row[i] = numeric.BF16ToF64(x.U16(t*stride + i))
		}
		dc := dontCare(p.Norm, &row)
		if dc == "" {
			return nil
		}
		if first < 0 {
			first, why = t, dc
		}
	}
	if written == 0 {
		return nil
	}
	return difftest.Inputf(NameX, []int{first}, "every token with out_loc ≥ 0 is don't care (%d of %d; this one: %s), so the case would compare no value; "+
		"give at least one written token finite values whose f32 sums fit (only the families nonfinite and bf16-max may be all don't care)", written, loc.Len(), why)
}

// shape1 checks a rank-1 tensor of dtype dt and length n.
func shape1(t *difftest.Tensor, dt difftest.DType, n int) error {
	if err := t.CheckLayout(dt, 1); err != nil {
		return err
	}
	if t.Shape[0] != n {
		return difftest.Inputf(t.Name, nil, "shape must be [%d], got %v", n, t.Shape)
	}
	return nil
}

// checkOutputs checks the case's single output, cache.
func checkOutputs(c *difftest.Case, p Params) error {
	if len(c.Outputs) != 1 || c.Outputs[0].Name != NameCache {
		return difftest.Inputf("outputs", nil, "want exactly [%s], got %v", NameCache, outputNames(c.Outputs))
	}
	o := c.Outputs[0]
	want := []int{p.NumPages, p.PageBytes()}
	if o.DType != difftest.U8 || len(o.Shape) != 2 || o.Shape[0] != want[0] || o.Shape[1] != want[1] || !o.InOut {
		return difftest.Inputf(NameCache, nil, "must be in-out u8 %v (%s store, P=%d: page_bytes = %s), got %s %v in-out=%v",
			want, p.Store, p.PageSize, pageBytesRule(p), o.DType, o.Shape, o.InOut)
	}
	return nil
}

func pageBytesRule(p Params) string {
	switch p.Store {
	case StoreBF16:
		return fmt.Sprintf("256·P = %d", p.PageBytes())
	case StoreFP4:
		return fmt.Sprintf("68·P = %d", p.PageBytes())
	}
	return fmt.Sprintf("132·P = %d", p.PageBytes())
}

func outputNames(os []difftest.OutputSpec) []string {
	names := make([]string, len(os))
	for i, o := range os {
		names[i] = o.Name
	}
	return names
}
