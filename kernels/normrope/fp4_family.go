// The "fp4-blocks" input family: constructed tokens that put every FP4
// edge of docs/contracts/norm_rope_store.md ("FP4 keys") into the blocks
// of each key.

package normrope

import (
	"math"

	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// fp4Kinds names the block kinds of the fp4-blocks family, in the order
// the plan stream indexes them.
var fp4Kinds = []string{"zero", "floor", "six", "three", "midpoints", "outlier"}

// fp4Mids are the e2m1 rounding midpoints.
var fp4Mids = []float64{0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5}

// fp4BlockValues draws the 32 magnitudes (bf16-exact, in units where
// z = x) of one block of a kind, with exponent e for the kinds that take
// one:
//
//	zero       all 0: both stages floor (s₁ = 2^-126, s₂ = 2^-13), codes 0
//	floor      e2m1 values and midpoints ·2^e, e in [−16, −14] (plus one
//	           5.5·2^e): s₁ = 2^e < 2^-13 = s₂, so the packer rounds the
//	           fake-quantised values a second time
//	six        one value 6·2^e (a₁/6 exactly a power of two: either s₁ is
//	           admitted) and the rest midpoints and grid values ·2^e
//	three      largest value 3.25·2^e or the tie 3.5·2^e: the largest code
//	           is 3 (or 3 or 4), so s₂ = s₁/2 and the codes double
//	midpoints  largest 5.5·2^e; midpoints ·2^e, half of them one bf16
//	           step above or below (decided, within f32 error of nothing)
//	outlier    one value ±2^(e+k), k in [4, 10], over N(0,1)·2^e: the
//	           others crushed to 0 or ±0.5
func fp4BlockValues(kind string, s *rng.Stream) [FP4Block]float64 {
	var v [FP4Block]float64
	e := s.Intn(13) - 6
	bf := func(x float64) float64 { return numeric.BF16ToF64(numeric.BF16FromF64(x)) }
	mid := func() float64 { return fp4Mids[s.Intn(len(fp4Mids))] }
	switch kind {
	case "zero":
	case "floor":
		e = -14 - s.Intn(3)
		for k := range v {
			if k%2 == 0 {
				v[k] = math.Ldexp(mid(), e)
			} else {
				v[k] = math.Ldexp(e2m1Grid[7+s.Intn(8)], e)
			}
		}
		v[0] = math.Ldexp(5.5, e)
	case "six", "midpoints", "three":
		top, lim := 6.0, 6.0
		switch kind {
		case "midpoints":
			top = 5.5
		case "three":
			top, lim = 3.25, 3.0
			if s.Intn(2) == 1 {
				top = 3.5
			}
		}
		for k := 1; k < FP4Block; k++ {
			m := mid()
			for m > lim {
				m = mid()
			}
			if kind == "midpoints" && k%2 == 1 {
				// one bf16 step (2^-7 relative at most) off the midpoint
				_, e2 := math.Frexp(m) // m = f·2^e2, f in [0.5, 1): the bf16 step is 2^(e2−1−7)
				step := math.Ldexp(1, e2-8)
				m += step * float64(2*s.Intn(2)-1)
			}
			v[k] = math.Ldexp(m, e)
		}
		v[0] = math.Ldexp(top, e)
	case "outlier":
		for k := range v {
			v[k] = bf(math.Ldexp(s.Normal(), e))
		}
		v[s.Intn(FP4Block)] = math.Ldexp(1, e+4+s.Intn(7))
	}
	return v
}

// fillFP4Blocks draws the fp4-blocks family. The plan stream picks four
// block kinds (the first never "zero", so Σx² > 0) and their 128
// magnitudes once per case; each token takes them in its own block
// order, permutes the values within each block and flips signs at
// random, so every token has the same Σx² and one norm factor r. The
// weight is f32(1/r) in every dim, so z = x·r·w = x to within the f32
// rounding of w and of the kernel: values on e2m1 midpoints and block
// maxima on 6·2^e sit within f32 error of their rounding boundary, where
// the comparator admits either side. Positions are 0 (RoPE is the
// identity) and the bias 0.
func fillFP4Blocks(g *gen) {
	plan := rng.NewStream(g.key, streamPlan, 0)
	var blocks [fp4Blocks][FP4Block]float64
	ss := 0.0
	for b := range blocks {
		kind := fp4Kinds[1+plan.Intn(len(fp4Kinds)-1)]
		if b > 0 {
			kind = fp4Kinds[plan.Intn(len(fp4Kinds))]
		}
		blocks[b] = fp4BlockValues(kind, plan)
		for _, v := range blocks[b] {
			ss += float64(v * v) // rounded: no fused multiply-add on any host
		}
	}
	r := 1 / math.Sqrt(ss/Dim+float64(g.p.Eps))
	for i := 0; i < Dim; i++ {
		g.w.SetF32(i, float32(1/r))
		g.b.SetF32(i, 0)
	}
	g.zeroPositions()
	g.rows(func(t int, s *rng.Stream) {
		order := s.Perm(fp4Blocks)
		for b, src := range order {
			perm := s.Perm(FP4Block)
			for k := 0; k < FP4Block; k++ {
				v := blocks[src][perm[k]]
				if s.Intn(2) == 1 {
					v = -v
				}
				g.setX(t, b*FP4Block+k, v)
			}
		}
	})
}

// needsFP4Direct is the requirement of the fp4-blocks family: RMSNorm,
// no Hadamard (z = y), the FP4 store (needsDirect).
func needsFP4Direct(p Params) error { return needsDirect(p, StoreFP4) }

func init() {
	families["fp4-blocks"] = family{
		doc: "rms, no Hadamard, FP4, position 0, weight 1/r so z = x: four blocks of kinds zero, amax floor (the packer re-rounds), ±6·2^e (a₁/6 on a power of two), " +
			"largest code 3 (s₂ = s₁/2), e2m1 midpoints (± one bf16 step), one outlier; the same blocks in every token, in its own order, permuted, random signs",
		needs:  needsFP4Direct,
		fill:   fillFP4Blocks,
		maxPos: defaultMaxPos,
		slots:  defaultSlots,
	}
}
