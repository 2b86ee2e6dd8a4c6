// Running error analysis of an f32 kernel against the f64 reference
// (N. J. Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed.,
// SIAM 2002: §2.2 the model fl(a op b) = (a op b)(1+δ), |δ| ≤ u; §3.1
// γ_n = n·u/(1 − n·u); §4.2 a sum of n terms in any order has error
// ≤ γ_(n−1)·Σ|terms|). For each token it returns the exact z (f64) and a
// bound E_k on |z_f32,k − z_k| that holds for every kernel that computes
// the contract's formulas in binary32 with round-to-nearest: any summation
// order (sequential, pairwise, warp-shuffle trees), with or without FMA,
// 1/sqrtf or rsqrtf (≤ 2 ULP, CUDA C Programming Guide, "Mathematical
// Functions"), division or multiplication by a reciprocal. The comparators
// accept exactly the roundings of values within E_k of the exact result.

package normrope

import (
	"math"
	"strconv"
)

const (
	// u is the unit roundoff of binary32, 2^-24.
	u = 0x1p-24
	// rsqrtErr bounds the relative error of the kernel's 1/sqrt(v): rsqrtf
	// is within 2 ULP, and an ULP is at most 2u relative; 1/sqrtf has two
	// correctly rounded steps (≤ 2u). 4u covers both.
	rsqrtErr = 4 * u
	// tiny covers binary32 underflow: every rounding into the subnormal
	// range adds at most 2^-150 absolute; a token's path has fewer than
	// 2^12 such roundings per output.
	tiny = 0x1p-138
	// slack absorbs the second-order terms (products of two δ's) dropped
	// below and the f64 reference's own rounding (≈ 2^-53 relative).
	slack = 1 + 0x1p-10
	// ubf16 is the unit roundoff of bfloat16 (8 significand bits), 2^-8:
	// a declared bf16 intermediate (Params.Intermediate) rounds with it.
	ubf16 = 0x1p-8
	// f32Max is the largest finite binary32 value.
	f32Max = math.MaxFloat32
)

// gamma returns γ_n = n·u/(1 − n·u).
func gamma(n int) float64 { return float64(n) * u / (1 - float64(n)*u) }

// tokenBound is the analysis of one token.
type tokenBound struct {
	z  [Dim]float64 // exact output before the store (reference, f64)
	e  [Dim]float64 // |z_f32,k − z_k| ≤ e[k] for every legitimate f32 kernel
	dc string       // non-empty: the token's values are unspecified ("don't care"), and why
}

// analyze computes token t's z and error bounds. It mirrors normF64,
// ropeF64 and hadamardF64 and carries a bound alongside every value.
func (in *inputs) analyze(t int, tb *tokenBound) {
	if in.p.Stages == StagesStore {
		in.analyzeStore(t, tb)
		return
	}
	var x [Dim]float64
	in.row(t, &x)
	tb.dc = ""
	if tb.dc = dontCare(in.p.Norm, &x); tb.dc != "" {
		return
	}
	eps := float64(in.p.Eps)
	y, e := &tb.z, &tb.e

	// Stage 1, norm. Let d_i = x_i (rms) or x_i − mean (layer), v =
	// mean(d²), r = 1/sqrt(v + eps).
	//
	// mean (layer only): a 128-term sum, any order: |m_f − m| ≤
	// γ_127·Σ|x|/128 (÷128 is exact) =: εm. Welford's running mean stays
	// within the same bound. The kernel forms one mean and subtracts it
	// from every x_i, so its error Δ = m − m_f is one number common to all
	// dims: d_f,i = fl(x_i − m_f) = (d_i + Δ)(1 + δ_i), |δ_i| ≤ u. The
	// common shift Δ is carried apart, as the vector sh = Δ·(r·w_i) that
	// the linear stages (RoPE, Hadamard) map exactly; only the rounding
	// ed_i = u(|d_i| + εm) is per dim. (Added dim by dim, Δ would be
	// counted 128 times over by the Hadamard sums: √128 too loose, enough
	// to hide a one-pass variance E[x²] − mean², whose error grows as
	// (|mean|/std)², inside the bound.)
	//
	// variance: Σ d_f² = Σ (d_i + Δ)²(1+δ_i)²; since Σ d_i = 0 the cross
	// term vanishes, Σ(d+Δ)² = Σd² + 128Δ². With the squares' and the
	// sum's roundings (γ_128) and the (1+δ)² (2u): v_f ∈ [v(1 − γ_130),
	// (v + εm²)(1 + γ_130)]. For rms εm = 0 and γ_128 suffices; γ_130 is
	// used for both. Underflow of the squares adds ≤ 128·2^-150 to the
	// sum. Adding eps rounds once (u):
	//
	//   ρv = (γ_130·v + εm²(1+γ_130) + 2^-142) / (v + eps) + u
	//
	// bounds the relative error of v_f + eps. Then r_f = r(1+θ) with
	// |θ| ≤ (1 + rsqrtErr)/sqrt(1 − ρv) − 1 (the worse side of (1±ρv)^-½).
	//
	// output: y_i = d_i·r·w_i (+ b_i). Two products (u each) and, for
	// layer, one add (u). Per dim, besides the shift Δ·r·w_i:
	//
	//   e_i = r|w_i|·(ed_i(1+θ) + |d_i|θ + 2u(1+u)(|d_i| + ed_i)(1+θ) + εm(θ + 2u(1+u)(1+θ)))
	//         [+ u(|y_i| + εm·r|w_i| + e_i)]
	var d [Dim]float64
	var sumAbs, mean float64
	for _, v := range x {
		sumAbs += math.Abs(v)
	}
	em := 0.0
	if in.p.Norm == NormLayer {
		var sum float64
		for _, v := range x {
			sum += v
		}
		mean = sum / Dim
		em = gamma(Dim-1) * sumAbs / Dim
	}
	var ss float64
	for i, v := range x {
		d[i] = v - mean
		ss += float64(d[i] * d[i])
	}
	v := ss / Dim
	rhoV := (gamma(130)*v+em*em*(1+gamma(130))+0x1p-142)/(v+eps) + u
	theta := math.Inf(1)
	if rhoV < 1 {
		theta = (1+rsqrtErr)/math.Sqrt(1-rhoV) - 1
	}
	r := normF64(in.p.Norm, &x, &in.w, &in.b, eps, y)
	var sh [Dim]float64 // the common-shift direction: the error is Δ·sh, |Δ| ≤ em
	// Declared bf16 between the stages (Params.Intermediate): each stage's
	// 128 outputs are rounded once more, to bf16, before the next stage
	// reads them: |bf16(v) − v| ≤ ubf16·|v| + 2^-134 (RNE, 8 significand
	// bits, bf16's subnormal spacing 2^-133), with v within e_i + εm|sh_i|
	// of |y_i|. The added error then flows through the later stages like
	// any other carried error. The last stage's rounding is not added
	// for the BF16 store, whose own RNE rounding it is (rounding twice to
	// bf16 by RNE is rounding once), so the store check stays exact there.
	stage := func() {}
	if in.p.Intermediate == IntermediateBF16 {
		stage = func() {
			for i := range e {
				e[i] += ubf16*(math.Abs(y[i])+em*math.Abs(sh[i])+e[i]) + 0x1p-134
			}
		}
	}
	for i := range d {
		ed := 0.0
		if in.p.Norm == NormLayer {
			ed = u * (math.Abs(d[i]) + em)
			sh[i] = r * in.w[i]
		}
		ad := math.Abs(d[i])
		e[i] = r * math.Abs(in.w[i]) * (ed*(1+theta) + ad*theta + 2*u*(1+u)*(ad+ed)*(1+theta) + em*(theta+2*u*(1+u)*(1+theta)))
		if in.p.Norm == NormLayer {
			e[i] += u * (math.Abs(y[i]) + em*math.Abs(sh[i]) + e[i])
		}
	}

	stage()

	// Stage 2, RoPE: out = a·c − b·s (or a·s + b·c) with exact f32 c, s.
	// The shift maps exactly (sh' = R·sh). Per-dim errors carry through
	// as e_a|c| + e_b|s|; the two products round (u each, relative to
	// |a c| and |b s| with a, b perturbed by the shift, bounded by
	// A = |a| + εm|sh_a|), the add rounds (u·(|out| + εm|sh'_out|)):
	//
	//   e' = (e_a|c| + e_b|s|)(1+u) + u(A|c| + B|s|);  e_out = e' + u(|out| + εm|sh'_out| + e')
	cs := in.cosSin(in.pos.I64(t))
	for j := 0; j < RopeDim/2; j++ {
		ia, ib := ropePair(in.p.RopeStyle, in.p.RopeOffset, j)
		c, s := math.Abs(float64(cs[2*j])), math.Abs(float64(cs[2*j+1]))
		a, b := math.Abs(y[ia])+em*math.Abs(sh[ia]), math.Abs(y[ib])+em*math.Abs(sh[ib])
		ea, eb := e[ia], e[ib]
		pa := (ea*c+eb*s)*(1+u) + u*(a*c+b*s)
		pb := (ea*s+eb*c)*(1+u) + u*(a*s+b*c)
		e[ia], e[ib] = pa, pb // |out| terms added after the rotation below
	}
	ropeF64(in.p.RopeStyle, in.p.RopeOffset, cs, y)
	ropeF64(in.p.RopeStyle, in.p.RopeOffset, cs, &sh)
	for j := 0; j < RopeDim/2; j++ {
		ia, ib := ropePair(in.p.RopeStyle, in.p.RopeOffset, j)
		e[ia] += u * (math.Abs(y[ia]) + em*math.Abs(sh[ia]) + e[ia])
		e[ib] += u * (math.Abs(y[ib]) + em*math.Abs(sh[ib]) + e[ib])
	}

	if in.p.Hadamard || in.p.Store != StoreBF16 {
		stage()
	}

	// Stage 3, Hadamard: S_k = Σ_j ±y_j is a 128-term sum whatever the
	// algorithm (butterflies or dot products), so its rounding error is ≤
	// γ_127·Σ(|y_j| + εm|sh_j| + e_j) and the carried errors add ≤ Σe_j;
	// the shift maps exactly (H·sh). Kernels scale by 128^-½ once at the
	// end (the constant rounds: u; the product: u), before the transform
	// (one more rounding per term) or by 2^-½ per stage (seven more);
	// γ_140 covers all of these:
	//
	//   E_k = 128^-½·(Σe_j + γ_140·Σ(|y_j| + εm|sh_j| + e_j))·(1 + 3u)
	//         + εm·|(H·sh)_k|·(1 + 3u) + 2.01u·(|z_k| + εm|(H·sh)_k|)
	//
	// Without the Hadamard the shift adds εm·|sh_k| to e_k directly.
	if in.p.Hadamard {
		var se, sa float64
		for j := range y {
			se += e[j]
			sa += math.Abs(y[j]) + em*math.Abs(sh[j]) + e[j]
		}
		common := hadamardScale * (se + gamma(140)*sa) * (1 + 3*u)
		hadamardF64(y)
		hadamardF64(&sh)
		for k := range y {
			e[k] = common + em*math.Abs(sh[k])*(1+3*u) + 2.01*u*(math.Abs(y[k])+em*math.Abs(sh[k]))
		}
	} else {
		for k := range y {
			e[k] += em * math.Abs(sh[k])
		}
	}
	if in.p.Hadamard && in.p.Store != StoreBF16 {
		stage()
	}
	for k := range e {
		e[k] = e[k]*slack + tiny
		if math.IsNaN(e[k]) || math.IsInf(e[k], 0) || math.IsNaN(y[k]) || math.IsInf(y[k], 0) {
			tb.dc = "the error analysis overflows"
		}
	}
}

// analyzeStore is analyze for stages "store": the kernel receives the
// keys themselves, so z = x (bf16, exact in f32 and f64) and no arithmetic
// precedes the store; E_k is tiny, the floor every bound carries (the
// store's own roundings, the scale and the quotient, are the
// comparators'). A token is don't care when an x is NaN or ±inf, and for
// the FP4 store when an |x| is at least 2^127: its block's fake-quantised
// values (code × stage-1 scale, up to 8/7 of the block's largest
// magnitude) may then overflow binary32. No sum is formed, so other
// bf16-max magnitudes are compared like any value.
func (in *inputs) analyzeStore(t int, tb *tokenBound) {
	in.row(t, &tb.z)
	tb.dc = ""
	for k, v := range tb.z {
		tb.e[k] = tiny
		switch {
		case tb.dc != "":
		case math.IsNaN(v) || math.IsInf(v, 0):
			tb.dc = "x[" + strconv.Itoa(k) + "] is not finite"
		case in.p.Store == StoreFP4 && math.Abs(v) >= 0x1p127:
			tb.dc = "x[" + strconv.Itoa(k) + "] is at least 2^127: the FP4 store's fake-quantised values may overflow f32"
		}
	}
}

// dontCare returns why a token's outputs are unspecified by the contract,
// or "": an input value is NaN or ±inf, or a 128-term f32 sum the kernel
// must form (Σx² for rms; Σ|x| and Σ(x−mean)² for layer) may overflow
// binary32 in some summation order (bf16-max magnitudes), that is when the
// exact sum times (1 + γ_128) exceeds the largest finite f32.
func dontCare(norm string, x *[Dim]float64) string {
	var sq, abs float64
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "x[" + strconv.Itoa(i) + "] is not finite"
		}
		sq += v * v
		abs += math.Abs(v)
	}
	lim := f32Max / (1 + gamma(Dim))
	if norm == NormLayer {
		if abs > lim {
			return "Σ|x| overflows f32"
		}
		mean := 0.0
		for _, v := range x {
			mean += v
		}
		mean /= Dim
		sq = 0
		for _, v := range x {
			sq += (v - mean) * (v - mean)
		}
	}
	if sq > lim {
		return "the sum of squares overflows f32"
	}
	return ""
}
