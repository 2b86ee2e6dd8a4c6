// The Go reference of topk_transform (docs/contracts/topk_transform.md): exact top-K selection
// in key32 order by MSB-first radix select (four 8-bit digit passes, as in
// the one-block-per-row radix-select kernels it checks), then the page
// transform.

package topk

import (
	"slices"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// Reference computes the exact outputs of c into outs (page_indices, then
// raw_indices when c returns them; each i32 [batch, K]). Every element of
// every output is written.
//
// For row b with L = seq_lens[b]:
//   - L ≤ K: raw = 0, 1, …, L−1 followed by −1s; page_indices likewise.
//   - L > K: the K positions of scores[b][0:L] with the largest key32 (so
//     −0 < +0, −inf is a valid pick above only −NaN, +NaN ranks above +inf,
//     and ties are equal bit patterns). Among positions whose key equals
//     the K-th largest, the lowest positions are taken. The chosen positions
//     are written in ascending position order; the contract leaves the order
//     unspecified, this choice only makes the reference deterministic.
//
// page_indices[b][j] = page_table[b][raw >> log2 P]·P + (raw & (P−1)),
// computed in 64-bit (Validate has proved it fits in int32). Nothing past L
// in a row is read. Selection runs in expected O(L) time per row; rows run
// in parallel on runtime.GOMAXPROCS(0) goroutines. PyTorch's topk fallback
// orders differently: it ranks every NaN above +inf regardless of sign and
// its transform emits −1 for −inf picks; this reference follows the
// radix-select kernels instead.
//
// Any K ≥ 1 is accepted (the CUDA kernel only instantiates 512, 1024 and
// 2048). Errors: the *difftest.InputError of Validate, or one naming an
// output buffer of the wrong size.
func Reference(c *difftest.Case, outs []*difftest.Tensor) error {
	return reference(c, outs, selectRadix)
}

// selectFunc writes into dst (length k) the k positions of keys with the
// largest keys, ties at the k-th key resolved to the lowest positions, in
// ascending position order; len(keys) > k. s is per-worker scratch.
type selectFunc func(keys []uint32, k int, dst []int32, s *scratch)

// scratch is per-worker memory reused across rows.
type scratch struct {
	keys []uint32
	cand []uint32
	idx  []int32
}

// reference is Reference with the selection algorithm as a parameter, so
// tests can run the plain full sort (selectSort) against the radix path.
func reference(c *difftest.Case, outs []*difftest.Tensor, sel selectFunc) error {
	return selectRows(c, outs, (*view).keys, sel)
}

// selectRows is the row loop of the reference and of the mutants that
// change only the keys (runRows): a row of L ≤ K scores picks positions
// 0 … L−1, then −1; a longer row the K positions sel picks from the L
// keys keysOf writes into dst (keysOf(v, b, L, dst), the reference's
// v.keys).
func selectRows(c *difftest.Case, outs []*difftest.Tensor, keysOf func(v *view, b, L int, dst []uint32) []uint32, sel selectFunc) error {
	return runRows(c, outs, func(v *view, b int, s *scratch) ([]int32, int) {
		s.idx = grow(s.idx, v.p.K)
		pos := s.idx
		L := v.length(b)
		if L <= v.p.K {
			for j := range pos {
				pos[j] = -1
				if j < L {
					pos[j] = int32(j)
				}
			}
		} else {
			s.keys = keysOf(v, b, L, s.keys)
			sel(s.keys, v.p.K, pos, s)
		}
		return pos, b
	})
}

// rowFunc returns the K raw entries of row b (−1 where nothing is picked)
// and the page-table row that translates them: b for the reference, another
// row only for a mutant that models a wrong page-table row.
type rowFunc func(v *view, b int, s *scratch) (pos []int32, tb int)

// runRows is the row loop shared by the reference and the mutants: it
// validates c, checks outs, and for every row b writes the entries of row
// to raw_indices (when returned) and their slots through page_table row tb
// to page_indices. A negative entry (the −1 padding, or a mutant's garbage)
// and a position past the page table (only mutants read past L) are
// written to page_indices unchanged.
func runRows(c *difftest.Case, outs []*difftest.Tensor, row rowFunc) error {
	return runRowsSlots(c, outs, row, (*view).slot)
}

// runRowsSlots is runRows with slot(v, tb, i) as the translation of
// position i through page-table row tb: (*view).slot for the reference, a
// wrong one for a mutant that models a page-translation bug.
func runRowsSlots(c *difftest.Case, outs []*difftest.Tensor, row rowFunc, slot func(v *view, tb, i int) int64) error {
	v, err := newView(c)
	if err != nil {
		return err
	}
	page, raw, err := outputs(c, v.p, outs)
	if err != nil {
		return err
	}
	K := v.p.K
	return parallelRows(v.p.Batch, func(s *scratch, b int) error {
		pos, tb := row(v, b, s)
		for j, i := range pos {
			sl := int64(i)
			if i >= 0 && int(i)>>v.shift < v.p.MaxPages {
				sl = slot(v, tb, int(i))
			}
			page.SetI32(b*K+j, int32(sl))
			if raw != nil {
				raw.SetI32(b*K+j, i)
			}
		}
		return nil
	})
}

// threshold returns the k-th largest key of keys (1 ≤ k ≤ len(keys)) and
// the number of keys strictly above it, by MSB-first radix select: each
// pass histograms one 8-bit digit of the keys that share the prefix found
// so far, finds the digit holding the k-th largest, and keeps only those
// keys (copied to s.cand, then compacted in place) for the next pass.
// O(len(keys)) in every case; keys is not modified.
func threshold(keys []uint32, k int, s *scratch) (kth uint32, above int) {
	cur := keys
	need := k // rank of the target within cur, counted from the top
	for shift := 24; shift >= 0; shift -= 8 {
		var hist [256]int
		for _, x := range cur {
			hist[x>>shift&0xFF]++
		}
		d := 255
		for ; hist[d] < need; d-- {
			need -= hist[d]
			above += hist[d]
		}
		kth |= uint32(d) << shift
		if shift == 0 || hist[d] == len(cur) {
			continue // nothing to drop
		}
		dst := s.cand
		if len(cur) == len(keys) && &cur[0] == &keys[0] {
			dst = grow(s.cand, hist[d])
			s.cand = dst
		}
		n := 0
		for _, x := range cur {
			if x>>shift&0xFF == uint32(d) {
				dst[n] = x
				n++
			}
		}
		cur = dst[:n]
	}
	return kth, above
}

// selectRadix is the fast selectFunc: threshold, then one scan in position
// order taking every key above the k-th and the first k − above keys equal
// to it.
func selectRadix(keys []uint32, k int, dst []int32, s *scratch) {
	kth, above := threshold(keys, k, s)
	ties := k - above
	n := 0
	for i, x := range keys {
		if x > kth || x == kth && ties > 0 {
			if x == kth {
				ties--
			}
			dst[n] = int32(i)
			n++
		}
	}
}

// selectSort is the plain selectFunc: sort all positions by key
// descending, position ascending, keep the first k, sort them by position.
// O(L log L); tests check selectRadix against it.
func selectSort(keys []uint32, k int, dst []int32, _ *scratch) {
	idx := make([]int32, len(keys))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		switch {
		case keys[a] > keys[b]:
			return -1
		case keys[a] < keys[b]:
			return 1
		}
		return int(a - b)
	})
	copy(dst, idx[:k])
	slices.Sort(dst[:k])
}
