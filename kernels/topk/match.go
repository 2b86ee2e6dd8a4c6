// The diagnosis's matching rule for topk_transform (docs/failures.md): a
// candidate's selection is an alternative contract, so an implementation
// behaves like it when its output differs from the candidate's only by a
// choice the candidate's own contract leaves free.

package topk

import (
	"slices"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

var _ triage.CandidateMatcher = Kernel{}

// orderOf returns the order of the named variant (Variants), or the
// contract's (the zero order) for a catalog mutant or an unknown name.
func orderOf(name string) order {
	for _, o := range orders() {
		if o.name() == name {
			return o
		}
	}
	return order{}
}

// key is key32 of the f32 bits x under o: every NaN above +inf and all
// NaNs tied (nanLargest), −0 tied with +0 (zeroTie).
func (o order) key(x uint32) uint32 {
	k := numeric.Key32(x)
	switch {
	case o.nanLargest && (k > 0xFF800000 || k < 0x007FFFFF):
		return keyTop
	case o.zeroTie && k == keyNegZero:
		return keyPosZero
	}
	return k
}

// MatchCandidate reports whether got passes the own check of the named
// candidate, whose outputs are cand (triage.CandidateMatcher). Per output
// and row: where L ≤ K (the contract fixes the order) the same entries in
// the same places; where L > K the same multiset of entries except for
// positions tied at the candidate's K-th: every entry in which the two
// differ must be a position of the row in [0, L) (a page index read back
// through the row's used page table), distinct, not chosen by the
// candidate when it is got's, and whose key under the candidate's order
// (orderOf: the variant's, the contract's key32 for a mutant) equals the
// lowest key among the candidate's picks. So torch.topk's choice among
// tied values, which is neither the lowest nor the highest positions,
// matches the torch-topk variant; repeats and out-of-range entries must
// agree exactly. Under an order with maskedStride the row's positions run
// to the stride, those ≥ L keyed as −inf; under an order with negInf a
// K-th key of −inf lets got write −1 for a tied pick (its choice of a
// tied −inf), at most as many −1s as the tied positions whose score is
// −inf; otherwise −1s must agree exactly.
func (Kernel) MatchCandidate(c *difftest.Case, name string, cand, got []*difftest.Tensor) bool {
	v, err := newView(c)
	if err != nil {
		return false
	}
	o := orderOf(name)
	K := v.p.K
	if len(cand) != len(got) {
		return false
	}
	x, y := make([]int32, K), make([]int32, K)
	for t := range cand {
		if len(cand[t].Data) != 4*v.p.Batch*K || len(got[t].Data) != 4*v.p.Batch*K {
			return false
		}
		isPage := t == 0
		for r := 0; r < v.p.Batch; r++ {
			for j := 0; j < K; j++ {
				x[j], y[j] = cand[t].I32(r*K+j), got[t].I32(r*K+j)
			}
			if v.length(r) <= K {
				if firstDiff(x, y) >= 0 {
					return false
				}
				continue
			}
			if !v.tiedOnly(r, o, isPage, x, y) {
				return false
			}
		}
	}
	return true
}

// tiedOnly compares row b's entries x (the candidate's) and y (got's) as
// multisets up to positions tied at the candidate's K-th key under o (see
// MatchCandidate). isPage says the entries are slots, read back through
// the row's used page table; otherwise they are positions. x and y are
// sorted in place.
func (v *view) tiedOnly(b int, o order, isPage bool, x, y []int32) bool {
	slices.Sort(x)
	slices.Sort(y)
	if firstDiff(x, y) < 0 {
		return true
	}
	L := v.length(b)
	n := L // positions the candidate selects among
	if o.maskedStride {
		n = v.p.Stride
	}
	var inv, mult map[int64]int
	pos := func(e int32) int {
		if !isPage {
			if e < 0 || int(e) >= n {
				return -1
			}
			return int(e)
		}
		if e == -1 || e < 0 && !o.maskedStride {
			return -1 // padding; other negative slots are read back (maskedStride: a table entry of −1 past the used pages)
		}
		if inv == nil {
			used := min((n+v.p.P-1)>>v.shift, v.p.MaxPages)
			inv, mult = make(map[int64]int, used), make(map[int64]int, used)
			for pj := used - 1; pj >= 0; pj-- { // a repeated page reads back as its first use
				pg := int64(v.table.I32(b*v.p.MaxPages + pj))
				inv[pg] = pj
				mult[pg]++
			}
		}
		pj, ok := inv[int64(e)>>v.shift]
		i := pj<<v.shift | int(e)&(v.p.P-1)
		if !ok || i >= n {
			return -1
		}
		return i
	}
	key := func(i int) uint32 {
		if i >= L {
			return keyNegInf // maskedStride: masked to −inf
		}
		return o.key(v.bits(b, i))
	}
	// The candidate's K-th key: the lowest of its picks (a −1 under negInf
	// is a −inf pick).
	kth, any := uint32(0), false
	for _, e := range x {
		k := uint32(keyNegInf)
		if i := pos(e); i >= 0 {
			k = key(i)
		} else if e != -1 || !o.negInf {
			continue
		}
		if !any || k < kth {
			kth, any = k, true
		}
	}
	if !any {
		return false
	}
	// −1s got may write for tied picks: the tied positions whose
	// (unmasked) score is −inf, when the K-th key is −inf's.
	minusOnes := 0
	if o.negInf && kth == keyNegInf {
		for i := 0; i < n; i++ {
			if key(i) == kth && v.bits(b, i) == negInfBits {
				minusOnes++
			}
		}
		if got := countOf(y, -1); got > minusOnes {
			return false
		}
	}
	// repeats is how many times got may write entry e: the times its page
	// occurs in the table rows the candidate selects among (a page listed
	// twice gives each of its slots twice), else once.
	repeats := func(e int32) int {
		if !isPage || pos(e) < 0 {
			return 1
		}
		return mult[int64(e)>>v.shift]
	}
	// Walk both sorted lists; every entry in one and not the other must be
	// a tied position, and got's extra entries must be distinct (up to
	// repeats).
	i, j := 0, 0
	var prevY int32
	hasPrev, run := false, 0
	next := func() {
		if hasPrev && prevY == y[j] {
			run++
		} else {
			run = 1
		}
		prevY, hasPrev = y[j], true
		j++
	}
	tied := func(e int32) bool {
		if e == -1 && minusOnes > 0 {
			return true
		}
		p := pos(e)
		return p >= 0 && key(p) == kth
	}
	for i < len(x) || j < len(y) {
		switch {
		case j >= len(y) || i < len(x) && x[i] < y[j]:
			if !tied(x[i]) {
				return false
			}
			i++
		case i >= len(x) || y[j] < x[i]:
			if y[j] != -1 || minusOnes == 0 { // else a tied −inf pick written as −1
				if !tied(y[j]) || hasPrev && prevY == y[j] && run >= repeats(y[j]) {
					return false
				}
			}
			next()
		default: // in both (a repeat in both is the candidate's own)
			next()
			i++
		}
	}
	return true
}

// countOf returns how many entries of s equal e.
func countOf(s []int32, e int32) int {
	n := 0
	for _, x := range s {
		if x == e {
			n++
		}
	}
	return n
}
