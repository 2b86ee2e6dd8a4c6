// Input families of indexer_logits (docs/contracts/indexer_logits.md, "Input families").
// Every family writes its keys through the norm_rope_store reference
// (case.go); a family may draw the tokens itself, derive the row lengths,
// or change slots and queries after the keys are written.

package logits

import (
	"encoding/binary"
	"maps"
	"math"
	"slices"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/kernels/normrope"
)

// family is one input family.
type family struct {
	doc string
	// params reads the family's own suite params (before the common ones).
	params func(pr *difftest.Params, g *gen)
	// lengths, when set, derives the row lengths (the suite gives none);
	// it may not draw (CheckSpec runs it without a key).
	lengths func(g *gen) ([]int, error)
	// check rejects family params some row cannot honour.
	check func(g *gen) error
	// tokens, when set, replaces the x (and norm weights) of the
	// norm_rope_store sub-case of key chunk ci before its keys are stored.
	tokens func(g *gen, nc *difftest.Case, ci int)
	// query, when set, draws one query head's 128 values from st in place
	// of N(0,1) (drawQuery quantises them).
	query func(g *gen, st *rng.Stream, v *[Dim]float64)
	// post changes cache slots after the keys are written.
	post func(g *gen, cache *difftest.Tensor)
}

var families = map[string]family{
	"gaussian": {doc: "keys of N(0, σ²) bf16 tokens (σ = 2^k per token) through norm_rope_store v4 / v4-bf16, so every slot has its own scale; " +
		"queries and weights N(0,1), weights of both signs and about 1 in 8 zero"},
	"page-counts": {
		doc: "one row per page count on both sides of the powers of two (2^k − 1, 2^k, 2^k + 1 up to counts' largest): grid and tile boundaries; " +
			"even rows fill their last page, odd rows end half-way into it",
		params:  func(pr *difftest.Params, g *gen) { g.counts = pr.Ints("counts", nil) },
		lengths: pageCountLengths,
	},
	"negative": {
		doc: "every head's dot product negative for every key (the tokens share one direction in the unrotated dims [0, 64), the queries point against it): " +
			"every logit is exactly 0, a plateau for the top-k",
		tokens: negativeTokens,
		query:  negativeQuery,
	},
	"nan-keys": {
		doc: "gaussian, and about 1 slot in `special` (default 8) altered: FP8 a NaN code, a NaN or +inf scale (don't care), or a zero scale (logit 0); " +
			"BF16 a NaN, +inf or −inf value (don't care), or an all-zero key (logit 0); FP4 a scale byte 0xFF (NaN) or 254 under a code of 6 (beyond f32; don't care), " +
			"a scale byte 0 (subnormal values) or an all-zero key. Don't-care positions must not change any other",
		params: func(pr *difftest.Params, g *gen) { g.special = pr.Int("special", 8) },
		check: func(g *gen) error {
			if g.special < 1 {
				return badParam("special", "must be ≥ 1 (1 in special slots altered), got %d", g.special)
			}
			return nil
		},
		post: nanKeys,
	},
}

// Families returns the input family names, sorted: gaussian, nan-keys,
// negative, page-counts. FamilyDoc describes each.
func Families() []string { return slices.Sorted(maps.Keys(families)) }

// FamilyDoc returns a one-line description of an input family, or "" for
// an unknown name.
func FamilyDoc(name string) string { return families[name].doc }

// defaultCounts are the page counts of page-counts: 2^k − 1, 2^k, 2^k + 1
// for k in [0, 8] (1 to 257 pages), without repeats.
func defaultCounts() []int {
	var out []int
	for k := 0; k <= 8; k++ {
		for _, c := range []int{1<<k - 1, 1 << k, 1<<k + 1} {
			if c >= 1 && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// pageCountLengths derives page-counts' lengths: row i has counts[i]
// pages, full for even i, its last page half full (P/2 keys short) for
// odd i (P ≥ 2).
func pageCountLengths(g *gen) ([]int, error) {
	counts := g.counts
	if counts == nil {
		counts = defaultCounts()
	}
	if len(counts) == 0 {
		return nil, badParam("counts", "at least one page count")
	}
	var lens []int
	for i, c := range counts {
		if c < 1 || c > MaxSeqLen/g.PageSize {
			return nil, badParam("counts", "element %d must be in [1, %d] pages, got %d", i, MaxSeqLen/g.PageSize, c)
		}
		lens = append(lens, c*g.PageSize-(i%2)*(g.PageSize/2))
	}
	return lens, nil
}

// negDir is the direction the negative family's tokens share: 1/8 in each
// of the dims [0, 64) that the v4 RoPE leaves alone (rope_offset 64), 0
// elsewhere (unit length).
func negDir() [Dim]float64 {
	var u [Dim]float64
	for i := 0; i < 64; i++ {
		u[i] = 1.0 / 8
	}
	return u
}

// negativeTokens makes every token negDir + 0.02·N(0,1) per dim with norm
// weight 1: after RMSNorm and the Hadamard transform each key is √128·H(u)
// up to 2% noise, and H(u)/√128 is the direction the queries oppose.
func negativeTokens(g *gen, nc *difftest.Case, ci int) {
	x := nc.Input(normrope.NameX)
	w := nc.Input(normrope.NameWeight)
	for i := 0; i < Dim; i++ {
		w.SetF32(i, 1)
	}
	u := negDir()
	n, stride := x.Shape[0], x.Shape[1]
	st := rng.NewStream(g.key, streamTokens, uint64(ci)<<32)
	for t := 0; t < n; t++ {
		for i := 0; i < Dim; i++ {
			x.SetU16(t*stride+i, numeric.BF16FromF64(u[i]+0.02*st.Normal()))
		}
	}
}

// negativeQuery draws a query head −(1 + |N(0,1)|)·Ĥu + 0.01·N(0,1) per
// dim, Ĥu the normalised Hadamard transform of negDir.
func negativeQuery(_ *gen, st *rng.Stream, v *[Dim]float64) {
	u := negDir()
	c := 1 + math.Abs(st.Normal())
	for k := range v {
		hu := 0.0
		for j, x := range u {
			if parity(j & k) {
				x = -x
			}
			hu += x
		}
		v[k] = -c*hu/math.Sqrt(Dim) + 0.01*st.Normal()
	}
}

// parity reports whether v has an odd number of one bits.
func parity(v int) bool {
	v ^= v >> 4
	v ^= v >> 2
	v ^= v >> 1
	return v&1 == 1
}

// nanKeys alters about 1 in g.special used slots (see the family's doc),
// each slot's kind drawn from the plan stream.
func nanKeys(g *gen, cache *difftest.Tensor) {
	st := rng.NewStream(g.key, streamPlan, 0)
	P := g.PageSize
	p := g.Params
	for u := range g.compact {
		for o := 0; o < P; o++ {
			if st.Intn(g.special) != 0 {
				continue
			}
			slot := int64(g.physical[u])*int64(P) + int64(o)
			at, scaleAt := slotBytes(p, slot)
			kind, dim := st.Intn(4), st.Intn(Dim)
			if p.Store == StoreFP4 {
				blk := int64(dim / FP4Block)
				switch kind {
				case 0: // a NaN scale byte: don't care
					cache.Data[scaleAt+blk] = 0xFF
				case 1: // the largest scale under a code of 6: 6·2^127, beyond f32: don't care
					cache.Data[scaleAt+blk] = 254
					cache.Data[at+int64(dim/2)] |= 0x7 << (4 * (dim & 1))
				case 2: // the smallest scale, 2^-127: subnormal values, finite
					cache.Data[scaleAt+blk] = 0
				case 3: // an all-zero key: logit 0
					for d := int64(0); d < FP4CodeBytes; d++ {
						cache.Data[at+d] = 0
					}
				}
				continue
			}
			if p.Store == StoreFP8 {
				switch kind {
				case 0:
					cache.Data[at+int64(dim)] = 0x7F | cache.Data[at+int64(dim)]&0x80
				case 1:
					binary.LittleEndian.PutUint32(cache.Data[scaleAt:], 0x7FC00000)
				case 2:
					binary.LittleEndian.PutUint32(cache.Data[scaleAt:], 0x7F800000)
				case 3:
					binary.LittleEndian.PutUint32(cache.Data[scaleAt:], 0)
				}
				continue
			}
			switch kind {
			case 0, 1, 2:
				bits := [...]uint16{0x7FC0, 0x7F80, 0xFF80}[kind]
				binary.LittleEndian.PutUint16(cache.Data[at+2*int64(dim):], bits)
			case 3:
				for d := int64(0); d < 2*Dim; d++ {
					cache.Data[at+d] = 0
				}
			}
		}
	}
}
