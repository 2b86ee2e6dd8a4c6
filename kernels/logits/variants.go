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
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

var (
	_ triage.CandidateMatcher = Kernel{}
	_ triage.CandidateScreen  = Kernel{}
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
// are unspecified and not compared. Logits are f32 or bf16 as the case
// declares (logits_dtype).
func (Kernel) MatchCandidate(c *difftest.Case, name string, cand, got []*difftest.Tensor) bool {
	in, err := load(c)
	if err != nil || len(cand) != 1 || len(got) != 1 || checkLogits(in.p, cand[0]) != nil || checkLogits(in.p, got[0]) != nil {
		return false
	}
	in.p.AccumBits = candidateBits(name, in.p.AccumBits)
	x, y := cand[0], got[0]
	var bad atomic.Bool
	in.forChunks(func(b, lo, hi int, rc *rowCtx, sc *scratch) {
		var pe posEval
		for s := lo; s < hi && !bad.Load(); s++ {
			i := b*in.p.Stride + s
			fu, u := getLogit(in.p, x, i)
			if !in.candidateAt(rc, sc, &pe, b, s, u, fu, y, i) {
				bad.Store(true)
			}
		}
	})
	return !bad.Load()
}

// candidateAt is MatchCandidate's rule at position s of row b (element i):
// whether got's logit there passes the candidate's own check, the
// candidate's logit being fu with bits u. rc and sc are row b's context
// and a scratch (forChunks); pe is working space.
func (in *inputs) candidateAt(rc *rowCtx, sc *scratch, pe *posEval, b, s int, u uint32, fu float64, got *difftest.Tensor, i int) bool {
	fv, v := getLogit(in.p, got, i)
	if u == v {
		return true
	}
	if s >= int(in.lens.I32(b)) {
		return !in.p.Clean
	}
	if math.IsNaN(fu) && math.IsNaN(fv) {
		return true
	}
	in.eval(rc, b, s, sc, true, pe)
	if pe.dc != "" {
		return true
	}
	return !(math.IsNaN(fu) || math.IsNaN(fv) || math.IsInf(fu, 0) || math.IsInf(fv, 0) || math.Abs(fu-fv) > 2*pe.e)
}

// screenSamples is how many positions ScreenCandidate computes at most.
const screenSamples = 4096

// ScreenCandidate reports whether got cannot match the catalog mutant
// named name (triage.CandidateScreen): at up to screenSamples positions
// spread evenly over the output (element j·total/screenSamples, row by
// row), it computes the mutant's element as its Run would write it (the
// poison PoisonA where it writes nothing) and applies MatchCandidate's
// rule; the first position that breaks it rejects the mutant without
// running it on the whole case. A mutant that every sampled position
// admits, and a name that is not a mutant of this kernel, are not
// rejected (the diagnosis then runs them in full).
func (Kernel) ScreenCandidate(c *difftest.Case, name string, got []*difftest.Tensor) bool {
	in, err := load(c)
	if err != nil || len(got) != 1 || checkLogits(in.p, got[0]) != nil || !isMutant(name) {
		return false
	}
	s := cudaOrder
	s.fault = name
	in.p.AccumBits = candidateBits(name, in.p.AccumBits)
	poison := uint32(difftest.PoisonA) * 0x01010101
	if in.p.BF16Out() {
		poison &= 0xFFFF
	}
	total := in.p.Rows() * in.p.Stride
	n := min(total, screenSamples)
	sc := newScratch(in.p.Heads)
	var pe posEval
	var rc *rowCtx
	var rw *simRow
	rb := -1
	for j := 0; j < n; j++ {
		i := int(int64(j) * int64(total) / int64(n))
		b, pos := i/in.p.Stride, i%in.p.Stride
		if b != rb {
			rc, rw, rb = in.row(b), s.row(in, b), b
		}
		u := poison
		switch kind, x := s.at(in, rw, b, pos); kind {
		case elemLogit:
			u = s.bits(in.p, x)
		case elemNegInf:
			u = negInfBits(in.p)
		}
		fu := float64(math.Float32frombits(u))
		if in.p.BF16Out() {
			fu = numeric.BF16ToF64(uint16(u))
		}
		if !in.candidateAt(rc, sc, &pe, b, pos, u, fu, got[0], i) {
			return true
		}
	}
	return false
}

// isMutant reports whether name is one of Mutants or LargeMutants.
func isMutant(name string) bool {
	if name == largeOnly.name {
		return true
	}
	for _, m := range mutantFaults {
		if m.name == name {
			return true
		}
	}
	return false
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
				if _, bits := getLogit(in.p, g, i); in.p.Clean && !isNegInfBits(in.p, bits) {
					bad.Store(true)
				}
				continue
			}
			in.eval(rc, b, s, sc, true, &pe)
			if pe.dc != "" {
				continue
			}
			v, _ := getLogit(in.p, g, i)
			if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v-pe.logit) > pe.e {
				bad.Store(true)
			}
		}
	})
	return !bad.Load()
}
