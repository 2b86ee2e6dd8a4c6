// Helpers for kernels' Reducer implementations (the shrinking of a
// failing case, docs/failures.md): the proposal list built on a kernel's
// own model of a case, and the small renderings and sizes every kernel's
// reductions use.

package triage

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// errNoChange is the Build error of a proposal that would not change the
// case (Shrink skips it without an attempt).
var errNoChange = errors.New("no change")

// Reductions collects the proposals of a Reducer built on a model M of
// one case: each proposal clones the model, changes the clone, and builds
// the new case from it. The zero value is not usable; use NewReductions.
type Reductions[M any] struct {
	base  M
	clone func(M) M
	build func(M) (*difftest.Case, error)
	list  []Reduction
}

// NewReductions starts a proposal list on model m: clone copies a model
// deeply enough that changing the copy leaves m as it is, build turns a
// changed model into a case.
func NewReductions[M any](m M, clone func(M) M, build func(M) (*difftest.Case, error)) *Reductions[M] {
	return &Reductions[M]{base: m, clone: clone, build: build}
}

// Add appends the proposal what (its Reduction.Key key): f changes a clone
// of the model and reports whether it changed anything; a proposal whose
// f reports no change fails to build ("no change").
func (r *Reductions[M]) Add(what, key string, f func(M) bool) {
	r.list = append(r.list, Reduction{What: what, Key: key, Build: func() (*difftest.Case, error) {
		n := r.clone(r.base)
		if !f(n) {
			return nil, errNoChange
		}
		return r.build(n)
	}})
}

// List returns the proposals in the order they were added.
func (r *Reductions[M]) List() []Reduction { return r.list }

// Drops adds the first reductions of a case of n top-level items (a
// kernel's rows or tokens): for every chunk [i, j) of a halving pass over
// them (Halving(n, n)) but the whole, the proposal "drop NOUN i–j−1 of n"
// (Span) with key "KEY/s", s the chunk size; drop removes items [i, j)
// from a clone of the model.
func (r *Reductions[M]) Drops(n int, noun, key string, drop func(m M, i, j int)) {
	Halving(n, n, func(s, i, j int) {
		if j-i == n {
			return
		}
		r.Add(fmt.Sprintf("drop %s %s of %d", noun, Span(i, j), n), fmt.Sprintf("%s/%d", key, s), func(m M) bool {
			drop(m, i, j)
			return true
		})
	})
}

// Span renders the half-open range [i, j) as "i–j−1", or "i" for one
// element, as reductions name what they drop.
func Span(i, j int) string {
	if j-i == 1 {
		return fmt.Sprint(i)
	}
	return fmt.Sprintf("%d–%d", i, j-1)
}

// ChunkSizes returns the chunk sizes of a halving pass over n items:
// ⌈n/2⌉, ⌈n/4⌉, …, 1, keeping only sizes s with ⌈n/s⌉ ≤ maxChunks (none
// for n ≤ 0).
func ChunkSizes(n, maxChunks int) []int {
	var ss []int
	for s := (n + 1) / 2; s >= 1; s = (s + 1) / 2 {
		if (n+s-1)/s <= maxChunks {
			ss = append(ss, s)
		}
		if s == 1 {
			break
		}
	}
	return ss
}

// Halving calls f(s, i, j) for every chunk [i, j) of a halving pass over
// n items: size s by size of ChunkSizes(n, maxChunks), largest first, and
// within a size the chunks [0, s), [s, 2s), … in order, the last one cut
// at n.
func Halving(n, maxChunks int, f func(s, i, j int)) {
	for _, s := range ChunkSizes(n, maxChunks) {
		for i := 0; i < n; i += s {
			f(s, i, min(i+s, n))
		}
	}
}

// NextPow2 returns the smallest power of two ≥ n, 1 for n ≤ 1.
func NextPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// RankMap replaces the ordinary values of vals by small numbers in the
// same order, equal values staying equal, as a reduction that keeps a
// case's order and makes its values readable: the negatives by −n … −1,
// the positives by 1 … m, where with group g > 1 every g consecutive
// distinct values of one sign share a number (fewer distinct values).
// ordinary picks the values renumbered (the others, such as ±0, ±inf and
// NaN, whose identity a fault may be about, stay); negative tells their
// sign; key orders them (strictly increasing with the value, on the
// ordinary values); value makes an element of a rank (−n … m, never 0).
// It reports whether anything changed.
func RankMap[V comparable, K cmp.Ordered](vals []V, group int, ordinary, negative func(V) bool, key func(V) K, value func(rank int) V) bool {
	var neg, pos []K
	for _, v := range vals {
		if ordinary(v) {
			if negative(v) {
				neg = append(neg, key(v))
			} else {
				pos = append(pos, key(v))
			}
		}
	}
	slices.Sort(neg)
	neg = slices.Compact(neg)
	slices.Sort(pos)
	pos = slices.Compact(pos)
	changed := false
	for i, v := range vals {
		if !ordinary(v) {
			continue
		}
		var rank int
		if negative(v) {
			r, _ := slices.BinarySearch(neg, key(v)) // 0 = most negative
			rank = -((len(neg)-1-r)/group + 1)
		} else {
			r, _ := slices.BinarySearch(pos, key(v))
			rank = r/group + 1
		}
		nv := value(rank)
		changed = changed || nv != v
		vals[i] = nv
	}
	return changed
}
