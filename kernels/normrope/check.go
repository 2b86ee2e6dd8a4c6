// The store comparator of DESIGN.md §4: each written slot against the
// exact result, with the tolerance of bound.go. A value is accepted when it
// is what a correct binary32 kernel can produce: the round-to-nearest-even
// image of some value within the derived bound E_k of the exact one.

package normrope

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// maxWorst is how many elements a Result lists in Worst.
const maxWorst = 8

// ratioCap stands in for an unbounded tolerance ratio (a non-finite value,
// or a value on a side where nothing is accepted); JSON has no +Inf.
const ratioCap = 1e9

// Check compares the cache got with the reference's want for every token
// with out_loc ≥ 0 (bytes outside written slots are the harness's canary
// check). Per token, with z the exact f64 result and E_k its f32 error
// bound (bound.go):
//
//   - BF16: got_k must lie in [bf16(z_k − E_k), bf16(z_k + E_k)] (RNE).
//     Where E_k is below half an ULP this is the reference value, or its
//     neighbour when z_k lies within E_k of a rounding midpoint: at most
//     1 ULP, and only where rounding allows it (a plain "≤ 1 ULP" rule
//     would accept truncation, which is never more than 1 ULP off). Near
//     zero, where Hadamard outputs cancel, E_k spans several ULPs: that is
//     the absolute floor.
//   - FP8 scale: plain: within [max(amax − Ea, 1e-4), max(amax + Ea, 1e-4)]/448
//     widened by 4u relative (two f32 roundings and slack), Ea = max_k E_k
//     bounds |amax_f32 − amax|; ue8m0: a power of two between the ue8m0
//     roundings of those two ends, so exactly the reference's unless
//     amax/448 lies within the bound of a power of two, where either
//     neighbour is accepted.
//   - FP8 codes: re-quantised with the kernel's scale S when accepted (the
//     reference's otherwise): the code must lie in [e4m3(q − εq),
//     e4m3(q + εq)], q = z_k/S, εq = E_k/S·(1 + 2u) + 4u|q| (the f32
//     division or reciprocal product: ≤ 3 roundings relative to the stored
//     scale, 4u with slack). That is within one e4m3 step of the
//     re-quantised reference wherever εq is below half a step, and a
//     neighbour only near a rounding midpoint (double rounding through f16
//     is caught there).
//   - Tokens whose inputs are NaN/inf or whose f32 sums may overflow are
//     "don't care" and skipped.
//
// A non-finite value where the reference is finite gives class NonFinite;
// any other rejected value Mismatch. Metrics: tokens_checked,
// tokens_dont_care, elements, mismatches, mismatch_fraction, max_ratio,
// and max_ulp (BF16) or max_code_distance and scale_mismatches (FP8),
// distances taken against want. Worst lists up to 8 elements by
// tolerance ratio |got − exact| / allowed.
func Check(c *difftest.Case, got, want []*difftest.Tensor) difftest.Result {
	in, err := load(c)
	if err != nil {
		return difftest.Result{Class: difftest.InvalidCase, Message: err.Error()}
	}
	for _, ts := range [][]*difftest.Tensor{got, want} {
		if len(ts) != 1 {
			return difftest.Result{Class: difftest.BadOutput, Message: fmt.Sprintf("want 1 output (%s), got %d", NameCache, len(ts))}
		}
		if err := checkCache(in.p, ts[0]); err != nil {
			return difftest.Result{Class: difftest.BadOutput, Message: err.Error()}
		}
	}
	var mu sync.Mutex
	total := newTally()
	forTokens(in.n, func(lo, hi int) {
		tl := newTally()
		var tb tokenBound
		for t := lo; t < hi; t++ {
			slot := in.loc.I64(t)
			if slot < 0 {
				continue
			}
			in.analyze(t, &tb)
			if tb.dc != "" {
				tl.dontCare++
				continue
			}
			tl.tokens++
			if in.p.Store == StoreBF16 {
				checkBF16(in.p, t, int(slot), &tb, got[0].Data, want[0].Data, tl)
			} else {
				checkFP8(in.p, t, int(slot), &tb, got[0].Data, want[0].Data, tl)
			}
		}
		mu.Lock()
		total.merge(tl)
		mu.Unlock()
	})
	return total.result(in.p)
}

// tally accumulates a comparison.
type tally struct {
	tokens, dontCare   int
	elements, mismatch int
	scaleMismatch      int
	nonFinite          int
	maxDist            int
	maxRatio           float64
	worst              []scored
}

type scored struct {
	el     difftest.Element
	ratio  float64
	failed bool
	token  int
}

func newTally() *tally { return &tally{} }

func (t *tally) merge(o *tally) {
	t.tokens += o.tokens
	t.dontCare += o.dontCare
	t.elements += o.elements
	t.mismatch += o.mismatch
	t.scaleMismatch += o.scaleMismatch
	t.nonFinite += o.nonFinite
	t.maxDist = max(t.maxDist, o.maxDist)
	t.maxRatio = math.Max(t.maxRatio, o.maxRatio)
	for _, s := range o.worst {
		t.note(s)
	}
}

// note records one compared element; it keeps the maxWorst highest ratios
// (ties: lower token first, so the result is the same for any split).
func (t *tally) note(s scored) {
	less := func(a, b scored) bool {
		if a.ratio != b.ratio {
			return a.ratio > b.ratio
		}
		if a.token != b.token {
			return a.token < b.token
		}
		return a.el.Index < b.el.Index
	}
	if len(t.worst) == maxWorst && !less(s, t.worst[maxWorst-1]) {
		return
	}
	t.worst = append(t.worst, s)
	sort.Slice(t.worst, func(i, j int) bool { return less(t.worst[i], t.worst[j]) })
	if len(t.worst) > maxWorst {
		t.worst = t.worst[:maxWorst]
	}
}

// record counts one element with its verdict; mk builds its report entry,
// called only when the element enters the worst list.
func (t *tally) record(token int, failed, nonFinite bool, ratio float64, mk func() difftest.Element) {
	t.elements++
	if failed {
		t.mismatch++
		if nonFinite {
			t.nonFinite++
		}
	}
	ratio = math.Min(ratio, ratioCap)
	t.maxRatio = math.Max(t.maxRatio, ratio)
	if ratio == 0 && !failed {
		return
	}
	if len(t.worst) == maxWorst {
		last := t.worst[maxWorst-1]
		if ratio < last.ratio || (ratio == last.ratio && token >= last.token) {
			return
		}
	}
	el := mk()
	el.Ratio = ratio
	t.note(scored{el: el, ratio: ratio, failed: failed, token: token})
}

func (t *tally) result(p Params) difftest.Result {
	m := map[string]any{
		"tokens_checked":    t.tokens,
		"tokens_dont_care":  t.dontCare,
		"elements":          t.elements,
		"mismatches":        t.mismatch,
		"mismatch_fraction": 0.0,
		"max_ratio":         t.maxRatio,
	}
	if t.elements > 0 {
		m["mismatch_fraction"] = float64(t.mismatch) / float64(t.elements)
	}
	if p.Store == StoreBF16 {
		m["max_ulp"] = t.maxDist
	} else {
		m["max_code_distance"] = t.maxDist
		m["scale_mismatches"] = t.scaleMismatch
	}
	r := difftest.Result{Metrics: m}
	for _, s := range t.worst {
		r.Worst = append(r.Worst, s.el)
	}
	if t.mismatch == 0 {
		return r
	}
	r.Class = difftest.Mismatch
	if t.nonFinite > 0 {
		r.Class = difftest.NonFinite
	}
	w := t.worst[0]
	r.Message = fmt.Sprintf("%s %s: got %s, want %s (ratio %.3g); %d of %d elements mismatch",
		w.el.Tensor, w.el.Index, w.el.Got, w.el.Want, w.ratio, t.mismatch, t.elements)
	return r
}

// ratioOf returns |v − x| over the distance from x to the farthest accepted
// value on v's side of x (lo ≤ hi are the accepted ends); ratioCap when v
// is NaN or nothing on that side is accepted.
func ratioOf(v, x, lo, hi float64) float64 {
	if math.IsNaN(v) {
		return ratioCap
	}
	d := math.Abs(v - x)
	allowed := hi - x
	if v < x {
		allowed = x - lo
	}
	if d == 0 {
		return 0
	}
	if allowed <= 0 {
		return ratioCap
	}
	return d / allowed
}

func checkBF16(p Params, t, slot int, tb *tokenBound, got, want []byte, tl *tally) {
	at, _ := slotBytes(p, slot)
	for k := 0; k < Dim; k++ {
		g := binary.LittleEndian.Uint16(got[at+2*k:])
		w := binary.LittleEndian.Uint16(want[at+2*k:])
		z, e := tb.z[k], tb.e[k]
		lo := numeric.BF16ToF64(numeric.BF16FromF64(z - e))
		hi := numeric.BF16ToF64(numeric.BF16FromF64(z + e))
		v := numeric.BF16ToF64(g)
		nonFinite := math.IsNaN(v) || math.IsInf(v, 0)
		failed := nonFinite || v < lo || v > hi
		if d := numeric.BF16ULPDistance(g, w); d > tl.maxDist {
			tl.maxDist = d
		} else if d < 0 {
			tl.maxDist = max(tl.maxDist, 1<<16)
		}
		tl.record(t, failed, nonFinite, ratioOf(v, z, lo, hi), func() difftest.Element {
			return difftest.Element{
				Tensor: NameCache,
				Index:  fmt.Sprintf("token %d slot %d dim %d", t, slot, k),
				Got:    fmt.Sprintf("0x%04x (%g)", g, v),
				Want:   fmt.Sprintf("0x%04x (%g; exact %.9g ± %.3g, accepted [%g, %g])", w, numeric.BF16ToF64(w), z, e, lo, hi),
			}
		})
	}
}

func checkFP8(p Params, t, slot int, tb *tokenBound, got, want []byte, tl *tally) {
	codesAt, scaleAt := slotBytes(p, slot)
	amax, ea := 0.0, 0.0
	for k := range tb.z {
		amax = math.Max(amax, math.Abs(tb.z[k]))
		ea = math.Max(ea, tb.e[k])
	}
	sRef := fp8Scale(p.ScaleFmt, amax)
	sLo := math.Max(amax-ea, ScaleFloor) / numeric.E4M3Max * (1 - 4*u)
	sHi := math.Max(amax+ea, ScaleFloor) / numeric.E4M3Max * (1 + 4*u)
	if p.ScaleFmt == ScaleUE8M0 {
		sLo, _ = numeric.UE8M0Ceil(sLo)
		sHi, _ = numeric.UE8M0Ceil(sHi)
	}
	sGot := float64(math.Float32frombits(binary.LittleEndian.Uint32(got[scaleAt:])))
	sWant := float64(math.Float32frombits(binary.LittleEndian.Uint32(want[scaleAt:])))
	sNonFinite := math.IsNaN(sGot) || math.IsInf(sGot, 0)
	sOK := !sNonFinite && sGot >= sLo && sGot <= sHi
	if sOK && p.ScaleFmt == ScaleUE8M0 {
		frac, _ := math.Frexp(sGot)
		sOK = frac == 0.5
	}
	if !sOK {
		tl.scaleMismatch++
	}
	tl.record(t, !sOK, sNonFinite, ratioOf(sGot, sRef, sLo, sHi), func() difftest.Element {
		return difftest.Element{
			Tensor: NameCache,
			Index:  fmt.Sprintf("token %d slot %d scale", t, slot),
			Got:    fmt.Sprintf("%.9g", sGot),
			Want:   fmt.Sprintf("%.9g (exact %.9g, accepted [%.9g, %.9g])", sWant, sRef, sLo, sHi),
		}
	})
	s := sRef
	if sOK {
		s = sGot
	}
	for k := 0; k < Dim; k++ {
		g, w := got[codesAt+k], want[codesAt+k]
		q := tb.z[k] / s
		eq := tb.e[k]/s*(1+2*u) + 4*u*math.Abs(q)
		lo := float64(numeric.E4M3ToF32(numeric.E4M3FromF64(q - eq)))
		hi := float64(numeric.E4M3ToF32(numeric.E4M3FromF64(q + eq)))
		v := float64(numeric.E4M3ToF32(g))
		nonFinite := math.IsNaN(v)
		failed := nonFinite || v < lo || v > hi
		if d := numeric.E4M3CodeDistance(g, w); d > tl.maxDist {
			tl.maxDist = d
		} else if d < 0 {
			tl.maxDist = max(tl.maxDist, 256)
		}
		tl.record(t, failed, nonFinite, ratioOf(v, q, lo, hi), func() difftest.Element {
			return difftest.Element{
				Tensor: NameCache,
				Index:  fmt.Sprintf("token %d slot %d dim %d", t, slot, k),
				Got:    fmt.Sprintf("0x%02x (%g)", g, v),
				Want:   fmt.Sprintf("0x%02x (%g; exact z/scale %.9g ± %.3g, accepted [%g, %g])", w, numeric.E4M3ToF32(w), q, eq, lo, hi),
			}
		})
	}
}
