// Rotary position embedding (J. Su et al., "RoFormer: Enhanced Transformer
// with Rotary Position Embedding", 2021, §3.4.2) on 64 of the 128 dims,
// in the two pairings kernels use: GPT-NeoX "neox" (rotate halves: pairs
// (j, j+32)) and GPT-J "interleaved" (pairs (2j, 2j+1)), docs/contracts/norm_rope_store.md step 2.

package normrope

// ropePair returns the indices of pair j ∈ [0, 32) for a style and offset:
// interleaved (off+2j, off+2j+1), neox (off+j, off+j+32).
func ropePair(style string, off, j int) (ia, ib int) {
	if style == StyleInterleaved {
		return off + 2*j, off + 2*j + 1
	}
	return off + j, off + j + RopeDim/2
}

// ropeF64 rotates y in place: for each pair (a, b) with c, s =
// cs[2j], cs[2j+1],
//
//	(a, b) → (a·c − b·s, a·s + b·c)
//
// in f64, products wrapped in float64() against FMA fusion. Dims outside
// [off, off+64) are left as they are. cs is one freqs row (64 f32 values).
func ropeF64(style string, off int, cs []float32, y *[Dim]float64) {
	for j := 0; j < RopeDim/2; j++ {
		ia, ib := ropePair(style, off, j)
		c, s := float64(cs[2*j]), float64(cs[2*j+1])
		a, b := y[ia], y[ib]
		y[ia] = float64(a*c) - float64(b*s)
		y[ib] = float64(a*s) + float64(b*c)
	}
}
