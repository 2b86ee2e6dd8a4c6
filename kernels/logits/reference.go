// The Go reference of indexer_logits (docs/contracts/indexer_logits.md): per position, in
// f64 from the exact decoded values, rounded once to the f32 output.

package logits

import (
	"math"
	"runtime"
	"sync"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// rowCtx holds one row's queries and weights as exact f64 values.
type rowCtx struct {
	q [][Dim]float64 // [H]
	w []float64      // [H]
}

func (in *inputs) row(b int) *rowCtx {
	H := in.p.Heads
	rc := &rowCtx{q: make([][Dim]float64, H), w: make([]float64, H)}
	for h := 0; h < H; h++ {
		in.query(b, h, &rc.q[h])
		rc.w[h] = float64(in.w.F32(b*H + h))
	}
	return rc
}

// scratch is per-goroutine working space of evalPos.
type scratch struct {
	k            [Dim]float64
	d, a, r, e   []float64
	forBoundOnly bool
}

func newScratch(H int) *scratch {
	return &scratch{d: make([]float64, H), a: make([]float64, H), r: make([]float64, H), e: make([]float64, H)}
}

// posEval is the analysis of one position s < L_b.
type posEval struct {
	slot  int64
	logit float64 // exact: s·Σ_h w_h·max(Σ_d q_hd·k_d, 0), f64
	e     float64 // |logit_f32 − logit| ≤ e for every legitimate f32 kernel (bound.go)
	dc    string  // non-empty: the position is "don't care", and why
}

// eval computes position s of row b: the exact logit and, with bound, its
// error bound. Products and sums are rounded explicitly to f64 (no fused
// multiply-add may change the result on any host).
func (in *inputs) eval(rc *rowCtx, b, s int, sc *scratch, bound bool, pe *posEval) {
	pe.slot = in.slot(b, s)
	scale, dc := in.key(pe.slot, &sc.k)
	pe.dc = dc
	var S float64
	for h := range rc.w {
		q := &rc.q[h]
		var d, a float64
		for i := 0; i < Dim; i++ {
			t := float64(q[i] * sc.k[i])
			d = float64(d + t)
			a = float64(a + math.Abs(t))
		}
		r := math.Max(d, 0)
		if math.IsNaN(d) {
			r = d
		}
		sc.d[h], sc.a[h], sc.r[h] = d, a, r
		S = float64(S + float64(rc.w[h]*r))
	}
	pe.logit = float64(scale * S)
	if !bound || pe.dc != "" {
		return
	}
	defer func() {
		if in.p.BF16Out() && pe.dc == "" {
			pe.e = bf16Bound(pe.e, pe.logit)
		}
	}()
	ua := accumUnit(in.p.AccumBits)
	for h := range rc.w {
		sc.e[h] = dotBound(sc.a[h], ua)
	}
	as := math.Abs(scale)
	if overflows(sc.a, rc.w, sc.r, sc.e, as) {
		pe.dc = "an f32 evaluation may overflow"
		return
	}
	pe.e = headSum(rc.w, sc.r, sc.e, pe.logit, as)
}

// Compute runs the reference on a case into logits (the f32 or bf16 [B·next_n,
// stride] output, pre-filled with the canary): for every query row i
// (request b = i / next_n) and s < L_i, logits[i][s] =
// f32(scale(slot)·Σ_h w_ih·ReLU(Σ_d q_ihd·k(slot)_d)) (bf16(·) for bf16
// logits), the f64 value rounded once to nearest even (a NaN key gives
// NaN, an overflow ±inf: such positions are don't care); for s ≥ L_i,
// −inf when clean, and nothing written otherwise (the contract leaves
// them unspecified). It returns the case's *InputError if the case breaks
// the contract. Rows and chunks of 4096 positions run in parallel.
func Compute(c *difftest.Case, logits *difftest.Tensor) error {
	in, err := load(c)
	if err != nil {
		return err
	}
	if err := checkLogits(in.p, logits); err != nil {
		return err
	}
	in.forChunks(func(b, lo, hi int, rc *rowCtx, sc *scratch) {
		L := int(in.lens.I32(b))
		var pe posEval
		for s := lo; s < hi; s++ {
			i := b*in.p.Stride + s
			switch {
			case s < L:
				in.eval(rc, b, s, sc, false, &pe)
				setLogit(in.p, logits, i, pe.logit)
			case in.p.Clean:
				setNegInf(in.p, logits, i)
			}
		}
	})
	return nil
}

// setLogit stores x rounded once to nearest even to the output precision.
func setLogit(p Params, t *difftest.Tensor, i int, x float64) {
	if p.BF16Out() {
		t.SetU16(i, numeric.BF16FromF64(x))
		return
	}
	t.SetF32(i, float32(x))
}

// setNegInf stores −inf (f32 0xFF800000, bf16 0xFF80).
func setNegInf(p Params, t *difftest.Tensor, i int) {
	if p.BF16Out() {
		t.SetU16(i, uint16(negInfBits(p)))
		return
	}
	t.SetU32(i, negInfBits(p))
}

// getLogit returns element i of the output as f64 and its bits.
func getLogit(p Params, t *difftest.Tensor, i int) (float64, uint32) {
	if p.BF16Out() {
		b := t.U16(i)
		return numeric.BF16ToF64(b), uint32(b)
	}
	return float64(t.F32(i)), t.U32(i)
}

// negInfBits returns the bits of −inf in the output precision (as
// getLogit returns them): f32 0xFF800000, bf16 0xFF80.
func negInfBits(p Params) uint32 {
	if p.BF16Out() {
		return 0xFF80
	}
	return 0xFF800000
}

// isNegInfBits reports whether bits (from getLogit) are −inf.
func isNegInfBits(p Params, bits uint32) bool { return bits == negInfBits(p) }

// elemBytes returns the bytes of one logit: 4, or 2 for bf16.
func (p Params) elemBytes() int {
	if p.BF16Out() {
		return 2
	}
	return 4
}

// checkLogits verifies an output buffer against the configuration.
func checkLogits(p Params, t *difftest.Tensor) error {
	if t == nil {
		return difftest.Inputf(NameLogits, nil, "no output tensor")
	}
	if want := p.elemBytes() * p.Rows() * p.Stride; len(t.Data) != want {
		return difftest.Inputf(NameLogits, nil, "holds %d bytes, batch·next_n·stride·%d = %d", len(t.Data), p.elemBytes(), want)
	}
	return nil
}

// chunk is the number of positions one work item covers.
const chunk = 4096

// forChunks calls f for every query row b (of B·next_n) and position range [lo, hi) covering
// [0, stride), in parallel over GOMAXPROCS goroutines; each goroutine gets
// its own scratch, and each row's queries are decoded once per goroutine.
func (in *inputs) forChunks(f func(b, lo, hi int, rc *rowCtx, sc *scratch)) {
	type item struct{ b, lo, hi int }
	var items []item
	for b := 0; b < in.p.Rows(); b++ {
		for lo := 0; lo < in.p.Stride; lo += chunk {
			items = append(items, item{b, lo, min(lo+chunk, in.p.Stride)})
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(items))
	next := make(chan item)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := newScratch(in.p.Heads)
			var rc *rowCtx
			rb := -1
			for it := range next {
				if it.b != rb {
					rc, rb = in.row(it.b), it.b
				}
				f(it.b, it.lo, it.hi, rc, sc)
			}
		}()
	}
	for _, it := range items {
		next <- it
	}
	close(next)
	wg.Wait()
}
