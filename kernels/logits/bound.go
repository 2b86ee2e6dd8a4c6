// Running error analysis of an f32 indexer_logits kernel against the f64
// reference (N. J. Higham, "Accuracy and Stability of Numerical
// Algorithms", 2nd ed., SIAM 2002: §2.2 the model fl(a op b) = (a op b)(1+δ),
// |δ| ≤ u; §3.1 γ_n = n·u/(1 − n·u) and the dot-product bound
// |fl(xᵀy) − xᵀy| ≤ γ_n·Σ|x_i y_i| for any order of the n products and
// n − 1 additions, with or without fused multiply-adds; §4.2 the same for
// a sum). For each position it returns the exact logit (f64) and a bound E
// on |logit_f32 − logit| that holds for every kernel computing the
// contract's formula in binary32 with round-to-nearest: any summation
// order over the 128 dims and over the H heads (sequential, pairwise,
// tensor-core tiles, heads split over warps and summed in any order), FMA
// or not, the scale multiplied once at the end, into each head's term, or
// into the key before the dot products. The comparator accepts exactly the
// values within E of the exact logit.

package logits

import (
	"math"
)

const (
	// u is the unit roundoff of binary32, 2^-24.
	u = 0x1p-24
	// tinyTerm is the most a binary32 rounding into the subnormal range
	// adds, in absolute terms (half the smallest subnormal); each stage
	// below counts its own.
	tinyTerm = 0x1p-150
	// slack absorbs the second-order terms (products of two δ's) dropped
	// below and the f64 reference's own rounding (its 128-term f64 sums err
	// by ≤ γ_128(2^-53)·A, far below 2^-10 of the f32 bound).
	slack = 1 + 0x1p-10
	// f32Max is the largest finite binary32 value.
	f32Max = math.MaxFloat32
)

// gamma returns γ_n(unit) = n·unit/(1 − n·unit).
func gamma(n int, unit float64) float64 { return float64(n) * unit / (1 - float64(n)*unit) }

// accumUnit returns the extra per-dot-product error factor a kernel
// declares with accum_bits = a (see dotBound): 2^-a below 24 bits, 0 for
// f32 accumulation.
func accumUnit(a int) float64 {
	if a >= DefaultAccumBits {
		return 0
	}
	return math.Ldexp(1, -a)
}

// dotBound bounds |d̂_h − d_h| for one head, from A_h = Σ_d |q_d·k_d|:
//
//	e_h = (γ_130 + u_a·(1 + γ_130))·A_h + 2^-140
//
// Stage 1, the dot product d_h = Σ_d q_d·k_d of 128 exact f32 values (e4m3
// and bf16 widen exactly; their products are exact in f32 for FP8 pairs
// and in f64 always): 128 products and 127 additions in any order, FMA or
// not, err by ≤ γ_128·A_h (Higham (3.5)). A kernel that multiplies the
// scale into the key first (fl(s·k_d)) adds one rounding per term, and one
// more is slack: γ_130. Underflow: 128 subnormal roundings, ≤ 2^-143,
// covered by 2^-140.
//
// accum_bits = a < 24 declares a dot product that errs by up to
// 2^-a·A_h more than an f32 one: a result rounded once to an a-bit
// significand (a PyTorch fallback that rounds each dot product to bf16: a
// = 8, since |d_h| ≤ A_h), or additions that keep fewer bits (Hopper's
// FP8 tensor-core accumulation keeps about 14 per addition, DeepSeek-V3
// technical report §3.3.2: a chain of 128 such additions errs by at most
// 128·2^-14·A_h, so declare a = 7). The extra term is relative to A_h, not
// to |d_h|, because the additions' errors are relative to the partial
// sums.
func dotBound(aSum float64, ua float64) float64 {
	g := gamma(130, u)
	return (g+ua*(1+g))*aSum + 0x1p-140
}

// Stage 2, the ReLU: max(·, 0) is 1-Lipschitz, so |relu(d̂) − relu(d)| ≤
// e_h, and it rounds nothing.
//
// Stage 3, the weighted head sum S = Σ_h w_h·r_h of H terms with carried
// errors e_h (|r̂_h − r_h| ≤ e_h): the carried errors add Σ|w_h|·e_h; the H
// products and H − 1 additions round, any order, by ≤ γ_H·Σ|w_h|(r_h +
// e_h); a kernel that multiplies the scale into each head's term adds one
// rounding per term, one more is slack: γ_(H+2). Underflow adds ≤
// 2H·2^-150:
//
//	E_S = Σ|w_h|·e_h + γ_(H+2)·Σ|w_h|(r_h + e_h) + 2H·2^-150
//
// Stage 4, the scale: logit = s·S with the exact f32 scale s (1 for BF16),
// one product rounding to the f32 output (u relative), unless the scale
// was folded in earlier (then stage 1 or 3 counted it):
//
//	E = (|s|·E_S·(1 + u) + u·|s·S| + 2^-149)·slack
//
// headSum returns E from the head terms, the exact logit and |s|.
func headSum(ws []float64, rs, es []float64, logit, absScale float64) float64 {
	var carried, mag float64
	for h, w := range ws {
		aw := math.Abs(w)
		carried += aw * es[h]
		mag += aw * (rs[h] + es[h])
	}
	H := len(ws)
	eS := carried + gamma(H+2, u)*mag + 2*float64(H)*tinyTerm
	return (absScale*eS*(1+u) + u*math.Abs(logit) + 0x1p-149) * slack
}

// overflows reports whether some f32 evaluation of the position's formula
// may overflow binary32 (the largest magnitude on its path, with its
// bound, exceeds the largest finite f32): such a position is "don't care",
// as are positions whose key holds NaN or a non-finite scale.
func overflows(aSums []float64, ws, rs, es []float64, absScale float64) bool {
	lim := f32Max / 2
	grow := math.Max(1, absScale) // the scale may be folded in anywhere
	var mag float64
	for h, a := range aSums {
		if a*grow*(1+gamma(130, u)) > lim || math.IsInf(a, 0) {
			return true
		}
		mag += math.Abs(ws[h]) * (rs[h] + es[h])
	}
	return mag*grow*(1+gamma(len(ws)+2, u)) > lim
}

// Stage 5, bf16 logits (logits_dtype = "bf16"): the kernel rounds its f32
// result y, |y − x| ≤ E, once more to bf16 (8 significant bits, unit
// roundoff 2^-8; half the smallest bf16 subnormal spacing is 2^-134):
// |bf16(y) − y| ≤ 2^-8·|y| + 2^-134 and |y| ≤ |x| + E, so
//
//	E_bf16 = E + 2^-8·(|x| + E) + 2^-134
//
// which also covers a kernel that rounds to bf16 straight from a wider
// accumulator. bf16Bound returns it from E and the exact logit x.
func bf16Bound(e, logit float64) float64 {
	return e + 0x1p-8*(math.Abs(logit)+e) + 0x1p-134
}
