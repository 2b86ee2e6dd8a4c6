// Reductions of a topk_transform case for `difftest shrink` (docs/failures.md, triage.Reducer): fewer rows, the smallest K with a CUDA entry
// point, shorter rows (towards the smallest L > K, and below K where the
// failure allows), simpler scores (small integers in the same order,
// zeros, one distinct value, fewer distinct values), a shorter past-length
// fill, an identity page table, dense page ids, one page per row.

package topk

import (
	"fmt"
	"math"
	"slices"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

var _ triage.Reducer = Kernel{}

// maxChunksPerLevel bounds the position chunks one deletion or zeroing
// level lists for a row: a level of chunk size s is listed only when
// L/s ≤ maxChunksPerLevel, so a 262,144-score row proposes its coarse cuts
// first and its single-position cuts only once it is short.
const maxChunksPerLevel = 4096

// maxZeroChunks bounds the chunks of one level of the zeroing pass, which
// simplifies values rather than cutting them: it stops at chunks of L/64
// positions (single positions only in rows of at most 64).
const maxZeroChunks = 64

// shrinkRow is one row of a case being shrunk: its valid scores [0, L),
// the fill past L up to its stride, and its page-table row.
type shrinkRow struct {
	vals, tail []uint32
	pages      []int32
}

// shrinkModel is a case as rows, rebuilt into a Case by build.
type shrinkModel struct {
	c    *difftest.Case // the case it came from: id, seed, key, params
	p    Params
	rows []shrinkRow
}

// modelOf unpacks a validated case.
func modelOf(c *difftest.Case) (*shrinkModel, error) {
	v, err := newView(c)
	if err != nil {
		return nil, err
	}
	m := &shrinkModel{c: c, p: *v.p}
	for b := 0; b < v.p.Batch; b++ {
		L := v.length(b)
		row := shrinkRow{pages: make([]int32, v.p.MaxPages)}
		for i := 0; i < v.p.Stride; i++ {
			if i < L {
				row.vals = append(row.vals, v.bits(b, i))
			} else {
				row.tail = append(row.tail, v.bits(b, i))
			}
		}
		for j := range row.pages {
			row.pages[j] = v.table.I32(b*v.p.MaxPages + j)
		}
		m.rows = append(m.rows, row)
	}
	return m, nil
}

// clone returns a deep copy of m.
func (m *shrinkModel) clone() *shrinkModel {
	n := &shrinkModel{c: m.c, p: m.p, rows: make([]shrinkRow, len(m.rows))}
	for i, r := range m.rows {
		n.rows[i] = shrinkRow{vals: slices.Clone(r.vals), tail: slices.Clone(r.tail), pages: slices.Clone(r.pages)}
	}
	return n
}

// build packs m into a case: stride = the longest row (valid scores and
// fill, at least 1), shorter rows padded with the generator's past-length
// fill (+NaN, +inf alternating); max_pages = ceil(stride/P), each page row
// cut or padded with −1. Needles are dropped (their positions moved).
func (m *shrinkModel) build() (*difftest.Case, error) {
	p := m.p
	p.Batch, p.Needles, p.Pages = len(m.rows), nil, "shrunk"
	p.Stride = 1
	for _, r := range m.rows {
		p.Stride = max(p.Stride, len(r.vals)+len(r.tail))
	}
	p.MaxPages = max((p.Stride+p.P-1)/p.P, 1)
	if p.Batch < 1 {
		return nil, fmt.Errorf("no rows")
	}
	if err := checkLimits(&p); err != nil {
		return nil, err
	}
	scores := difftest.MustTensor(TensorScores, p.scoresDType(), p.Batch, p.Stride)
	lens := difftest.MustTensor(TensorSeqLens, difftest.I32, p.Batch)
	table := difftest.MustTensor(TensorPageTable, difftest.I32, p.Batch, p.MaxPages)
	for b, r := range m.rows {
		lens.SetI32(b, int32(len(r.vals)))
		for i := 0; i < p.Stride; i++ {
			x := uint32(pastEvenBits)
			switch {
			case i < len(r.vals):
				x = r.vals[i]
			case i < len(r.vals)+len(r.tail):
				x = r.tail[i-len(r.vals)]
			case i%2 == 1:
				x = pastOddBits
			}
			if p.wide16() { // rows hold f32 bits (view.bits widens)
				scores.SetU16(b*p.Stride+i, narrowBits(p.ScoreDType, x))
				continue
			}
			scores.SetU32(b*p.Stride+i, x)
		}
		for j := 0; j < p.MaxPages; j++ {
			id := int32(-1)
			if j < len(r.pages) {
				id = r.pages[j]
			}
			table.SetI32(b*p.MaxPages+j, id)
		}
	}
	return &difftest.Case{ID: m.c.ID, Kernel: KernelName, Family: m.c.Family, Seed: m.c.Seed, Key: m.c.Key,
		Params: &p, Inputs: []*difftest.Tensor{scores, lens, table}, Outputs: p.Outputs()}, nil
}

// SizeOf describes a case's size: "B rows, L ≤ max (Σ n scores), K k, P p"
// (triage.Reducer).
func (Kernel) SizeOf(c *difftest.Case) string {
	p, err := paramsOf(c)
	if err != nil {
		return "?"
	}
	lens := c.Input(TensorSeqLens)
	maxL, sum := 0, 0
	for b := 0; lens != nil && b < lens.Len(); b++ {
		L := int(lens.I32(b))
		maxL, sum = max(maxL, L), sum+L
	}
	rows := "rows"
	if p.Batch == 1 {
		rows = "row"
	}
	return fmt.Sprintf("%d %s, L ≤ %d (%d scores), stride %d, K %d, P %d", p.Batch, rows, maxL, sum, p.Stride, p.K, p.P)
}

// Reductions lists the proposals for c (triage.Reducer), the big cuts
// and the single proposals first, the chunked passes last: drop row
// chunks (halves, quarters, …, single rows); K down to each smaller entry
// point (EntryPointKs); the past-length fill of every row cut to 0, 1,
// half, a quarter, …; per row, keep its first or last K+1 scores; the
// identity page table, page ids renumbered 0, 1, 2, … in order, one page
// per row (P the next power of two ≥ the stride; every row on page 0, or
// row b on page b); per row, scores to small integers in the same key32
// order (±0, ±inf, NaN and subnormals kept), one distinct value (1.0, for
// a row with more than one), half as many distinct values; per row,
// delete position chunks (halving down to single positions, at most
// maxChunksPerLevel per level); per row, position chunks to +0 (at most
// maxZeroChunks per level). A proposal that would not change the case
// fails to build.
func (Kernel) Reductions(c *difftest.Case) []triage.Reduction {
	m, err := modelOf(c)
	if err != nil {
		return nil
	}
	rs := triage.NewReductions(m, (*shrinkModel).clone, (*shrinkModel).build)
	add := rs.Add
	K := m.p.K
	rs.Drops(len(m.rows), "rows", "rows", func(n *shrinkModel, i, j int) { n.rows = slices.Delete(n.rows, i, j) })
	for _, k := range EntryPointKs {
		if k < K {
			add(fmt.Sprintf("K %d → %d", K, k), "K", func(n *shrinkModel) bool { n.p.K = k; return true })
		}
	}
	// The past-length fill: one length for every row at once (the stride
	// is the longest row, so cutting one row's fill alone changes
	// nothing while another row is longer).
	T := 0
	for _, r := range m.rows {
		T = max(T, len(r.tail))
	}
	for _, f := range append([]int{0}, triage.ChunkSizes(T, T)...) {
		if f < T {
			add(fmt.Sprintf("past-length fill → at most %d per row", f), "fill", func(n *shrinkModel) bool {
				for b := range n.rows {
					n.rows[b].tail = n.rows[b].tail[:min(f, len(n.rows[b].tail))]
				}
				return true
			})
		}
	}
	for b, r := range m.rows {
		if L := len(r.vals); L > K+1 {
			pre := fmt.Sprintf("row %d: ", b)
			add(pre+fmt.Sprintf("keep its first %d scores", K+1), fmt.Sprintf("row%d/keep", b), func(n *shrinkModel) bool {
				n.rows[b].vals = n.rows[b].vals[:K+1]
				return true
			})
			add(pre+fmt.Sprintf("keep its last %d scores", K+1), fmt.Sprintf("row%d/keep", b), func(n *shrinkModel) bool {
				n.rows[b].vals = n.rows[b].vals[L-K-1:]
				return true
			})
		}
	}
	add("identity page table", "pages/identity", func(n *shrinkModel) bool {
		changed := false
		for b := range n.rows {
			for j := range n.rows[b].pages {
				changed = changed || n.rows[b].pages[j] != int32(j)
				n.rows[b].pages[j] = int32(j)
			}
		}
		return changed
	})
	add("page ids → 0, 1, 2, … in the same order", "pages/dense", func(n *shrinkModel) bool { return n.densePages() })
	if P := triage.NextPow2(maxRowLen(m)); P != m.p.P && P <= MaxPageSize {
		for _, shared := range []bool{true, false} {
			what := fmt.Sprintf("one page per row (P %d → %d), row b on page b", m.p.P, P)
			if shared {
				what = fmt.Sprintf("one page per row (P %d → %d), every row on page 0", m.p.P, P)
			}
			add(what, "pages/one", func(n *shrinkModel) bool {
				n.p.P = P
				for b := range n.rows {
					n.rows[b].pages = []int32{int32(b)}
					if shared {
						n.rows[b].pages[0] = 0
					}
				}
				return true
			})
		}
	}
	for b := range m.rows {
		pre := fmt.Sprintf("row %d: ", b)
		add(pre+"scores → small integers in the same order", fmt.Sprintf("row%d/ints", b), func(n *shrinkModel) bool {
			return rankMap(n.rows[b].vals, 1)
		})
		add(pre+"every score → 1.0", fmt.Sprintf("row%d/one", b), func(n *shrinkModel) bool {
			vals := n.rows[b].vals
			if len(vals) == 0 || !slices.ContainsFunc(vals, func(x uint32) bool { return x != vals[0] }) {
				return false // one distinct value already
			}
			for x := range vals {
				vals[x] = 0x3F800000
			}
			return true
		})
		add(pre+"half as many distinct scores", fmt.Sprintf("row%d/fewer", b), func(n *shrinkModel) bool {
			return rankMap(n.rows[b].vals, 2)
		})
	}
	m.rowChunks(maxChunksPerLevel, func(b, s, i, j int) {
		add(fmt.Sprintf("row %d: delete positions %s", b, triage.Span(i, j)), fmt.Sprintf("row%d/del/%d", b, s), func(n *shrinkModel) bool {
			n.rows[b].vals = slices.Delete(n.rows[b].vals, i, j)
			return true
		})
	})
	m.rowChunks(maxZeroChunks, func(b, s, i, j int) {
		add(fmt.Sprintf("row %d: positions %s → +0", b, triage.Span(i, j)), fmt.Sprintf("row%d/zero/%d", b, s), func(n *shrinkModel) bool {
			changed := false
			for x := i; x < j; x++ {
				changed = changed || n.rows[b].vals[x] != 0
				n.rows[b].vals[x] = 0
			}
			return changed
		})
	})
	return rs.List()
}

// rowChunks calls f for every row b and every chunk [i, j) of its valid
// scores, row by row, chunk size s by size (triage.Halving(L, perLevel):
// at most perLevel chunks a level).
func (m *shrinkModel) rowChunks(perLevel int, f func(b, s, i, j int)) {
	for b, r := range m.rows {
		triage.Halving(len(r.vals), perLevel, func(s, i, j int) { f(b, s, i, j) })
	}
}

// maxRowLen is the longest row of m, valid scores and fill.
func maxRowLen(m *shrinkModel) int {
	n := 1
	for _, r := range m.rows {
		n = max(n, len(r.vals)+len(r.tail))
	}
	return n
}

// ordinary reports whether f32 bits b are a normal, finite, non-zero
// value: what rankMap renumbers (±0, subnormals, ±inf and NaNs are the
// values whose identity a fault is about, and stay).
func ordinary(b uint32) bool {
	e := b >> 23 & 0xFF
	return e != 0 && e != 0xFF
}

// rankMap replaces the ordinary values of vals by small integers in the
// same key32 order, equal values staying equal: the negatives by −n … −1,
// the positives by 1 … m, where with group g > 1 every g consecutive
// distinct values of one sign share a number (fewer distinct values). It
// reports whether anything changed (triage.RankMap).
func rankMap(vals []uint32, group int) bool {
	negative := func(b uint32) bool { return b>>31 == 1 }
	value := func(r int) uint32 { return math.Float32bits(float32(r)) }
	return triage.RankMap(vals, group, ordinary, negative, numeric.Key32, value)
}

// densePages renumbers every row's used page ids (j < ceil(L/P)) to
// 0, 1, 2, … in the order of their values, equal ids staying equal;
// unused entries become −1. It reports whether anything changed.
func (m *shrinkModel) densePages() bool {
	var ids []int32
	for _, r := range m.rows {
		used := (len(r.vals) + m.p.P - 1) / m.p.P
		ids = append(ids, r.pages[:min(used, len(r.pages))]...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	changed := false
	for b, r := range m.rows {
		used := (len(r.vals) + m.p.P - 1) / m.p.P
		for j, id := range r.pages {
			nid := int32(-1)
			if j < used {
				x, _ := slices.BinarySearch(ids, id)
				nid = int32(x)
			}
			changed = changed || nid != id
			m.rows[b].pages[j] = nid
		}
	}
	return changed
}
