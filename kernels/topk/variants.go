// Semantic variants of topk_transform for the diagnosis of docs/failures.md:
// implementations that are not the contract's key32 order but are what
// real implementations do, above all the PyTorch fallback of SGLang's
// DeepSeek V4 indexer (topk_transform_512_pytorch_vectorized in
// python/sglang/srt/layers/attention/compressed/indexer.py): it masks
// positions ≥ L with −inf, calls torch.topk, and writes −1 for every pick
// whose score is −inf; rows with L ≤ K get 0 … L−1 then −1, as the
// contract asks. torch.topk compares floats, not key32 bits: NaN ranks
// above every number whatever its sign (and all NaNs tie), −0 == +0, and
// on CUDA the ties at the K-th value are taken in position order.
//
// Each of the three PyTorch behaviours is its own variant, because an
// implementation can have any subset of them (a kernel that compares
// floats has the zero tie but not the NaN order; one that canonicalises
// NaNs has neither); the diagnosis tries every combination and names the
// smallest that reproduces the output. Ties at the K-th value are broken
// by the lowest positions, as the reference does; the same combinations
// with the highest positions are tried too. "Any" tie order cannot be an
// exact-match rule, so it is not a variant: an implementation whose ties
// come out in some other order is not diagnosed on a case with ties at
// the K-th value.

package topk

import (
	"slices"
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// Names of the semantic variants' behaviours. A variant is one of them or
// a combination, named by joining its parts with "+" in this order, except
// the three PyTorch behaviours together, which are VariantTorchTopK.
const (
	// VariantNaNLargest ranks every NaN above +inf whatever its sign, all
	// NaNs tied (torch.topk, torch.sort: "NaN is considered larger than
	// any number").
	VariantNaNLargest = "torch-nan-largest"
	// VariantZeroTie ties −0 with +0 (any selection by float comparison:
	// torch.topk, a kernel that compares with > instead of key32).
	VariantZeroTie = "torch-signed-zero-tie"
	// VariantNegInfMinusOne emits −1 for every pick whose score is −inf
	// (SGLang's topk_transform_512_pytorch_vectorized: valid_topk =
	// gathered_scores != −inf), in page_indices and raw_indices.
	VariantNegInfMinusOne = "torch-neg-inf-minus-one"
	// VariantTiesHighest takes the highest positions among the ties at
	// the K-th value instead of the lowest (a kernel that scans a row
	// backwards). A valid tie rule alone; it is tried only with the others.
	VariantTiesHighest = "ties-highest-position"
	// VariantTorchTopK is the three PyTorch behaviours together: the whole
	// order of SGLang's PyTorch fallback.
	VariantTorchTopK = "torch-topk"
	// VariantMaskedStride selects over the whole row stride with the
	// positions at or past L masked to −inf, as SGLang's
	// topk_transform_pytorch_vectorized does (masked_fill_ then torch.topk
	// over scores.shape[1]): with fewer than K scores above −inf among the
	// first L, the K-th value is −inf and torch.topk may take masked
	// positions ≥ L among the tied −infs; their slots are emitted unless
	// the unmasked score there is −inf. Tried only with VariantTorchTopK.
	VariantMaskedStride = "torch-masked-stride"
)

// order is a set of variant behaviours; the zero value is the contract.
type order struct {
	nanLargest, zeroTie, negInf, tiesHigh, maskedStride bool
}

// orders lists the variants' orders in the order Variants returns them:
// every non-empty combination of nanLargest, zeroTie and negInf with
// ties by the lowest positions, the same with tiesHigh, then torch-topk
// with maskedStride.
func orders() []order {
	var os []order
	for _, high := range []bool{false, true} {
		for m := 1; m < 8; m++ {
			os = append(os, order{nanLargest: m&1 != 0, zeroTie: m&2 != 0, negInf: m&4 != 0, tiesHigh: high})
		}
	}
	return append(os, order{nanLargest: true, zeroTie: true, negInf: true, maskedStride: true})
}

// parts lists the behaviours of o by name, in the order of the constants.
func (o order) parts() []string {
	var ps []string
	for _, p := range []struct {
		on   bool
		name string
	}{{o.nanLargest, VariantNaNLargest}, {o.zeroTie, VariantZeroTie}, {o.negInf, VariantNegInfMinusOne}, {o.tiesHigh, VariantTiesHighest}, {o.maskedStride, VariantMaskedStride}} {
		if p.on {
			ps = append(ps, p.name)
		}
	}
	return ps
}

// name is the variant's name: its parts joined by "+", the three PyTorch
// parts as VariantTorchTopK.
func (o order) name() string {
	if o.nanLargest && o.zeroTie && o.negInf {
		switch {
		case o.tiesHigh:
			return VariantTorchTopK + "+" + VariantTiesHighest
		case o.maskedStride:
			return VariantTorchTopK + "+" + VariantMaskedStride
		}
		return VariantTorchTopK
	}
	return strings.Join(o.parts(), "+")
}

var variantDocs = map[string]string{
	VariantNaNLargest:     "ranks every NaN above +inf whatever its sign, all NaNs tied, as torch.topk does",
	VariantZeroTie:        "ties −0 with +0, as torch.topk and any selection by float comparison do",
	VariantNegInfMinusOne: "emits −1 for picks whose score is −inf, as SGLang's PyTorch topk_transform fallback does",
	VariantTiesHighest:    "breaks ties at the K-th value by the highest positions",
	VariantMaskedStride:   "selects over the whole row stride with positions ≥ L masked to −inf, so with fewer than K scores above −inf it takes tied −inf positions at or past L and emits their slots (torch.topk's choice among the tied −infs)",
}

// doc describes o in one line.
func (o order) doc() string {
	if o.nanLargest && o.zeroTie && o.negInf {
		d := "torch.topk's order as SGLang's PyTorch topk_transform fallback uses it: NaN largest whatever its sign, −0 tied with +0, −inf picks emitted as −1"
		if o.tiesHigh {
			d += "; " + variantDocs[VariantTiesHighest]
		}
		if o.maskedStride {
			d += "; " + variantDocs[VariantMaskedStride]
		}
		return d
	}
	var ds []string
	for _, p := range o.parts() {
		ds = append(ds, variantDocs[p])
	}
	return strings.Join(ds, "; ")
}

// Variants returns the semantic variants of topk_transform: every
// non-empty combination of VariantNaNLargest, VariantZeroTie and
// VariantNegInfMinusOne, with ties by the lowest positions and then the
// same combinations with VariantTiesHighest (14; the tie rule alone
// is valid and not a variant), VariantTorchTopK with
// VariantMaskedStride, then VariantNaNNeverSelected
// (variants16.go). Each validates its case like the reference
// and returns its errors; rows with L ≤ K come out as the contract's
// 0 … L−1, −1 … (SGLang's fallback special-cases them so).
func Variants() []triage.Variant {
	var vs []triage.Variant
	for _, o := range orders() {
		vs = append(vs, triage.Variant{
			Name: o.name(), Doc: o.doc(), Parts: o.parts(),
			Run: func(c *difftest.Case, outs []*difftest.Tensor) error { return runOrder(c, outs, o) },
		})
	}
	return append(vs, variants16()...)
}

// Variants returns the semantic variants (triage.VariantProvider); see
// Variants.
func (Kernel) Variants() []triage.Variant { return Variants() }

var (
	_ triage.VariantProvider = Kernel{}
	_ triage.Matcher         = Kernel{}
)

// Key32 values the variants remap.
const (
	keyNegZero = 0x7FFFFFFF // Key32(0x80000000), −0
	keyPosZero = 0x80000000 // Key32(0x00000000), +0
	keyTop     = 0xFFFFFFFF // above every key32 of a non-NaN value
	negInfBits = 0xFF800000
	keyNegInf  = 0x007FFFFF // Key32(negInfBits)
)

// runOrder is the reference's row loop with the order o: for L > K, keys
// remapped (NaN → keyTop, −0 → +0; with maskedStride the row runs to the
// stride and positions ≥ L are −inf), the top K by radix select with ties
// by the lowest (or highest) positions, then picks whose score (unmasked)
// is −inf replaced by −1.
func runOrder(c *difftest.Case, outs []*difftest.Tensor, o order) error {
	return runRows(c, outs, func(v *view, b int, s *scratch) ([]int32, int) {
		K, L := v.p.K, v.length(b)
		s.idx = grow(s.idx, K)
		pos := s.idx
		if L <= K {
			for j := range pos {
				pos[j] = -1
				if j < L {
					pos[j] = int32(j)
				}
			}
			return pos, b
		}
		n := L
		if o.maskedStride {
			n = v.p.Stride
		}
		keys := v.keys(b, n, s.keys)
		s.keys = keys
		for i := L; i < n; i++ {
			keys[i] = keyNegInf // masked_fill_(~valid_mask, −inf)
		}
		for i, x := range keys[:L] {
			switch {
			case o.nanLargest && (x > 0xFF800000 || x < 0x007FFFFF):
				keys[i] = keyTop // key32 of ±NaN: above +inf's 0xFF800000, below −inf's 0x007FFFFF
			case o.zeroTie && x == keyNegZero:
				keys[i] = keyPosZero
			}
		}
		if o.tiesHigh {
			selectHigh(keys, K, pos, s)
		} else {
			selectRadix(keys, K, pos, s)
		}
		if o.negInf {
			for j, i := range pos {
				if v.bits(b, int(i)) == negInfBits {
					pos[j] = -1
				}
			}
		}
		return pos, b
	})
}

// selectHigh is selectRadix with the ties at the k-th key taken from the
// highest positions; the picks come out in ascending position order.
func selectHigh(keys []uint32, k int, dst []int32, s *scratch) {
	kth, above := threshold(keys, k, s)
	ties := k - above
	n := k
	for i := len(keys) - 1; i >= 0; i-- {
		if x := keys[i]; x > kth || x == kth && ties > 0 {
			if x == kth {
				ties--
			}
			n--
			dst[n] = int32(i)
		}
	}
}

// Match reports whether two implementations' outputs are the same result
// for the diagnosis (triage.Matcher): per output and per row, for
// L ≤ K (where the contract fixes the order) the same entries in the same
// places, for L > K (order unspecified) the same multiset of entries,
// −1s, repeats and out-of-range garbage included. Outputs of the wrong
// size do not match.
func (Kernel) Match(c *difftest.Case, a, b []*difftest.Tensor) bool {
	p, err := paramsOf(c)
	if err != nil || len(a) != len(b) {
		return false
	}
	lens := c.Input(TensorSeqLens)
	if lens == nil || lens.Len() != p.Batch {
		return false
	}
	K := p.K
	x, y := make([]int32, K), make([]int32, K)
	for t := range a {
		if len(a[t].Data) != 4*p.Batch*K || len(b[t].Data) != 4*p.Batch*K {
			return false
		}
		for r := 0; r < p.Batch; r++ {
			for j := 0; j < K; j++ {
				x[j], y[j] = a[t].I32(r*K+j), b[t].I32(r*K+j)
			}
			if int(lens.I32(r)) > K {
				slices.Sort(x)
				slices.Sort(y)
			}
			if firstDiff(x, y) >= 0 {
				return false
			}
		}
	}
	return true
}
