// The logits comparator of docs/contracts/indexer_logits.md: every specified position
// against the exact logit, within the derived bound of bound.go; the
// clean tail exactly −inf.

package logits

import (
	"fmt"
	"math"
	"sync"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// ratioCap stands in for an unbounded tolerance ratio (difftest.RatioCap).
const ratioCap = difftest.RatioCap

// Check compares the logits got with the reference's want. Per query row
// b (of B·next_n, with its own length L_b):
//
//   - s < L_b: with x the exact logit (f64) and E its bound (bound.go),
//     got must be finite and |got − x| ≤ E. E is a worst-case bound on
//     every binary32 evaluation of the contract's formula (any summation
//     order over dims and heads, FMA or not, the scale multiplied at any
//     point) at the case's accum_bits. A non-finite got is class
//     NonFinite, any other rejected value Mismatch. −0 and +0 compare
//     equal (a plateau of zero logits may come back with either sign).
//   - don't care, skipped: a key with a NaN code (FP8) or a non-finite
//     value (BF16), a non-finite scale, or a position whose f32 evaluation
//     may overflow. It must not change any other position, which is
//     checked.
//   - bf16 logits: the bound is E_bf16 of bound.go (the f32 bound plus
//     the bf16 rounding of the result).
//   - s ≥ L_b with clean: exactly −inf (bits 0xFF800000, bf16 0xFF80); anything else is
//     Mismatch ("past the row's length").
//   - s ≥ L_b without clean: unspecified, not checked (the harness checks
//     the guard bands; Kernel.Unspecified exempts these bytes from the
//     canary check).
//
// Tolerance ratio (Element.Ratio, metric max_ratio): |got − x| / E, so a
// passing case's max_ratio is the share of the f32 error budget its worst
// position used (0 for exact equality with the exact value, which a
// finite f32 result rarely is).
//
// Metrics: positions (s < L_b, all rows), checked, dont_care,
// tail_checked (clean −inf positions), mismatches, mismatch_fraction
// (over checked and tail_checked), max_ratio, zero_logits (checked
// positions whose exact logit is 0: the ReLU plateau). Worst lists up to
// 8 elements by ratio. A case with positions none of which is checked
// passes with a warning that only the tail and the guards were compared.
func Check(c *difftest.Case, got, want []*difftest.Tensor) difftest.Result {
	in, err := load(c)
	if err != nil {
		return difftest.Result{Class: difftest.InvalidCase, Message: err.Error()}
	}
	if r, ok := difftest.CheckOneOutput(NameLogits, got, want, func(t *difftest.Tensor) error { return checkLogits(in.p, t) }); !ok {
		return r
	}
	g := got[0]
	var mu sync.Mutex
	total := &tally{}
	in.forChunks(func(b, lo, hi int, rc *rowCtx, sc *scratch) {
		tl := &tally{}
		L := int(in.lens.I32(b))
		var pe posEval
		for s := lo; s < hi; s++ {
			i := b*in.p.Stride + s
			v, bits := getLogit(in.p, g, i)
			if s >= L {
				if !in.p.Clean {
					continue
				}
				tl.tail++
				failed := !isNegInfBits(in.p, bits)
				ratio := 0.0
				if failed {
					ratio = ratioCap
				}
				tl.record(failed, math.IsNaN(v) || !math.IsInf(v, -1) && math.IsInf(v, 0), ratio, func() difftest.Element {
					return difftest.Element{Tensor: NameLogits, Index: fmt.Sprintf("[%d][%d]", b, s),
						Got: fmt.Sprintf("%g (0x%0*x)", v, 2*in.p.elemBytes(), bits), Want: fmt.Sprintf("-inf: past the row's length %d (clean)", L)}
				}, b, s)
				continue
			}
			tl.positions++
			in.eval(rc, b, s, sc, true, &pe)
			if pe.dc != "" {
				tl.dontCare++
				if tl.firstDC == "" {
					tl.firstDC = fmt.Sprintf("row %d position %d: %s", b, s, pe.dc)
				}
				continue
			}
			tl.checked++
			if pe.logit == 0 {
				tl.zeros++
			}
			nonFinite := math.IsNaN(v) || math.IsInf(v, 0)
			d := math.Abs(v - pe.logit)
			failed := nonFinite || d > pe.e
			ratio := ratioCap
			if !nonFinite {
				ratio = d / pe.e
			}
			tl.record(failed, nonFinite, ratio, func() difftest.Element {
				return difftest.Element{Tensor: NameLogits, Index: fmt.Sprintf("[%d][%d]", b, s),
					Got:  fmt.Sprintf("%.9g", v),
					Want: fmt.Sprintf("%.9g (exact %.12g ± %.3g; slot %d)", wantAt(in.p, want[0], i), pe.logit, pe.e, pe.slot)}
			}, b, s)
		}
		mu.Lock()
		total.merge(tl)
		mu.Unlock()
	})
	return total.result()
}

// wantAt returns the reference's logit i.
func wantAt(p Params, t *difftest.Tensor, i int) float64 {
	v, _ := getLogit(p, t, i)
	return v
}

// tally accumulates a comparison: the compared elements (difftest.Tally,
// key (row, position): the checked and the clean tail positions) and the
// positions' own counts.
type tally struct {
	difftest.Tally
	positions, checked, dontCare, tail int
	zeros                              int
	firstDC                            string
}

func (t *tally) merge(o *tally) {
	t.Tally.Merge(&o.Tally)
	t.positions += o.positions
	t.checked += o.checked
	t.dontCare += o.dontCare
	t.tail += o.tail
	t.zeros += o.zeros
	if t.firstDC == "" {
		t.firstDC = o.firstDC
	}
}

// record counts one compared element (difftest.Tally.Record); a failed
// one's ratio is above 1 whatever the bound's share. mk builds its report
// entry, called only when the element enters the worst list.
func (t *tally) record(failed, nonFinite bool, ratio float64, mk func() difftest.Element, b, s int) {
	if failed {
		ratio = math.Max(ratio, math.Nextafter(1, 2))
	}
	t.Record([2]int{b, s}, failed, nonFinite, ratio, mk)
}

func (t *tally) result() difftest.Result {
	m := map[string]any{
		"positions":         t.positions,
		"checked":           t.checked,
		"dont_care":         t.dontCare,
		"tail_checked":      t.tail,
		"mismatches":        t.Mismatches,
		"mismatch_fraction": 0.0,
		"max_ratio":         t.MaxRatio,
		"zero_logits":       t.zeros,
	}
	if t.Elements > 0 {
		m["mismatch_fraction"] = float64(t.Mismatches) / float64(t.Elements)
	}
	r := difftest.Result{Metrics: m, Worst: t.Worst.Elements()}
	if !t.Verdict(&r) && t.positions > 0 && t.checked == 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("no position has a specified value (all %d don't care; %s): only the clean tail and the guards were checked", t.positions, t.firstDC))
	}
	return r
}
