// The store comparator of docs/contracts/norm_rope_store.md: each written slot against the
// exact result, with the tolerance of bound.go. A value is accepted when it
// is what a correct binary32 kernel can produce: the round-to-nearest-even
// image of some value within the derived bound E_k of the exact one.

package normrope

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// ratioCap stands in for an unbounded tolerance ratio (difftest.RatioCap):
// a non-finite value, or a value on a side where nothing is accepted.
const ratioCap = difftest.RatioCap

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
//   - FP4: per 32-value block, the stage-1 scale, the stage-2 scale stored
//     and the codes judged under the scale stored (checkFP4).
//   - Tokens whose inputs are NaN/inf or whose f32 sums may overflow are
//     "don't care" and skipped.
//
// A non-finite value where the reference is finite gives class NonFinite;
// any other rejected value Mismatch.
//
// Declared bf16 intermediate (Params.Intermediate "bf16"): a cache passes
// when it passes the rules above with the contract's z and E_k, or with
// those of the bf16 chain (analyzeChain: z the f64 value of the chain
// that rounds to bf16 after the norm, RoPE and the Hadamard transform,
// E_k the f32 freedom left after those roundings). The chain's bound is
// as tight as the contract's, so it admits that rounding and no catalog
// mutant. Declared single rounding (Params.Intermediate "bf16-once"):
// likewise, with the bounds of analyzeOnce (the f32 stages, then one
// bf16 rounding of the values the store quantises); with the BF16 store
// that rounding is the store's own, and the contract's check is the
// whole check. When both fail, the result with fewer mismatches is
// reported, and its message says which it is.
//
// Tolerance ratio (Element.Ratio, metric max_ratio): for a stored value,
// the smallest error of the pre-rounding value that explains it, over the
// bound E allowed (ratioOf, roundRatio): 0 when the value is the rounding
// of the exact result; in (0, 1] for an accepted neighbour, as the share
// of E needed to reach the rounding midpoint; > 1 rejected. For the plain
// FP8 scale, |got − exact| over the accepted half-interval on its side. So
// a passing case's max_ratio says how much of the f32 error budget its
// closest call used (a kernel equal to the reference shows 0).
//
// Metrics: tokens_written (out_loc ≥ 0), tokens_checked, tokens_dont_care,
// elements, mismatches, mismatch_fraction, max_ratio, off_nearest
// (accepted elements that are not the rounding of the exact value: the
// neighbour next to a midpoint, at the edge of the accepted interval), and
// max_ulp (BF16) or max_code_distance and scale_mismatches (FP8; FP4 in
// e2m1 steps and blocks), distances taken against want. Worst lists up to
// 8 elements by ratio.
//
// A case with written tokens none of which is checked compares no value.
// Validate rejects such a case unless its family is one whose point is
// don't-care tokens (nonfinite, bf16-max); there Check passes it with a
// warning that only the canaries were checked, and fails any other such
// case with class InvalidCase, so a case that compared nothing is never
// reported as a plain pass.
func Check(c *difftest.Case, got, want []*difftest.Tensor) difftest.Result {
	in, err := load(c)
	if err != nil {
		return difftest.Result{Class: difftest.InvalidCase, Message: err.Error()}
	}
	if r, ok := difftest.CheckOneOutput(NameCache, got, want, func(t *difftest.Tensor) error { return checkCache(in.p, t) }); !ok {
		return r
	}
	r := checkWith(c, in, got, want, "")
	declared := in.p.declared()
	if !r.Failed() || declared == "" || r.Class == difftest.InvalidCase {
		return withFailedRule(&in.p, r)
	}
	rc := checkWith(c, in, got, want, declared)
	if !rc.Failed() {
		return rc
	}
	// Both fail: the closer explanation, the one with fewer mismatches
	// (the declared precision's on a tie), saying which it is.
	what := declaredWhat[declared]
	if mismatches(rc) <= mismatches(r) {
		rc.Message += fmt.Sprintf("; checked as the declared %s (the f32 contract, which intermediate = %s also admits, fails too)", what, declared)
		return withFailedRule(&in.p, rc)
	}
	r.Message += fmt.Sprintf("; checked as the f32 contract (the declared %s fails too)", what)
	return withFailedRule(&in.p, r)
}

// withFailedRule names the rule of the contract's store format that a
// failing result's first element breaks, as the "failed_rule" metric the
// reports group causes by (difftest/report.RuleOf): "fp8 code", "fp8
// scale", "bf16 value", "fp4 code" or "fp4 scale". The first element is
// the one the message opens with ("cache token 2 slot 47 dim 101: …" a
// code or value, "cache token 83 slot 46 scale: …" a scale). A passing or
// invalid result is returned unchanged.
func withFailedRule(p *Params, r difftest.Result) difftest.Result {
	if !r.Failed() || r.Class == difftest.InvalidCase {
		return r
	}
	head, _, _ := strings.Cut(r.Message, ":")
	kind := "code"
	switch {
	case strings.Contains(head, " scale"):
		kind = "scale"
	case p.Store == StoreBF16:
		kind = "value"
	}
	if r.Metrics == nil {
		r.Metrics = map[string]any{}
	}
	r.Metrics["failed_rule"] = p.Store + " " + kind
	return r
}

// declaredWhat names each declared precision (Params.Intermediate) in
// Check's messages.
var declaredWhat = map[string]string{
	IntermediateBF16:     "bf16 chain",
	IntermediateBF16Once: "single bf16 rounding before the store",
}

// mismatches returns a result's "mismatches" metric.
func mismatches(r difftest.Result) int {
	n, _ := r.Metrics["mismatches"].(int)
	return n
}

// checkWith is Check's comparison with the bounds of the precision
// intermediate (analyzeAs: "" the contract's, analyze; "bf16" the
// declared bf16 chain's, analyzeChain; "bf16-once" the single rounding's,
// analyzeOnce), where a token passes when it passes under one of its
// pieces (each tried up to its first mismatch; the piece holding Δ = 0,
// the first, reports a token that none passes).
func checkWith(c *difftest.Case, in *inputs, got, want []*difftest.Tensor, intermediate string) difftest.Result {
	var mu sync.Mutex
	total := newTally()
	forTokens(in.n, func(lo, hi int) {
		tl := newTally()
		var tbs []tokenBound
		for t := lo; t < hi; t++ {
			slot := in.loc.I64(t)
			if slot < 0 {
				continue
			}
			tl.written++
			tbs = in.analyzeAs(intermediate, t, tbs)
			dc := ""
			for i := range tbs {
				if dc == "" {
					dc = tbs[i].dc
				}
			}
			if dc != "" {
				tl.dontCare++
				if tl.firstDC == "" {
					tl.firstDC = fmt.Sprintf("token %d: %s", t, dc)
				}
				continue
			}
			tl.tokens++
			if len(tbs) == 1 {
				checkToken(in.p, t, int(slot), &tbs[0], got[0].Data, want[0].Data, tl)
				continue
			}
			best := 0 // the piece holding Δ = 0 reports a token no piece passes
			for i := range tbs {
				pt := &tally{quiet: true}
				checkToken(in.p, t, int(slot), &tbs[i], got[0].Data, want[0].Data, pt)
				if pt.Mismatches == 0 {
					best = i
					break
				}
			}
			checkToken(in.p, t, int(slot), &tbs[best], got[0].Data, want[0].Data, tl)
		}
		mu.Lock()
		total.merge(tl)
		mu.Unlock()
	})
	return total.result(in.p, families[c.Family].dontCareOK)
}

// checkToken compares token t's slot under the bounds tb.
func checkToken(p Params, t, slot int, tb *tokenBound, got, want []byte, tl *tally) {
	switch p.Store {
	case StoreBF16:
		checkBF16(p, t, slot, tb, got, want, tl)
	case StoreFP4:
		checkFP4(p, t, slot, tb, got, want, tl)
	default:
		checkFP8(p, t, slot, tb, got, want, tl)
	}
}

// tally accumulates a comparison.
type tally struct {
	difftest.Tally  // the compared elements; key (token, 0), then the element's index
	written, tokens int
	dontCare        int
	firstDC         string // why the first don't-care token is, for messages
	offNearest      int
	scaleMismatch   int
	maxDist         int
	quiet           bool // a piece tried by checkWith: no worst elements, and settled at the first mismatch
}

// settled reports whether a quiet tally has its answer: a mismatch.
func (t *tally) settled() bool { return t.quiet && t.Mismatches > 0 }

func newTally() *tally { return &tally{} }

func (t *tally) merge(o *tally) {
	t.written += o.written
	t.tokens += o.tokens
	t.dontCare += o.dontCare
	if t.firstDC == "" {
		t.firstDC = o.firstDC
	}
	t.offNearest += o.offNearest
	t.scaleMismatch += o.scaleMismatch
	t.maxDist = max(t.maxDist, o.maxDist)
	t.Tally.Merge(&o.Tally)
}

// record counts one element with its verdict (difftest.Tally.Record); mk
// builds its report entry, called only when the element enters the worst
// list.
func (t *tally) record(token int, failed, nonFinite bool, ratio float64, mk func() difftest.Element) {
	if t.quiet {
		t.Elements++
		if failed {
			t.Mismatches++
			if nonFinite {
				t.NonFinite++
			}
		}
		return
	}
	t.Record([2]int{token, 0}, failed, nonFinite, ratio, mk)
}

func (t *tally) result(p Params, dontCareOK bool) difftest.Result {
	m := map[string]any{
		"tokens_written":    t.written,
		"tokens_checked":    t.tokens,
		"off_nearest":       t.offNearest,
		"tokens_dont_care":  t.dontCare,
		"elements":          t.Elements,
		"mismatches":        t.Mismatches,
		"mismatch_fraction": 0.0,
		"max_ratio":         t.MaxRatio,
	}
	if t.Elements > 0 {
		m["mismatch_fraction"] = float64(t.Mismatches) / float64(t.Elements)
	}
	if p.Store == StoreBF16 {
		m["max_ulp"] = t.maxDist
	} else {
		m["max_code_distance"] = t.maxDist
		m["scale_mismatches"] = t.scaleMismatch
	}
	r := difftest.Result{Metrics: m, Worst: t.Worst.Elements()}
	if !t.Verdict(&r) && t.written > 0 && t.tokens == 0 {
		msg := fmt.Sprintf("no written token has a specified value (all %d don't care; %s): only the canaries were checked", t.written, t.firstDC)
		if !dontCareOK {
			r.Class, r.Message = difftest.InvalidCase, msg+", and the family is not one whose point is don't-care tokens"
			return r
		}
		r.Warnings = append(r.Warnings, msg)
	}
	return r
}

// ratioOf returns |v − x| over the distance from x to the farthest accepted
// value on v's side of x (lo ≤ hi are the accepted ends); ratioCap when v
// is NaN or nothing on that side is accepted. It scores the plain FP8
// scale, a value compared without a rounding grid of its own.
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

// roundRatio scores a stored value v of a rounding grid against the exact
// pre-rounding value x and its error bound e > 0. rnd rounds to the grid
// (RNE); down and up return v's neighbours below and above (±inf past the
// ends). The values that round to v form an interval bounded by the
// midpoints with its neighbours; the score is x's distance to that
// interval over e: 0 when rnd(x) = v, the share of e needed to reach the
// midpoint for a neighbour, ratioCap for NaN. near reports rnd(x) = v.
func roundRatio(v, x, e float64, rnd, down, up func(float64) float64) (ratio float64, near bool) {
	if math.IsNaN(v) {
		return ratioCap, false
	}
	r := rnd(x)
	if v == r {
		return 0, true
	}
	var dist float64
	if v > r { // x lies below the midpoint a with v's neighbour below
		lo := down(v)
		a := (lo + v) / 2
		switch {
		case math.IsInf(v, 1): // the overflow threshold: the largest value plus half its ULP
			a = lo + (lo-down(lo))/2
		case math.IsInf(lo, -1):
			a = v - (up(v)-v)/2
		}
		dist = a - x
	} else { // x lies above the midpoint b with v's neighbour above
		hi := up(v)
		b := (v + hi) / 2
		switch {
		case math.IsInf(v, -1):
			b = hi - (up(hi)-hi)/2
		case math.IsInf(hi, 1):
			b = v + (v-down(v))/2
		}
		dist = x - b
	}
	if dist < 0 { // x exactly at the midpoint, resolved to the even side
		dist = 0
	}
	return dist / e, false
}

// bf16Down and bf16Up return the bf16 neighbours of a bf16 value v.
func bf16Down(v float64) float64 { return bf16Step(v, -1) }
func bf16Up(v float64) float64   { return bf16Step(v, 1) }

func bf16Step(v float64, dir int) float64 {
	if v == 0 {
		return float64(dir) * numeric.BF16ToF64(0x0001)
	}
	b := numeric.BF16FromF64(v)
	if (v > 0) == (dir > 0) {
		b++ // away from zero
	} else {
		b--
	}
	return numeric.BF16ToF64(b)
}

// bf16Round returns x rounded to bf16 (RNE, once, from the f64 value):
// numeric's conversion, or where x and its rounding lie in bf16's normal
// range (|x| in [2^-126, 2^127)), the same rounding done on x's bits (to
// 8 significant bits, ties to even), which the chain's analysis does
// 128 times a rounding point.
func bf16Round(x float64) float64 {
	b := math.Float64bits(x)
	if e := b >> 52 & 0x7FF; e >= 1023-126 && e < 1023+127 {
		b += 1<<44 - 1 + b>>45&1
		return math.Float64frombits(b &^ (1<<45 - 1))
	}
	return numeric.BF16ToF64(numeric.BF16FromF64(x))
}

// e4m3Down and e4m3Up return the e4m3fn neighbours of an e4m3 value v;
// past ±448 they return ±inf (saturation sends everything beyond to ±448).
func e4m3Down(v float64) float64 { return e4m3Step(v, -1) }
func e4m3Up(v float64) float64   { return e4m3Step(v, 1) }

func e4m3Step(v float64, dir int) float64 {
	if v == 0 {
		return float64(dir) * float64(numeric.E4M3ToF32(0x01))
	}
	c := numeric.E4M3FromF64(v)
	mag := c & 0x7F
	if (v > 0) == (dir > 0) {
		if mag == 0x7E {
			return math.Inf(dir)
		}
		mag++
	} else {
		mag--
	}
	return float64(numeric.E4M3ToF32(c&0x80 | mag))
}

func e4m3Round(x float64) float64 { return float64(numeric.E4M3ToF32(numeric.E4M3FromF64(x))) }

// rounding is the rounding grid of a stored value, as roundRatio takes
// it: round rounds an f64 value to the grid (RNE), down and up return a
// grid value's neighbours.
type rounding struct{ round, down, up func(float64) float64 }

// The roundings of the stores' values: BF16 values, FP8 codes, FP4
// stage-1 codes.
var (
	bf16Rounding = rounding{bf16Round, bf16Down, bf16Up}
	e4m3Rounding = rounding{e4m3Round, e4m3Down, e4m3Up}
	e2m1Rounding = rounding{numeric.E2M1Round, e2m1Down, e2m1Up}
)

// scoreRound applies roundRatio on g's grid and keeps it consistent with
// the verdict (ratio ≤ 1 for an accepted value, > 1 for a rejected one,
// whatever the last bit of the f64 arithmetic), and counts off-nearest
// acceptances.
func (t *tally) scoreRound(v, x, e float64, failed bool, g rounding) float64 {
	ratio, near := roundRatio(v, x, e, g.round, g.down, g.up)
	if failed {
		return math.Max(ratio, math.Nextafter(1, 2))
	}
	if !near {
		t.offNearest++
	}
	return math.Min(ratio, 1)
}

// judgeCode judges one stored BF16 value or FP8 code, of value v, of
// token token: accepted when finite (nonFinite false) and within [lo,
// hi], the roundings to g's grid of x ∓ e (x the exact value, e its
// bound). dist is its distance from want's element in ULPs or codes
// (negative where none is defined, counted as distCap) for max_ulp and
// max_code_distance; the verdict, its ratio scored on g (scoreRound), is
// recorded with mk building the report entry.
func (t *tally) judgeCode(token int, v, x, e, lo, hi float64, nonFinite bool, dist, distCap int, g rounding, mk func() difftest.Element) {
	failed := nonFinite || v < lo || v > hi
	if dist > t.maxDist {
		t.maxDist = dist
	} else if dist < 0 {
		t.maxDist = max(t.maxDist, distCap)
	}
	t.record(token, failed, nonFinite, t.scoreRound(v, x, e, failed, g), mk)
}

func checkBF16(p Params, t, slot int, tb *tokenBound, got, want []byte, tl *tally) {
	at, _ := slotBytes(p, slot)
	for k := 0; k < Dim; k++ {
		if tl.settled() {
			return
		}
		g := binary.LittleEndian.Uint16(got[at+2*k:])
		w := binary.LittleEndian.Uint16(want[at+2*k:])
		z, e := tb.z[k], tb.e[k]
		lo := numeric.BF16ToF64(numeric.BF16FromF64(z - e))
		hi := numeric.BF16ToF64(numeric.BF16FromF64(z + e))
		v := numeric.BF16ToF64(g)
		nonFinite := math.IsNaN(v) || math.IsInf(v, 0)
		tl.judgeCode(t, v, z, e, lo, hi, nonFinite, numeric.BF16ULPDistance(g, w), 1<<16, bf16Rounding, func() difftest.Element {
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
		if tl.settled() {
			return
		}
		g, w := got[codesAt+k], want[codesAt+k]
		q := tb.z[k] / s
		eq := tb.e[k]/s*(1+2*u) + 4*u*math.Abs(q)
		lo := float64(numeric.E4M3ToF32(numeric.E4M3FromF64(q - eq)))
		hi := float64(numeric.E4M3ToF32(numeric.E4M3FromF64(q + eq)))
		v := float64(numeric.E4M3ToF32(g))
		tl.judgeCode(t, v, q, eq, lo, hi, math.IsNaN(v), numeric.E4M3CodeDistance(g, w), 256, e4m3Rounding, func() difftest.Element {
			return difftest.Element{
				Tensor: NameCache,
				Index:  fmt.Sprintf("token %d slot %d dim %d", t, slot, k),
				Got:    fmt.Sprintf("0x%02x (%g)", g, v),
				Want:   fmt.Sprintf("0x%02x (%g; exact z/scale %.9g ± %.3g, accepted [%g, %g])", w, numeric.E4M3ToF32(w), q, eq, lo, hi),
			}
		})
	}
}

// checkFP4 compares one token's FP4 slot (fp4.go) block by block. With
// z_k exact and E_k its f32 bound, a block's stage-1 scale s₁ may be any
// ue8m0 ceiling of a value in [max(|z| − E), max(|z| + E)]/6 (widened by
// 4u: the f32 product by 1/6): the reference's, or its neighbour where
// a₁/6 lies within the bound of a power of two. Under each such s₁ every
// value's stage-1 code may be any e2m1 grid point between the roundings
// of (z_k ∓ E_k)/s₁: the reference's, or a neighbour where z_k/s₁ lies
// within E_k/s₁ of a midpoint between codes. The stage-2 scales
// admitted are those of the block maxima |g| those intervals allow
// (stage 2 is exact on stage-1 values: a₂ = |g|·s₁ and a₂/6 are exact).
// The stored scale must be one of them (a mismatch otherwise, judged
// against the reference's); the stored codes are then judged under the
// scale actually stored, s₂: code c_k is accepted when it is the packing
// e2m1(g·s₁/s₂) (a zero as +0, code 0x0; 0x8 fails) of some admitted g with |g|·s₁ ≤ 6·s₂. Of the
// s₁ that admit the stored scale, the one admitting the most codes
// judges them.
//
// Ratios: the scale 0 when it equals the reference's, 1 for an accepted
// neighbour, ratioCap when rejected; a code 0 when it is the packing of
// the rounding of the exact value under (s₁, s₂), else the share of
// E_k/s₁ that value needs to reach the stage-1 midpoint (roundRatio), or
// 1 (accepted) / ratioCap (rejected) where the code is not on the stage-1
// grid (the amax floor's double rounding); a rejected code is never given
// a ratio that prints as the bound (a −0 where +0 is the rule: ratioCap).
func checkFP4(p Params, t, slot int, tb *tokenBound, got, want []byte, tl *tally) {
	codesAt, scaleAt := slotBytes(p, slot)
	nib := func(buf []byte, k int) uint8 {
		v := buf[codesAt+k/2]
		if k%2 == 0 {
			return v & 0xF
		}
		return v >> 4
	}
	for b := 0; b < fp4Blocks; b++ {
		if tl.settled() {
			return
		}
		lo := b * FP4Block
		z, e := tb.z[lo:lo+FP4Block], tb.e[lo:lo+FP4Block]
		cands := fp4Candidates(z, e)
		a1 := 0.0
		for _, v := range z {
			a1 = math.Max(a1, math.Abs(v))
		}
		s1Ref := fp4Stage1Scale(a1)
		a2 := 0.0
		for _, v := range z {
			a2 = math.Max(a2, math.Abs(numeric.E2M1Round(v/s1Ref)*s1Ref))
		}
		sRef := fp4Stage2Scale(a2)
		gs, ws := got[scaleAt+b], want[scaleAt+b]
		sGot := numeric.UE8M0ToF64(gs)
		best, bestN := -1, -1
		for i := range cands {
			if !cands[i].hasS2(sGot) {
				continue
			}
			n := 0
			for k := 0; k < FP4Block; k++ {
				if cands[i].codeOK(k, nib(got, lo+k), sGot) {
					n++
				}
			}
			if n > bestN || (n == bestN && cands[i].s1 == s1Ref) {
				best, bestN = i, n
			}
		}
		scaleOK := best >= 0
		s2 := sGot
		if !scaleOK {
			tl.scaleMismatch++
			s2 = sRef
			for i := range cands {
				if cands[i].s1 == s1Ref {
					best = i
				}
			}
		}
		sRatio := 0.0
		switch {
		case !scaleOK:
			sRatio = ratioCap
		case sGot != sRef:
			sRatio = 1
			tl.offNearest++
		}
		tl.record(t, !scaleOK, math.IsNaN(sGot), sRatio, func() difftest.Element {
			return difftest.Element{
				Tensor: NameCache,
				Index:  fmt.Sprintf("token %d slot %d scale %d", t, slot, b),
				Got:    fmt.Sprintf("0x%02x (%g)", gs, sGot),
				Want:   fmt.Sprintf("0x%02x (%g; block amax %.9g, stage-1 scale %g)", ws, numeric.UE8M0ToF64(ws), a1, s1Ref),
			}
		})
		blk := &cands[best]
		for k := 0; k < FP4Block; k++ {
			c, w := nib(got, lo+k), nib(want, lo+k)
			ok := blk.codeOK(k, c, s2)
			x, ex := z[k]/blk.s1, e[k]/blk.s1
			near := fp4Code(numeric.E2M1Round(x)*blk.s1/s2) == c
			v := numeric.E2M1ToF64(c) * s2 / blk.s1
			onGrid := !math.IsNaN(e2m1Up(v)) && v == numeric.E2M1Round(v)
			var ratio float64
			switch {
			case ok && near:
			case onGrid:
				ratio = tl.scoreRound(v, x, ex, !ok, e2m1Rounding)
			case ok:
				ratio = 1
				tl.offNearest++
			default:
				ratio = ratioCap
			}
			if !ok && c == 0x8 {
				// −0 where the rule stores +0: its value explains the
				// exact one (scoreRound gives 1 + 1 ULP, printed "1"),
				// but the sign rule rejects it outright.
				ratio = ratioCap
			}
			if d := numeric.E2M1CodeDistance(c, w); d > tl.maxDist {
				tl.maxDist = d
			}
			tl.record(t, !ok, false, ratio, func() difftest.Element {
				return difftest.Element{
					Tensor: NameCache,
					Index:  fmt.Sprintf("token %d slot %d dim %d", t, slot, lo+k),
					Got:    fp4GotString(c, s2),
					Want:   fmt.Sprintf("0x%x (%g; exact z/s1 %.9g ± %.3g, s1 %g)", w, numeric.E2M1ToF64(w), x, ex, blk.s1),
				}
			})
		}
	}
}

// fp4GotString formats a stored e2m1 code for a worst element, "0x3
// (1.5 × scale 0.25)", saying of 0x8 that a zero is stored as 0x0.
func fp4GotString(c uint8, s2 float64) string {
	if c == 0x8 {
		return fmt.Sprintf("0x8 (-0 × scale %g: a zero is stored as 0x0, never -0)", s2)
	}
	return fmt.Sprintf("0x%x (%g × scale %g)", c, numeric.E2M1ToF64(c), s2)
}
