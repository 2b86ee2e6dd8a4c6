// The NaN rule of SGLang's topk_transform_bf16_small as a semantic
// variant of the diagnosis (docs/contracts/topk_transform.md, "16-bit
// scores"): the contract ranks NaNs by key32/Key16 (+NaN highest), while
// that kernel (sglang 0.5.23, jit/csrc/deepseek_v4/topk_bf16_small.cuh)
// never selects a NaN: "a row with n positive NaNs yields its top (k − n)
// real scores and −1 in the remaining slots (a negative NaN orders below
// −inf and is simply never picked)". Its picks come out unordered, which
// the contract allows already; rows with L ≤ K select every position, NaN
// or not, as the contract does.

package topk

import (
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// VariantNaNNeverSelected never selects a NaN of either sign: a row with
// L > K takes the top min(K, m) of its m non-NaN scores (the contract's
// order otherwise: −0 < +0, ties by the lowest positions) and writes −1
// in the remaining slots of page_indices and raw_indices (SGLang's
// topk_transform_bf16_small).
const VariantNaNNeverSelected = "sglang-nan-never-selected"

// variants16 returns the variants of this file, appended to Variants.
func variants16() []triage.Variant {
	return []triage.Variant{{
		Name:  VariantNaNNeverSelected,
		Doc:   "never selects a NaN of either sign: the top min(K, non-NaN count) real scores, then −1 (SGLang's topk_transform_bf16_small)",
		Parts: []string{VariantNaNNeverSelected},
		Run:   runNaNNeverSelected,
	}}
}

// runNaNNeverSelected is the reference's row loop with NaNs left out of
// the selection of rows with L > K.
func runNaNNeverSelected(c *difftest.Case, outs []*difftest.Tensor) error {
	return runRows(c, outs, func(v *view, b int, s *scratch) ([]int32, int) {
		K, L := v.p.K, v.length(b)
		s.idx = grow(s.idx, K)
		pos := s.idx
		for j := range pos {
			pos[j] = -1
			if L <= K && j < L {
				pos[j] = int32(j)
			}
		}
		if L <= K {
			return pos, b
		}
		keys := v.keys(b, L, s.keys)
		s.keys = keys
		var real []uint32
		var at []int32
		for i, x := range keys {
			if bits := numeric.Key32Bits(x); bits&0x7FFFFFFF > 0x7F800000 {
				continue // NaN: never selected
			}
			real = append(real, x)
			at = append(at, int32(i))
		}
		n := min(K, len(real))
		if n == len(real) {
			copy(pos, at)
			return pos, b
		}
		sel := make([]int32, n)
		var sub scratch
		selectRadix(real, n, sel, &sub)
		for j, i := range sel {
			pos[j] = at[i]
		}
		return pos, b
	})
}
