// Reductions of a norm_rope_store case for `difftest shrink` (docs/failures.md, triage.Reducer): fewer tokens, x without row padding, positions
// and freqs rows renumbered densely (or all at position 0), slots
// renumbered densely into the fewest pages (or one page), a smaller page
// size, a simpler configuration (no Hadamard, RMSNorm), simpler values
// (x dims to zero, x to small integers in the same order, weight 1, bias
// 0, the identity rotation).

package normrope

import (
	"fmt"
	"math"
	"slices"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

var _ triage.Reducer = Kernel{}

// shrinkModel is a case being shrunk, unpacked.
type shrinkModel struct {
	c        *difftest.Case
	p        Params
	xStride  int
	x        [][]uint16 // per token, xStride bf16 bits
	pos, loc []int64
	w, b     []uint32   // f32 bits, 128 each
	freqs    [][]uint32 // per position, 64 f32 bits
}

func modelOf(c *difftest.Case) (*shrinkModel, error) {
	in, err := load(c)
	if err != nil {
		return nil, err
	}
	m := &shrinkModel{c: c, p: in.p, xStride: in.stride}
	for t := 0; t < in.n; t++ {
		row := make([]uint16, in.stride)
		for i := range row {
			row[i] = in.x.U16(t*in.stride + i)
		}
		m.x = append(m.x, row)
		m.pos = append(m.pos, in.pos.I64(t))
		m.loc = append(m.loc, in.loc.I64(t))
	}
	wt, bt := c.Input(NameWeight), c.Input(NameBias)
	for i := 0; i < Dim; i++ {
		m.w = append(m.w, wt.U32(i))
		m.b = append(m.b, bt.U32(i))
	}
	for r := 0; r < in.maxPos; r++ {
		row := make([]uint32, RopeDim)
		for k := range row {
			row[k] = in.freqs.U32(r*RopeDim + k)
		}
		m.freqs = append(m.freqs, row)
	}
	return m, nil
}

func (m *shrinkModel) clone() *shrinkModel {
	n := *m
	n.x = make([][]uint16, len(m.x))
	for i, r := range m.x {
		n.x[i] = slices.Clone(r)
	}
	n.pos, n.loc, n.w, n.b = slices.Clone(m.pos), slices.Clone(m.loc), slices.Clone(m.w), slices.Clone(m.b)
	n.freqs = make([][]uint32, len(m.freqs))
	for i, r := range m.freqs {
		n.freqs[i] = slices.Clone(r)
	}
	return &n
}

// build packs the model into a case (Params.Preset recomputed).
func (m *shrinkModel) build() (*difftest.Case, error) {
	n := len(m.x)
	if n < 1 {
		return nil, fmt.Errorf("no tokens")
	}
	p := m.p
	p.Preset = MatchPreset(p)
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := checkSizes(n, m.xStride, "N", "x_stride"); err != nil {
		return nil, err
	}
	x := difftest.MustTensor(NameX, difftest.BF16, n, m.xStride)
	pos := difftest.MustTensor(NamePositions, difftest.I64, n)
	loc := difftest.MustTensor(NameOutLoc, difftest.I64, n)
	for t := range m.x {
		for i, v := range m.x[t] {
			x.SetU16(t*m.xStride+i, v)
		}
		pos.SetI64(t, m.pos[t])
		loc.SetI64(t, m.loc[t])
	}
	w := difftest.MustTensor(NameWeight, difftest.F32, Dim)
	b := difftest.MustTensor(NameBias, difftest.F32, Dim)
	for i := 0; i < Dim; i++ {
		w.SetU32(i, m.w[i])
		b.SetU32(i, m.b[i])
	}
	fr := difftest.MustTensor(NameFreqs, difftest.F32, len(m.freqs), RopeDim)
	for r, row := range m.freqs {
		for k, v := range row {
			fr.SetU32(r*RopeDim+k, v)
		}
	}
	return &difftest.Case{ID: m.c.ID, Kernel: KernelName, Family: m.c.Family, Seed: m.c.Seed, Key: m.c.Key,
		Params: p, Inputs: []*difftest.Tensor{x, w, b, fr, pos, loc}, Outputs: outputsOf(p)}, nil
}

// SizeOf describes a case's size: "N tokens (W written), P p, num_pages
// n, max_pos m, x_stride s, config" (triage.Reducer).
func (Kernel) SizeOf(c *difftest.Case) string {
	p, err := paramsOf(c)
	x, loc, fr := c.Input(NameX), c.Input(NameOutLoc), c.Input(NameFreqs)
	if err != nil || x == nil || loc == nil || fr == nil || len(x.Shape) != 2 || len(fr.Shape) != 2 {
		return "?"
	}
	written := 0
	for t := 0; t < loc.Len(); t++ {
		if loc.I64(t) >= 0 {
			written++
		}
	}
	had := "hadamard"
	if !p.Hadamard {
		had = "no hadamard"
	}
	return fmt.Sprintf("%d tokens (%d written), P %d, %d pages, max_pos %d, x_stride %d; %s, %s, off %d, %s, %s %s",
		x.Shape[0], written, p.PageSize, p.NumPages, fr.Shape[0], x.Shape[1], p.Norm, p.RopeStyle, p.RopeOffset, had, p.Store, p.ScaleFmt)
}

// Reductions lists the proposals for c (triage.Reducer), in order:
// drop token chunks (halving down to single tokens); x_stride → 128;
// positions renumbered 0, 1, … in order with only the freqs rows they use
// (or every token at position 0 with one row); written slots renumbered
// 0, 1, … in token order into the fewest pages, the cache cut to the
// pages the slots need, P halved down to 1, or one page holding every
// slot; Hadamard off, LayerNorm → RMSNorm; x dims in chunks (all tokens
// at once) → 0, x → small integers in the same order per token, weight
// → 1, bias → 0, every freqs row → the identity rotation (1, 0). A
// proposal that would not change the case fails to build.
func (Kernel) Reductions(c *difftest.Case) []triage.Reduction {
	m, err := modelOf(c)
	if err != nil {
		return nil
	}
	rs := triage.NewReductions(m, (*shrinkModel).clone, (*shrinkModel).build)
	add := rs.Add
	rs.Drops(len(m.x), "tokens", "tok", func(n *shrinkModel, i, j int) {
		n.x = slices.Delete(n.x, i, j)
		n.pos = slices.Delete(n.pos, i, j)
		n.loc = slices.Delete(n.loc, i, j)
	})
	if m.xStride > Dim {
		add(fmt.Sprintf("x_stride %d → %d", m.xStride, Dim), "xstride", func(n *shrinkModel) bool {
			n.xStride = Dim
			for t := range n.x {
				n.x[t] = n.x[t][:Dim]
			}
			return true
		})
	}
	add("positions → 0, 1, … in order, with only the freqs rows they use", "pos/dense", func(n *shrinkModel) bool {
		used := slices.Clone(n.pos)
		slices.Sort(used)
		used = slices.Compact(used)
		if len(used) == len(n.freqs) {
			return false
		}
		rows := make([][]uint32, len(used))
		for r, p := range used {
			rows[r] = n.freqs[p]
		}
		for t, p := range n.pos {
			r, _ := slices.BinarySearch(used, p)
			n.pos[t] = int64(r)
		}
		n.freqs = rows
		return true
	})
	add("every token at position 0, one freqs row", "pos/zero", func(n *shrinkModel) bool {
		if len(n.freqs) == 1 {
			return false
		}
		n.freqs = [][]uint32{n.freqs[n.pos[0]]}
		for t := range n.pos {
			n.pos[t] = 0
		}
		return true
	})
	add("written slots → 0, 1, … in token order, the fewest pages", "slots/dense", func(n *shrinkModel) bool {
		k := 0
		for t, l := range n.loc {
			if l >= 0 {
				n.loc[t] = int64(k)
				k++
			}
		}
		n.p.NumPages = max(1, (k+n.p.PageSize-1)/n.p.PageSize)
		return true
	})
	add("the cache cut to the pages its slots need", "pages/cut", func(n *shrinkModel) bool {
		last := int64(-1)
		for _, l := range n.loc {
			last = max(last, l)
		}
		need := max(1, int((last+int64(n.p.PageSize))/int64(n.p.PageSize)))
		if need >= n.p.NumPages {
			return false
		}
		n.p.NumPages = need
		return true
	})
	for P := m.p.PageSize / 2; P >= 1; P /= 2 {
		add(fmt.Sprintf("P %d → %d", m.p.PageSize, P), "P", func(n *shrinkModel) bool {
			slots := n.p.NumSlots()
			n.p.PageSize, n.p.NumPages = P, max(1, (slots+P-1)/P)
			return true
		})
	}
	written := 0
	for _, l := range m.loc {
		if l >= 0 {
			written++
		}
	}
	if one := triage.NextPow2(max(written, 1)); m.p.NumPages > 1 || one != m.p.PageSize {
		add(fmt.Sprintf("one page of %d slots, written slots 0, 1, … in token order", one), "pages/one", func(n *shrinkModel) bool {
			k := 0
			for t, l := range n.loc {
				if l >= 0 {
					n.loc[t] = int64(k)
					k++
				}
			}
			n.p.PageSize, n.p.NumPages = one, 1
			return true
		})
	}
	if m.p.Hadamard {
		add("hadamard off", "cfg/had", func(n *shrinkModel) bool { n.p.Hadamard = false; return true })
	}
	if m.p.Norm == NormLayer {
		add("LayerNorm → RMSNorm", "cfg/norm", func(n *shrinkModel) bool { n.p.Norm = NormRMS; return true })
	}
	for s := Dim / 2; s >= 1; s /= 2 {
		for i := 0; i < Dim; i += s {
			add(fmt.Sprintf("x dims %s → 0 in every token", triage.Span(i, i+s)), fmt.Sprintf("x/zero/%d", s), func(n *shrinkModel) bool {
				changed := false
				for t := range n.x {
					for d := i; d < i+s; d++ {
						changed = changed || n.x[t][d] != 0
						n.x[t][d] = 0
					}
				}
				return changed
			})
		}
	}
	add("x → small integers in the same order, per token", "x/ints", func(n *shrinkModel) bool {
		changed := false
		for t := range n.x {
			changed = rankBF16(n.x[t][:Dim]) || changed
		}
		return changed
	})
	add("weight → 1", "w/one", func(n *shrinkModel) bool { return fill32(n.w, math.Float32bits(1)) })
	add("bias → 0", "b/zero", func(n *shrinkModel) bool { return fill32(n.b, 0) })
	add("freqs → the identity rotation (cos 1, sin 0)", "freqs/identity", func(n *shrinkModel) bool {
		changed := false
		for _, row := range n.freqs {
			for j := 0; j < RopeDim/2; j++ {
				c, s := math.Float32bits(1), uint32(0)
				changed = changed || row[2*j] != c || row[2*j+1] != s
				row[2*j], row[2*j+1] = c, s
			}
		}
		return changed
	})
	return rs.List()
}

// fill32 sets every element of v to x and reports whether one changed.
func fill32(v []uint32, x uint32) bool {
	changed := false
	for i := range v {
		changed = changed || v[i] != x
		v[i] = x
	}
	return changed
}

// rankBF16 replaces the finite non-zero bf16 values of v by small integers
// in the same order, equal values equal (negatives −n … −1, positives
// 1 … m; bf16 holds every integer up to 256 exactly, and a token has 128
// values). ±0, ±inf and NaN stay. It reports whether anything changed.
func rankBF16(v []uint16) bool {
	ordinary := func(b uint16) bool { return b&0x7FFF != 0 && b&0x7F80 != 0x7F80 }
	negative := func(b uint16) bool { return b&0x8000 != 0 }
	value := func(r int) uint16 { return numeric.BF16FromF32(float32(r)) }
	return triage.RankMap(v, 1, ordinary, negative, numeric.BF16ToF32, value)
}
