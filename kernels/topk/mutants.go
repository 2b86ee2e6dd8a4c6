// The top-k part of the mutant catalog (docs/mutants.md): thirteen Go
// implementations of topk_transform, each exact except for one fault
// modelled on how a real radix-select kernel goes wrong.

package topk

import (
	"cmp"
	"math"
	"slices"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// fault selects the one fault of a mutant.
type fault int

const (
	faultCapacity4096 fault = iota + 1
	faultCoarseOnly
	faultTieHole
	faultFltMaxSentinel
	faultNaNGarbage
	faultPastLength
	faultLengthMinusOne
	faultDupOnPlateau
	faultPageRow0
	faultShortRowOrder
	faultPageOffByOne
	faultPageSize64
	faultNoOffset
)

var catalog = []struct {
	name, what string
	f          fault
}{
	{"topk-capacity-4096", "radix select whose threshold-bin candidate buffer holds 4096 entries and silently drops the overflow", faultCapacity4096},
	{"topk-coarse-only", "selects on the fp16-rounded key alone, ties within a coarse value broken by position (no exact refinement)", faultCoarseOnly},
	{"topk-tie-hole", "when ties straddle the K-th value the tied picks are never written: −1 inside the valid range", faultTieHole},
	{"topk-flt-max-sentinel", "pads each row to a 1024-wide tile with −FLT_MAX, so padding beats valid −inf (and −NaN) picks and comes back as −1", faultFltMaxSentinel},
	{"topk-nan-garbage", "a chosen NaN comes back as index INT_MIN (what an x86 float→int conversion of NaN gives)", faultNaNGarbage},
	{"topk-past-length", "rows with L > K select over the whole row stride instead of [0, L)", faultPastLength},
	{"topk-length-minus-one", "uses L − 1 as the row length, ignoring the last valid position", faultLengthMinusOne},
	{"topk-dup-on-plateau", "on a tie plateau straddling the K-th value the last tied pick repeats the one before it", faultDupOnPlateau},
	{"topk-page-row0", "translates every row through page_table row 0", faultPageRow0},
	{"topk-short-row-order", "rows with L ≤ K come back in reverse order", faultShortRowOrder},
	{"topk-page-off-by-one", "translates position i through page_table[b][i/P + 1], the entry after its page's (the next row's first entry past the row's end)", faultPageOffByOne},
	{"topk-page-size-64", "translates with a page size of 64 whatever P is: page_table[b][i/64]·64 + i mod 64", faultPageSize64},
	{"topk-no-offset", "drops the offset within the page: slot = page_table[b][i/P]·P", faultNoOffset},
}

// tileWidth is the padded row tile of the flt-max-sentinel mutant;
// candidateCap the candidate buffer of the capacity mutant.
const (
	tileWidth    = 1024
	candidateCap = 4096
	fltMaxNegKey = 0x00800000 // numeric.Key32(0xFF7FFFFF), the key of −FLT_MAX
)

// Mutants returns the top-k mutants of docs/mutants.md: the thirteen of
// catalog, then the four 16-bit ones of catalog16 (mutants16.go).
// Each validates its case like the reference and returns its errors; its
// outputs are those of Reference except where its fault bites.
func Mutants() []difftest.Mutant {
	ms := make([]difftest.Mutant, len(catalog))
	for i, m := range catalog {
		f := m.f
		ms[i] = difftest.Mutant{Name: m.name, Fault: m.what, Run: func(c *difftest.Case, outs []*difftest.Tensor) error {
			return runMutant(c, outs, f)
		}}
	}
	return append(ms, mutants16()...)
}

// runMutant is the reference's row loop (runRowsSlots) with fault f
// applied, to the selection or to the translation.
func runMutant(c *difftest.Case, outs []*difftest.Tensor, f fault) error {
	slot := (*view).slot
	switch f {
	case faultPageOffByOne:
		slot = (*view).slotNextEntry
	case faultPageSize64:
		slot = (*view).slotPage64
	case faultNoOffset:
		slot = func(v *view, tb, i int) int64 { return v.slot(tb, i) &^ int64(v.p.P-1) }
	}
	return runRowsSlots(c, outs, func(v *view, b int, s *scratch) ([]int32, int) {
		tb := b
		if f == faultPageRow0 {
			tb = 0
		}
		return v.mutantRow(b, f, s), tb
	}, slot)
}

// slotNextEntry is the translation of topk-page-off-by-one: position i
// through the page-table entry after its page's, flat index tb·max_pages
// + i/P + 1 (the next row's first entry past a row's last; −1 past the
// whole table, as the padding a kernel's bounds check would give).
func (v *view) slotNextEntry(tb, i int) int64 {
	at := tb*v.p.MaxPages + i>>v.shift + 1
	if at >= v.table.Len() {
		return -1
	}
	return int64(v.table.I32(at))<<v.shift | int64(i&(v.p.P-1))
}

// slotPage64 is the translation of topk-page-size-64: a kernel written
// for 64-token pages, page_table[tb][i/64]·64 + i mod 64 whatever P is
// (−1 where i/64 is past the row's max_pages entries).
func (v *view) slotPage64(tb, i int) int64 {
	if i>>6 >= v.p.MaxPages {
		return -1
	}
	return int64(v.table.I32(tb*v.p.MaxPages+i>>6))<<6 | int64(i&63)
}

// mutantRow returns the K raw entries of row b under fault f.
func (v *view) mutantRow(b int, f fault, s *scratch) []int32 {
	K, L := v.p.K, v.length(b)
	if f == faultLengthMinusOne {
		L = max(L-1, 0)
	}
	s.idx = grow(s.idx, K)
	pos := s.idx
	for j := range pos {
		pos[j] = -1
	}
	if L <= K {
		for j := 0; j < L; j++ {
			pos[j] = int32(j)
			if f == faultShortRowOrder {
				pos[j] = int32(L - 1 - j)
			}
		}
		if f == faultNaNGarbage {
			v.nanGarbage(b, pos)
		}
		return pos
	}
	n := L
	if f == faultPastLength {
		n = v.p.Stride
	}
	keys := v.keys(b, n, s.keys)
	if f == faultFltMaxSentinel {
		for len(keys)%tileWidth != 0 {
			keys = append(keys, fltMaxNegKey)
		}
	}
	s.keys = keys
	switch f {
	case faultCapacity4096:
		selectCapped(keys, K, pos)
	case faultCoarseOnly:
		selectCoarse(keys, K, pos)
	default:
		kth, above := threshold(keys, K, s)
		ties := K - above
		tied := 0
		for _, x := range keys {
			if x == kth {
				tied++
			}
		}
		straddle := tied > ties
		m, lastTie := 0, int32(-1)
		for i, x := range keys {
			if x > kth || x == kth && ties > 0 {
				if x == kth {
					ties--
					if f == faultTieHole && straddle {
						continue // the tied picks are lost
					}
					if f == faultDupOnPlateau && straddle && ties == 0 && lastTie >= 0 {
						pos[m] = lastTie // the last tied pick repeats the previous one
						m++
						continue
					}
					lastTie = int32(i)
				}
				pos[m] = int32(i)
				m++
			}
		}
	}
	if f == faultFltMaxSentinel {
		for j, i := range pos {
			if int(i) >= L {
				pos[j] = -1
			}
		}
	}
	if f == faultNaNGarbage {
		v.nanGarbage(b, pos)
	}
	return pos
}

// nanGarbage replaces each pick holding a NaN by INT_MIN.
func (v *view) nanGarbage(b int, pos []int32) {
	for j, i := range pos {
		if i >= 0 && v.bits(b, int(i))&0x7FFFFFFF > 0x7F800000 {
			pos[j] = math.MinInt32
		}
	}
}

// coarseKey16 is the fp16 histogram key of a kernel's first pass: the
// key32 order transform applied to the binary16 rounding of the value.
func coarseKey16(key uint32) uint16 {
	h := numeric.F16FromF32(math.Float32frombits(numeric.Key32Bits(key)))
	if h&0x8000 != 0 {
		return ^h
	}
	return h ^ 0x8000
}

// coarseKeys returns the fp16 key of every key.
func coarseKeys(keys []uint32) []uint16 {
	c := make([]uint16, len(keys))
	for i, x := range keys {
		c[i] = coarseKey16(x)
	}
	return c
}

// selectCapped is a two-stage radix select: a 256-bin histogram of the top
// byte of the fp16 key finds the bin holding the K-th value; everything in
// higher bins is taken; the bin's members go to a candidate buffer of
// candidateCap entries (in position order, overflow dropped) and are
// ranked exactly. Unfilled picks stay −1.
func selectCapped(keys []uint32, k int, dst []int32) {
	coarse := coarseKeys(keys)
	var hist [256]int
	for _, c := range coarse {
		hist[c>>8]++
	}
	d, above := 255, 0
	for ; above+hist[d] < k; d-- {
		above += hist[d]
	}
	var cand []int32
	m := 0
	for i, c := range coarse {
		switch bin := int(c >> 8); {
		case bin > d:
			dst[m] = int32(i)
			m++
		case bin == d && len(cand) < candidateCap:
			cand = append(cand, int32(i))
		}
	}
	slices.SortStableFunc(cand, func(a, b int32) int { return cmp.Compare(keys[b], keys[a]) })
	for _, i := range cand[:min(len(cand), k-m)] {
		dst[m] = i
		m++
	}
}

// selectCoarse ranks by the fp16 key alone: a 65536-bin histogram finds
// the fp16 key of the K-th value; every position above it is taken, and
// the first positions holding it fill the rest (ties by position).
func selectCoarse(keys []uint32, k int, dst []int32) {
	coarse := coarseKeys(keys)
	hist := make([]int, 1<<16)
	for _, c := range coarse {
		hist[c]++
	}
	t, above := 1<<16-1, 0
	for ; above+hist[t] < k; t-- {
		above += hist[t]
	}
	ties, m := k-above, 0
	for i, c := range coarse {
		if int(c) > t || int(c) == t && ties > 0 {
			if int(c) == t {
				ties--
			}
			dst[m] = int32(i)
			m++
		}
	}
}
