// The diagnosis of indexer_logits (docs/failures.md): its matching rule
// (a candidate's logits within the derived bound at the candidate's own
// precision) and the coarser precisions an implementation may pass as
// (accum_bits 11, 8, 7), each the contract's own check at that
// accum_bits.

package logits

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

var (
	_ triage.CandidateMatcher = Kernel{}
	_ triage.VariantProvider  = Kernel{}
)

// precisions are the coarser accumulation precisions the diagnosis tries,
// finest first, with what each means.
var precisions = []struct {
	bits int
	doc  string
}{
	{11, "dot products rounded to f16 (11 significand bits)"},
	{8, "dot products rounded to bf16 (8 significand bits), as SGLang's PyTorch logits fallbacks do"},
	{7, "dot products accumulated with about 14 bits per addition over 128 terms (Hopper FP8 tensor-core accumulation)"},
}

// PrecisionVariant returns the name of the precision variant accum_bits
// = bits: "accum_bits=8".
func PrecisionVariant(bits int) string { return fmt.Sprintf("accum_bits=%d", bits) }

// Variants returns the precision variants (triage.Variant.Precision):
// accum_bits=11, =8, =7. Each accepts an implementation whose logits pass
// Check with that accum_bits declared (bound.go) on a case that declares a
// finer one. Each lists the finer ones among its Parts, so the diagnosis
// names only the finest that passes.
func Variants() []triage.Variant {
	var vs []triage.Variant
	var parts []string
	for _, pr := range precisions {
		bits := pr.bits
		parts = append(parts, PrecisionVariant(bits))
		vs = append(vs, triage.Variant{
			Name: PrecisionVariant(bits), Doc: pr.doc, Precision: true,
			Parts: append([]string(nil), parts...),
			Accepts: func(c *difftest.Case, got, want []*difftest.Tensor) bool {
				p, err := paramsOf(c)
				if err != nil || p.AccumBits <= bits {
					return false
				}
				p.AccumBits = bits
				cc := *c
				cc.Params = p
				return passes(&cc, got)
			},
		})
	}
	return vs
}

// Variants returns the precision variants; see Variants.
func (Kernel) Variants() []triage.Variant { return Variants() }

// candidateBits is the accumulation precision of the named candidate on
// a case declaring declared: logits-bf16-dot rounds to bf16 (8 bits), the
// others compute in f32 as the case declares.
func candidateBits(name string, declared int) int {
	if name == "logits-bf16-dot" {
		return min(declared, 8)
	}
	return declared
}

// MatchCandidate reports whether got passes the own check of the named
// candidate, whose logits are cand (triage.CandidateMatcher): for every
// row b and s < L_b, equal bits, both NaN, a don't-care position (a NaN
// key, a non-finite scale, a possible overflow), or |got − cand| ≤ 2E with
// E the derived bound at the candidate's precision (candidateBits): two
// binary32 evaluations of the candidate's formula, each within E of the
// exact value of that formula, in another summation order over dims or
// heads. Past L_b with clean the bits must be equal; without clean they
// are unspecified and not compared.
func (Kernel) MatchCandidate(c *difftest.Case, name string, cand, got []*difftest.Tensor) bool {
	in, err := load(c)
	if err != nil || len(cand) != 1 || len(got) != 1 || checkLogits(in.p, cand[0]) != nil || checkLogits(in.p, got[0]) != nil {
		return false
	}
	in.p.AccumBits = candidateBits(name, in.p.AccumBits)
	x, y := cand[0], got[0]
	var bad atomic.Bool
	in.forChunks(func(b, lo, hi int, rc *rowCtx, sc *scratch) {
		L := int(in.lens.I32(b))
		var pe posEval
		for s := lo; s < hi && !bad.Load(); s++ {
			i := b*in.p.Stride + s
			u, v := x.U32(i), y.U32(i)
			if u == v {
				continue
			}
			if s >= L {
				if in.p.Clean {
					bad.Store(true)
				}
				continue
			}
			fu, fv := float64(x.F32(i)), float64(y.F32(i))
			if math.IsNaN(fu) && math.IsNaN(fv) {
				continue
			}
			in.eval(rc, b, s, sc, true, &pe)
			if pe.dc != "" {
				continue
			}
			if math.IsNaN(fu) || math.IsNaN(fv) || math.IsInf(fu, 0) || math.IsInf(fv, 0) || math.Abs(fu-fv) > 2*pe.e {
				bad.Store(true)
			}
		}
	})
	return !bad.Load()
}

// passes reports whether got passes Check on c, stopping at the first
// position that fails (Check's rules without its metrics): for s < L_b
// not don't care, a finite got within the bound of the exact logit; past
// L_b with clean, −inf exactly.
func passes(c *difftest.Case, got []*difftest.Tensor) bool {
	in, err := load(c)
	if err != nil || len(got) != 1 || checkLogits(in.p, got[0]) != nil {
		return false
	}
	g := got[0]
	var bad atomic.Bool
	in.forChunks(func(b, lo, hi int, rc *rowCtx, sc *scratch) {
		L := int(in.lens.I32(b))
		var pe posEval
		for s := lo; s < hi && !bad.Load(); s++ {
			i := b*in.p.Stride + s
			if s >= L {
				if in.p.Clean && g.U32(i) != 0xFF800000 {
					bad.Store(true)
				}
				continue
			}
			in.eval(rc, b, s, sc, true, &pe)
			if pe.dc != "" {
				continue
			}
			v := float64(g.F32(i))
			if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v-pe.logit) > pe.e {
				bad.Store(true)
			}
		}
	})
	return !bad.Load()
}
