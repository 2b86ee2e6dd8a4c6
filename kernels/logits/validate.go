// Input validation of indexer_logits (docs/contracts/indexer_logits.md, the parameter
// table): a case that breaks one of these rules is rejected before any
// implementation runs, and typed access to a validated case's tensors.

package logits

import (
	"encoding/binary"
	"math"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// Validate checks case c against the contract and returns the first broken
// rule as a *difftest.InputError (wrapping difftest.ErrInvalidInput)
// naming the tensor, the index and the rule:
//
//   - params: see Params.Check (store, P a power of two, H in [1, 128],
//     accum_bits, the size limits);
//   - the five inputs present in contract order: q [B, H, 128] (u8 e4m3fn
//     codes for the FP8 store, bf16 for BF16), weights f32 [B, H], cache u8
//     [num_pages, 132·P] (FP8) or [num_pages, 256·P] (BF16) — a cache of
//     the other store's page size is named as such —, seq_lens i32 [B],
//     page_table i32 [B, max_pages], with B, H, num_pages and max_pages
//     equal to the params' shape facts;
//   - one output, logits f32 [B, stride], not in-out;
//   - q and weights finite (an e4m3fn NaN code 0x7F/0xFF, a non-finite bf16
//     or f32 is rejected: a query is the model's, not a stored key);
//   - 0 ≤ seq_lens[b] ≤ stride (the stride must hold the longest row);
//   - max_pages ≥ ceil(seq_lens[b] / P) (the page table long enough for
//     the row);
//   - page_table[b][j] in [0, num_pages) for j < ceil(L_b / P), so every
//     slot page·P + (s & (P−1)) (64-bit) lies in the cache. Entries past a
//     row's pages are not read and not checked.
//
// Stored keys may hold anything: a NaN code or a non-finite scale makes
// that position "don't care" (Check), not the case invalid.
func Validate(c *difftest.Case) error {
	_, err := load(c)
	return err
}

// inputs is a validated case, unpacked.
type inputs struct {
	p                      Params
	q, w, cache, lens, tbl *difftest.Tensor
}

// load validates c and unpacks it.
func load(c *difftest.Case) (*inputs, error) {
	p, err := paramsOf(c)
	if err != nil {
		return nil, err
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	names := InputNames()
	if len(c.Inputs) != len(names) {
		return nil, difftest.Inputf("inputs", nil, "want %d tensors %v, got %d", len(names), names, len(c.Inputs))
	}
	for i, name := range names {
		if c.Inputs[i] == nil || c.Inputs[i].Name != name {
			got := "<nil>"
			if c.Inputs[i] != nil {
				got = c.Inputs[i].Name
			}
			return nil, difftest.Inputf("inputs", []int{i}, "must be %q, got %q", name, got)
		}
	}
	in := &inputs{p: p, q: c.Inputs[0], w: c.Inputs[1], cache: c.Inputs[2], lens: c.Inputs[3], tbl: c.Inputs[4]}
	if err := checkShape(in.q, p.QDType(), []int{p.Batch, p.Heads, Dim}, "[batch, H, 128]"); err != nil {
		return nil, err
	}
	if err := checkShape(in.w, difftest.F32, []int{p.Batch, p.Heads}, "[batch, H]"); err != nil {
		return nil, err
	}
	if err := in.cache.CheckLayout(difftest.U8, 2); err != nil {
		return nil, err
	}
	if cs := in.cache.Shape; cs[0] != p.NumPages || cs[1] != p.PageBytes() {
		other := p
		other.Store = map[string]string{StoreFP8: StoreBF16, StoreBF16: StoreFP8}[p.Store]
		hint := ""
		if cs[1] == other.PageBytes() {
			hint = "; that is the page size of the " + other.Store + " store"
		}
		return nil, difftest.Inputf(NameCache, nil, "shape must be [num_pages = %d, %s], got %v (wrong cache shape for the %s store%s)",
			p.NumPages, pageBytesRule(p), cs, p.Store, hint)
	}
	if err := checkShape(in.lens, difftest.I32, []int{p.Batch}, "[batch]"); err != nil {
		return nil, err
	}
	if err := checkShape(in.tbl, difftest.I32, []int{p.Batch, p.MaxPages}, "[batch, max_pages]"); err != nil {
		return nil, err
	}
	if len(c.Outputs) != 1 || c.Outputs[0].Name != NameLogits {
		names := make([]string, len(c.Outputs))
		for i, o := range c.Outputs {
			names[i] = o.Name
		}
		return nil, difftest.Inputf("outputs", nil, "want exactly [%s], got %v", NameLogits, names)
	}
	if o := c.Outputs[0]; o.DType != difftest.F32 || len(o.Shape) != 2 || o.Shape[0] != p.Batch || o.Shape[1] != p.Stride || o.InOut {
		return nil, difftest.Inputf(NameLogits, nil, "must be f32 [batch = %d, stride = %d], not in-out, got %s %v in-out=%v", p.Batch, p.Stride, o.DType, o.Shape, o.InOut)
	}
	for i := 0; i < in.q.Len(); i++ {
		if v := in.qVal(i); math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, difftest.Inputf(NameQ, []int{i / (Dim * p.Heads), i / Dim % p.Heads, i % Dim}, "must be finite (the query, not a stored key), got %g (bits 0x%x)", v, in.qBits(i))
		}
	}
	for i := 0; i < in.w.Len(); i++ {
		if v := float64(in.w.F32(i)); math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, difftest.Inputf(NameWeights, []int{i / p.Heads, i % p.Heads}, "must be finite, got %g", v)
		}
	}
	for b := 0; b < p.Batch; b++ {
		L := int(in.lens.I32(b))
		switch {
		case L < 0:
			return nil, difftest.Inputf(NameSeqLens, []int{b}, "must be ≥ 0, got %d", L)
		case L > p.Stride:
			return nil, difftest.Inputf(NameSeqLens, []int{b}, "%d keys exceed the logits row stride %d (the stride must hold the longest row)", L, p.Stride)
		}
		need := pagesFor(L, p.PageSize)
		if need > p.MaxPages {
			return nil, difftest.Inputf(NamePageTable, []int{b}, "too short: %d keys at P=%d need ceil(%d/%d) = %d pages, max_pages is %d", L, p.PageSize, L, p.PageSize, need, p.MaxPages)
		}
		for j := 0; j < need; j++ {
			if id := int64(in.tbl.I32(b*p.MaxPages + j)); id < 0 || id >= int64(p.NumPages) {
				return nil, difftest.Inputf(NamePageTable, []int{b, j}, "page %d puts slots [%d, %d) beyond the cache (num_pages·P = %d·%d = %d slots); ids must be in [0, %d)",
					id, id*int64(p.PageSize), (id+1)*int64(p.PageSize), p.NumPages, p.PageSize, int64(p.NumPages)*int64(p.PageSize), p.NumPages)
			}
		}
	}
	return in, nil
}

// checkShape checks dtype and exact shape; rule names the layout.
func checkShape(t *difftest.Tensor, dt difftest.DType, shape []int, rule string) error {
	if err := t.CheckLayout(dt, len(shape)); err != nil {
		return err
	}
	for i, d := range shape {
		if t.Shape[i] != d {
			return difftest.Inputf(t.Name, nil, "shape must be %s = %v, got %v", rule, shape, t.Shape)
		}
	}
	return nil
}

func pageBytesRule(p Params) string {
	if p.Store == StoreBF16 {
		return "256·P = " + itoa(p.PageBytes())
	}
	return "132·P = " + itoa(p.PageBytes())
}

// pagesFor returns ceil(L / P).
func pagesFor(L, P int) int { return (L + P - 1) / P }

// qBits returns the raw bits of q element i (an e4m3fn code or bf16 bits).
func (in *inputs) qBits(i int) uint16 {
	if in.p.Store == StoreBF16 {
		return in.q.U16(i)
	}
	return uint16(in.q.Data[i])
}

// qVal returns q element i exactly.
func (in *inputs) qVal(i int) float64 {
	if in.p.Store == StoreBF16 {
		return numeric.BF16ToF64(in.q.U16(i))
	}
	return float64(numeric.E4M3ToF32(in.q.Data[i]))
}

// slot returns the cache slot of position s of row b (64-bit):
// page_table[b][s >> log2 P]·P + (s & (P−1)).
func (in *inputs) slot(b, s int) int64 {
	id := int64(in.tbl.I32(b*in.p.MaxPages + s>>in.p.Log2P()))
	return id*int64(in.p.PageSize) + int64(s&(in.p.PageSize-1))
}

// slotBytes locates a slot in the cache (docs/contracts/norm_rope_store.md step 4), page =
// slot >> log2 P, off = slot & (P−1): FP8 codes at page·132P + off·128,
// scale at page·132P + 128P + off·4; BF16 values at page·256P + off·256
// (scaleAt −1). Offsets are int64: a cache may exceed 2 GiB.
func slotBytes(p Params, slot int64) (at, scaleAt int64) {
	page, off := slot>>p.Log2P(), slot&int64(p.PageSize-1)
	base := page * int64(p.PageBytes())
	if p.Store == StoreBF16 {
		return base + off*2*Dim, -1
	}
	return base + off*Dim, base + int64(Dim*p.PageSize) + off*4
}

// key decodes the key of a slot exactly: FP8, the e4m3fn values of its
// codes and its f32 scale; BF16, its values and scale 1. dc is non-empty
// when the position is "don't care": a NaN code, a non-finite bf16 value
// or a non-finite scale.
func (in *inputs) key(slot int64, k *[Dim]float64) (scale float64, dc string) {
	at, scaleAt := slotBytes(in.p, slot)
	data := in.cache.Data
	if in.p.Store == StoreBF16 {
		for d := range k {
			bits := binary.LittleEndian.Uint16(data[at+2*int64(d):])
			k[d] = numeric.BF16ToF64(bits)
			if dc == "" && (math.IsNaN(k[d]) || math.IsInf(k[d], 0)) {
				dc = "key value " + itoa(d) + " is not finite"
			}
		}
		return 1, dc
	}
	for d := range k {
		c := data[at+int64(d)]
		k[d] = float64(numeric.E4M3ToF32(c))
		if dc == "" && numeric.E4M3IsNaN(c) {
			dc = "key code " + itoa(d) + " is NaN"
		}
	}
	scale = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[scaleAt:])))
	if dc == "" && (math.IsNaN(scale) || math.IsInf(scale, 0)) {
		dc = "the key's scale is not finite"
	}
	return scale, dc
}

// query returns the 128 values of head h of row b exactly.
func (in *inputs) query(b, h int, q *[Dim]float64) {
	base := (b*in.p.Heads + h) * Dim
	for d := range q {
		q[d] = in.qVal(base + d)
	}
}

func itoa(i int) string {
	if i < 0 {
		return "-" + itoa(-i)
	}
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
