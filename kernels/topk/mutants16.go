// The 16-bit part of the top-k mutant catalog (docs/mutants.md): four
// faults a 16-bit radix select invites. Each is the reference on f32
// scores and differs only in how it ranks bf16 or f16 scores.

package topk

import (
	"math"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// key16Fault is how a 16-bit mutant turns score bits into its key; the
// mutant then ranks exactly by that key, ties by position.
type key16Fault func(dtype string, bits uint16) uint32

var catalog16 = []struct {
	name, what string
	key        key16Fault
}{
	{"topk16-raw-bits", "ranks 16-bit scores by their raw bits as unsigned integers, without the Key16 sign flip (negatives rank above positives and in reverse)",
		func(_ string, b uint16) uint32 { return uint32(b) << 16 }},
	{"topk16-one-pass", "one 8-bit radix pass over the high Key16 digit: the bin holding the K-th key is filled in position order, the low digit never read",
		func(_ string, b uint16) uint32 { return uint32(numeric.Key16(b)&0xFF00) << 16 }},
	{"topk16-raw-low-digit", "the second radix pass takes its digit from the raw bits instead of the key, so ties in the high digit of negative scores are broken in reverse",
		func(_ string, b uint16) uint32 { return uint32(numeric.Key16(b)&0xFF00|b&0xFF) << 16 }},
	{"topk16-f16-bf16-key", "f16 scores ranked by a bf16-precision key (the top half of key32 of the widened value), as a kernel written for bf16 does: f16 values 1–7 ulps apart tie",
		func(dt string, b uint16) uint32 {
			if dt != ScoreF16 {
				return key16Of(dt, b)
			}
			return numeric.Key32(math.Float32bits(numeric.F16ToF32(b))) &^ 0xFFFF
		}},
}

// mutants16 returns the 16-bit mutants, in catalog16 order.
func mutants16() []difftest.Mutant {
	ms := make([]difftest.Mutant, len(catalog16))
	for i, m := range catalog16 {
		key := m.key
		ms[i] = difftest.Mutant{Name: m.name, Fault: m.what, Run: func(c *difftest.Case, outs []*difftest.Tensor) error {
			return runMutant16(c, outs, key)
		}, Applies: scores16Spec}
	}
	return ms
}

// runMutant16 is the reference with the key of 16-bit rows replaced by
// key's: rows with L > K take the K largest mutant keys, ties at the
// K-th by the lowest positions, in position order. f32 cases run the
// reference unchanged.
func runMutant16(c *difftest.Case, outs []*difftest.Tensor, key key16Fault) error {
	keysOf := func(v *view, b, L int, dst []uint32) []uint32 {
		dst = v.keys(b, L, dst)
		if v.p.wide16() {
			base := b * v.p.Stride
			for i := range dst {
				dst[i] = key(v.p.ScoreDType, v.scores.U16(base+i))
			}
		}
		return dst
	}
	return selectRows(c, outs, keysOf, selectRadix)
}

// scores16Spec reports whether spec may be a case of 16-bit scores (the
// only cases a topk16-* mutant differs from the reference on): its dtype
// is bf16 or f16, or its parameters do not decode here (the selftest then
// runs the case rather than guess).
func scores16Spec(spec difftest.CaseSpec) bool {
	fam, ok := familyByName(spec.Family)
	if !ok || spec.Family == FamilyLiteral {
		return true
	}
	g, err := decodeConfig(spec, fam)
	return err != nil || g.ScoreDType != ""
}
