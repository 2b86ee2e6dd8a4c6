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
	"slices"
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

// analyze computes token t's z and error bounds under the contract (f32
// between the stages). It mirrors normF64, ropeF64 and hadamardF64 and
// carries a bound alongside every value.
func (in *inputs) analyze(t int, tb *tokenBound) {
	if in.p.Stages == StagesStore {
		in.analyzeStore(t, tb)
		return
	}
	var sh [Dim]float64
	em, ok := in.normStage(t, tb, &sh)
	if ok {
		in.laterStages(t, tb, em, &sh, stagesF32)
	}
}

// analyzeAs returns token t's bounds in tbs[:0] (reused) under the
// declared precision intermediate (Params.Intermediate values; "" the
// contract's f32): one tokenBound (analyze), or for a declared bf16
// rounding after a LayerNorm possibly one per range of the mean's common
// error (analyzeChain, analyzeOnce).
func (in *inputs) analyzeAs(intermediate string, t int, tbs []tokenBound) []tokenBound {
	switch intermediate {
	case IntermediateBF16:
		return in.analyzeChain(t, tbs)
	case IntermediateBF16Once:
		return in.analyzeOnce(t, tbs)
	}
	tbs = append(tbs[:0], tokenBound{})
	in.analyze(t, &tbs[0])
	return tbs
}

// maxShifts bounds the ranges of the LayerNorm mean's error that
// analyzeChain follows one by one (see there); past it, the shift is
// folded into each dim's bound.
const maxShifts = 4096

// analyzeChain computes token t's bounds for the declared bf16
// intermediate (Params.Intermediate): the chain that rounds the 128
// values to bf16 (RNE) after the norm, after RoPE and after the Hadamard
// transform, each stage computed in f32 from the previous stage's bf16
// values (SGLang's unfused V3.2 path). It returns them in tbs[:0]
// (reused): one tokenBound, or for LayerNorm one per range of the mean's
// common error Δ over which the first rounding is the same (a kernel's
// values fit one of them). z is the f64 value of that chain, E_k its
// bound.
//
// The chain's bound is derived, not widened. At a rounding point a stage's
// f32 value v lies within e_i of the f64 value y_i (the stage's bound),
// and bf16 rounding is monotone, so the bf16 value the next stage reads is
// one of the bf16 values in [bf16(y_i − e_i), bf16(y_i + e_i)] =: [lo,
// hi]. The analysis goes on from the midpoint (lo + hi)/2 with the
// half-width (hi − lo)/2 as its carried error: where y_i is not within e_i
// of a bf16 rounding midpoint, lo = hi, and the next stage starts from
// that exact bf16 value with no carried error at all. So each stage's f32
// error is absorbed by its rounding, and what the check accepts is the
// bf16 chain's own values with only the f32 freedom of the last stage (and
// a neighbour where a stage's value lies within its f32 bound of a bf16
// midpoint), not a tolerance of a bf16 step per stage, which would admit a
// truncating or doubly rounding store. The last rounding of a BF16 store
// is the store's own (rounding twice to bf16 by RNE is rounding once): the
// check applies it.
//
// LayerNorm's mean is one f32 number for all 128 dims, its error Δ (|Δ| ≤
// εm) a common shift Δ·sh_i of the norm's outputs (analyze). Folded into
// each dim's bound before the first rounding, it would be counted as 128
// independent errors, enough to hide a truncating store when |mean| ≫
// std. Instead the range [−εm, εm] is cut at every Δ where some y_i + Δ·sh_i
// ± e_i crosses a bf16 midpoint: within each piece every dim's rounding
// set is fixed, and the piece's analysis carries only the piece's
// half-width of shift. More than maxShifts pieces fall back to the fold.
func (in *inputs) analyzeChain(t int, tbs []tokenBound) []tokenBound {
	var norm tokenBound
	var sh [Dim]float64
	em, ok := in.normStage(t, &norm, &sh)
	if !ok {
		return append(tbs[:0], norm)
	}
	return roundPieces(tbs[:0], &norm, em, &sh, func(tb *tokenBound) {
		var none [Dim]float64
		in.laterStages(t, tb, 0, &none, stagesChain)
	})
}

// analyzeOnce computes token t's bounds for the declared single bf16
// rounding (Params.Intermediate "bf16-once"): the norm, RoPE and the
// Hadamard transform (when on) computed in f32 as the contract has them,
// then the 128 values rounded to bf16 (RNE) once, the values the store
// then quantises (SGLang's fused V3.2 indexer_k: data[i] =
// cast<float>(cast<bf16>(data[i])) after RoPE, before the FP8 scale; it
// has no Hadamard). It returns them in tbs[:0] (reused), as analyzeChain
// does: one tokenBound, or for LayerNorm one per range of the mean's
// common error Δ over which that rounding is the same.
//
// The bound is derived as the chain's (analyzeChain) with its one
// rounding point moved to the end: the f32 value before the rounding lies
// within e_k of the f64 value z_k (analyze's bound, with the mean's
// common shift Δ·sh_k, carried exactly through RoPE and the Hadamard,
// kept apart), so the kernel's bf16 value is one of [bf16(z_k − e_k),
// bf16(z_k + e_k)]: the bf16 rounding of z_k itself unless z_k lies
// within e_k of a bf16 midpoint, where it is either neighbour. The store
// is then judged on those bf16 values with no f32 error left (tiny), so
// the declared rounding is admitted and a truncating or doubly rounding
// conversion, or a second bf16 rounding earlier in the chain where it
// shows, is not. With the BF16 store the rounding is the store's own and
// the bounds are the contract's (Check does not ask for them).
func (in *inputs) analyzeOnce(t int, tbs []tokenBound) []tokenBound {
	var f32 tokenBound
	var sh [Dim]float64
	em, ok := in.normStage(t, &f32, &sh)
	if !ok {
		return append(tbs[:0], f32)
	}
	in.laterStages(t, &f32, em, &sh, stagesOnce)
	if f32.dc != "" {
		return append(tbs[:0], f32)
	}
	return roundPieces(tbs[:0], &f32, em, &sh, func(tb *tokenBound) {
		for k := range tb.e {
			tb.e[k] += tiny
			if math.IsInf(tb.z[k], 0) {
				tb.dc = "the error analysis overflows"
			}
		}
	})
}

// roundPieces is a bf16 rounding point of a token's analysis whose
// values tb.z (bounds tb.e) carry the LayerNorm mean's common error Δ·sh,
// |Δ| ≤ em, apart: it cuts [−em, em] into the pieces over which every
// value's rounding set is the same (shiftCuts), rounds each piece's
// values (roundBF16, the piece's half-width of shift folded into the
// bounds), calls next on it (the analysis's later stages) and appends it
// to tbs, the piece holding Δ = 0 first. With no cut (em 0, or no
// midpoint crossed) or too many (past maxShifts) it appends one
// tokenBound, the shift folded into each value's bound.
func roundPieces(tbs []tokenBound, tb *tokenBound, em float64, sh *[Dim]float64, next func(*tokenBound)) []tokenBound {
	cuts := shiftCuts(tb, sh, em*slack)
	if cuts == nil {
		one := *tb
		roundBF16(&one, em, sh)
		next(&one)
		return append(tbs, one)
	}
	first := 1 // the piece holding Δ = 0 (a kernel's mean is rarely far off) first
	for first < len(cuts)-1 && cuts[first] < 0 {
		first++
	}
	var none [Dim]float64
	for j := 0; j < len(cuts)-1; j++ {
		k := first + j
		if k >= len(cuts) {
			k -= len(cuts) - 1
		}
		mid, half := (cuts[k-1]+cuts[k])/2, (cuts[k]-cuts[k-1])/2
		piece := *tb
		for i := range piece.z {
			piece.z[i] += mid * sh[i]
			piece.e[i] += half * math.Abs(sh[i])
		}
		roundBF16(&piece, 0, &none)
		next(&piece)
		tbs = append(tbs, piece)
	}
	return tbs
}

// shiftCuts returns the pieces of [−em, em] over which the bf16 rounding
// of every y_i + Δ·sh_i ± e_i (tb's norm stage, e with slack) is the same
// set, as their sorted ends from −em to em; nil when no midpoint is
// crossed (one piece) or the pieces number more than maxShifts.
func shiftCuts(tb *tokenBound, sh *[Dim]float64, em float64) []float64 {
	if em == 0 {
		return nil
	}
	cuts := []float64{-em, em}
	for i, y := range tb.z {
		s := sh[i]
		if s == 0 {
			continue
		}
		e := tb.e[i]*slack + tiny
		lo, hi := y-em*math.Abs(s)-e, y+em*math.Abs(s)+e
		if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
			return nil
		}
		for v := bf16Down(bf16Round(lo)); v <= hi; v = bf16Up(v) {
			m := (v + bf16Up(v)) / 2
			if m < lo || m > hi {
				continue
			}
			for _, c := range [2]float64{(m - e - y) / s, (m + e - y) / s} {
				if c > -em && c < em {
					cuts = append(cuts, c)
				}
			}
			if len(cuts) > maxShifts+1 {
				return nil
			}
		}
	}
	if len(cuts) == 2 {
		return nil
	}
	slices.Sort(cuts)
	return slices.Compact(cuts)
}

// roundBF16 is a rounding point of the chain (analyzeChain): each dim's
// bound with the common shift folded in (em·|sh_i|; 0 when em is 0) and
// slack, its ends rounded to bf16; the analysis goes on from the
// interval's midpoint with its half-width as the carried error.
func roundBF16(tb *tokenBound, em float64, sh *[Dim]float64) {
	for i := range tb.e {
		v := (tb.e[i]+em*math.Abs(sh[i]))*slack + tiny
		lo, hi := bf16Round(tb.z[i]-v), bf16Round(tb.z[i]+v)
		tb.z[i], tb.e[i] = (lo+hi)/2, (hi-lo)/2
	}
}

// normStage computes stage 1, the norm, of token t into tb (z the exact
// f64 values y, e their bounds without the LayerNorm mean's common error)
// and that error's direction into sh: the error is Δ·sh with |Δ| ≤ em.
// ok is false for a don't-care token (tb.dc says why).
func (in *inputs) normStage(t int, tb *tokenBound, sh *[Dim]float64) (em float64, ok bool) {
	var x [Dim]float64
	in.row(t, &x)
	tb.dc = ""
	if tb.dc = dontCare(in.p.Norm, &x); tb.dc != "" {
		return 0, false
	}
	eps := float64(in.p.Eps)
	y, e := &tb.z, &tb.e

	var d [Dim]float64
	var sumAbs, mean float64
	for _, v := range x {
		sumAbs += math.Abs(v)
	}
	em = 0.0
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
	return em, true
}

// stageMode is how laterStages carries a token's analysis to the store.
type stageMode int

const (
	stagesF32   stageMode = iota // the contract: f32 throughout, the mean's common shift folded into the bounds
	stagesChain                  // the bf16 chain: rounded to bf16 after each stage but the store's own (em 0)
	stagesOnce                   // f32 throughout, the shift kept apart (sh mapped, not folded) for the single rounding after
)

// laterStages carries tb (stage 1's values and bounds, the common shift
// em·sh) through RoPE and the Hadamard transform to the values before the
// store, as mode says: stagesChain rounds to bf16 after each stage
// (roundBF16) but the store's own, em then being 0; stagesOnce leaves the
// shift em·sh out of the final bounds (sh is mapped through the stages
// with the values), for analyzeOnce's rounding to follow it.
func (in *inputs) laterStages(t int, tb *tokenBound, em float64, sh *[Dim]float64, mode stageMode) {
	y, e := &tb.z, &tb.e
	stage := func() {
		if mode == stagesChain {
			roundBF16(tb, 0, sh)
		}
	}
	fold := 1.0 // the shift's share of the final bounds
	if mode == stagesOnce {
		fold = 0
	}

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
	ropeF64(in.p.RopeStyle, in.p.RopeOffset, cs, sh)
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
		hadamardF64(sh)
		for k := range y {
			e[k] = common + em*math.Abs(sh[k])*(fold+3*u) + 2.01*u*(math.Abs(y[k])+em*math.Abs(sh[k]))
		}
	} else {
		for k := range y {
			e[k] += fold * em * math.Abs(sh[k])
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
