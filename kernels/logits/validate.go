// Input validation of indexer_logits (docs/contracts/indexer_logits.md, the parameter
// table): a case that breaks one of these rules is rejected before any
// implementation runs, and typed access to a validated case's tensors.

package logits

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/kernels/normrope"
)

// Validate checks case c against the contract and returns the first broken
// rule as a *difftest.InputError (wrapping difftest.ErrInvalidInput)
// naming the tensor, the index and the rule:
//
//   - params: see Params.Check (store, P a power of two, H in [1, 128],
//     accum_bits, next_n, page_stride, logits_dtype, the size limits);
//   - the five inputs present in contract order: q [B, (next_n,) H, 128]
//     (u8 e4m3fn codes for the FP8 store, bf16 for BF16) or [B, (next_n,)
//     H, 68] (FP4: u8, 64 packed e2m1 bytes then 4 ue8m0 bytes per head),
//     weights f32 [B·next_n, H], cache u8 [num_pages, page_stride] — a
//     cache of another store's page size is named as such —, seq_lens i32
//     [B] (next_n = 1) or [B, next_n], page_table i32 [B, max_pages], with
//     B, H, num_pages and max_pages equal to the params' shape facts (the
//     next_n axis is left out of q and seq_lens when next_n = 1);
//   - one output, logits f32 or bf16 (logits_dtype) [B·next_n, stride],
//     not in-out;
//   - q and weights finite (an e4m3fn NaN code 0x7F/0xFF, a non-finite bf16
//     or f32, an FP4 scale byte 0xFF or a value beyond the f32 range is
//     rejected: a query is the model's, not a stored key);
//   - 0 ≤ seq_lens[b][r] ≤ stride (the stride must hold the longest row);
//   - max_pages ≥ ceil(L / P) for the longest row L of request b (the
//     page table long enough for every row);
//   - page_table[b][j] in [0, num_pages) for j < ceil(L / P), so every
//     slot page·P + (s & (P−1)) (64-bit) lies in the cache. Entries past a
//     request's pages are not read and not checked.
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
	qRule := "[batch, H, 128]"
	if p.Store == StoreFP4 {
		qRule = "[batch, H, 68] (64 packed e2m1 bytes, 4 ue8m0 bytes)"
	}
	if p.N() > 1 {
		qRule = "[batch, next_n" + qRule[len("[batch"):]
	}
	if err := checkShape(in.q, p.QDType(), p.QShape(), qRule); err != nil {
		return nil, err
	}
	rowsName := "batch"
	if p.N() > 1 {
		rowsName = "batch·next_n"
	}
	if err := checkShape(in.w, difftest.F32, []int{p.Rows(), p.Heads}, "["+rowsName+", H]"); err != nil {
		return nil, err
	}
	if err := in.cache.CheckLayout(difftest.U8, 2); err != nil {
		return nil, err
	}
	if cs := in.cache.Shape; cs[0] != p.NumPages || cs[1] != p.Pitch() {
		hint := ""
		for _, st := range []string{StoreFP8, StoreBF16, StoreFP4} {
			other := p
			other.Store = st
			if st != p.Store && cs[1] == other.PageBytes() {
				hint = "; that is the page size of the " + st + " store"
			}
		}
		rule := pageBytesRule(p)
		if p.PageStride != 0 {
			rule = "page_stride = " + itoa(p.PageStride)
		}
		return nil, difftest.Inputf(NameCache, nil, "shape must be [num_pages = %d, %s], got %v (wrong cache shape for the %s store%s)",
			p.NumPages, rule, cs, p.Store, hint)
	}
	lensRule := "[batch]"
	if p.N() > 1 {
		lensRule = "[batch, next_n]"
	}
	if err := checkShape(in.lens, difftest.I32, p.LensShape(), lensRule); err != nil {
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
	if o := c.Outputs[0]; o.DType != p.OutDType() || len(o.Shape) != 2 || o.Shape[0] != p.Rows() || o.Shape[1] != p.Stride || o.InOut {
		return nil, difftest.Inputf(NameLogits, nil, "must be %s [%s = %d, stride = %d], not in-out, got %s %v in-out=%v", strings.ToLower(string(p.OutDType())), rowsName, p.Rows(), p.Stride, o.DType, o.Shape, o.InOut)
	}
	qIdx := func(i int) []int {
		head := i / Dim
		return []int{head / (p.Heads * p.N()), head / p.Heads % p.N(), head % p.Heads, i % Dim}
	}
	for i := 0; i < p.Rows()*p.Heads*Dim; i++ {
		if v := in.qVal(i); math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > math.MaxFloat32 {
			idx := qIdx(i)
			if p.N() == 1 {
				idx = []int{idx[0], idx[2], idx[3]}
			}
			rule := "must be finite (the query, not a stored key)"
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				rule = "must be finite in f32 (the query, not a stored key; its scale overflows)"
			}
			return nil, difftest.Inputf(NameQ, idx, "%s, got %g (%s)", rule, v, in.qBitsDesc(i))
		}
	}
	for i := 0; i < in.w.Len(); i++ {
		if v := float64(in.w.F32(i)); math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, difftest.Inputf(NameWeights, []int{i / p.Heads, i % p.Heads}, "must be finite, got %g", v)
		}
	}
	n := p.N()
	for b := 0; b < p.Batch; b++ {
		maxL := 0
		for r := 0; r < n; r++ {
			idx := []int{b}
			if n > 1 {
				idx = []int{b, r}
			}
			L := int(in.lens.I32(b*n + r))
			switch {
			case L < 0:
				return nil, difftest.Inputf(NameSeqLens, idx, "must be ≥ 0, got %d", L)
			case L > p.Stride:
				return nil, difftest.Inputf(NameSeqLens, idx, "%d keys exceed the logits row stride %d (the stride must hold the longest row)", L, p.Stride)
			}
			maxL = max(maxL, L)
		}
		need := pagesFor(maxL, p.PageSize)
		if need > p.MaxPages {
			return nil, difftest.Inputf(NamePageTable, []int{b}, "too short: %d keys at P=%d need ceil(%d/%d) = %d pages, max_pages is %d", maxL, p.PageSize, maxL, p.PageSize, need, p.MaxPages)
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
	if t.DType == dt && len(t.Shape) != len(shape) {
		return difftest.Inputf(t.Name, nil, "shape must be %s = %v, got %v", rule, shape, t.Shape)
	}
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
	switch p.Store {
	case StoreBF16:
		return "256·P = " + itoa(p.PageBytes())
	case StoreFP4:
		return "68·P = " + itoa(p.PageBytes())
	}
	return "132·P = " + itoa(p.PageBytes())
}

// pagesFor returns ceil(L / P).
func pagesFor(L, P int) int { return (L + P - 1) / P }

// fp4Value returns code × 2^(scale − 127), the exact value of an e2m1 code
// (low nibble of c) under a ue8m0 scale byte; NaN for the scale byte 0xFF.
func fp4Value(c, scale uint8) float64 {
	return numeric.E2M1ToF64(c) * numeric.UE8M0ToF64(scale)
}

// fp4Code returns code d (0 ≤ d < 128) of a packed FP4 record: byte d/2,
// low nibble for even d, high nibble for odd d.
func fp4Code(rec []byte, d int) uint8 { return rec[d/2] >> (4 * (d & 1)) & 0xF }

// qBitsDesc describes the raw bits of q element i (an e4m3fn code, bf16
// bits, or an FP4 code and its scale byte).
func (in *inputs) qBitsDesc(i int) string {
	switch in.p.Store {
	case StoreBF16:
		return fmt.Sprintf("bits 0x%04x", in.q.U16(i))
	case StoreFP4:
		rec := in.q.Data[i/Dim*FP4TokenBytes:]
		d := i % Dim
		return fmt.Sprintf("code 0x%x, scale byte 0x%02x", fp4Code(rec, d), rec[FP4CodeBytes+d/FP4Block])
	}
	return fmt.Sprintf("bits 0x%02x", in.q.Data[i])
}

// qVal returns q element i (flat over [rows, H, 128]) exactly.
func (in *inputs) qVal(i int) float64 {
	switch in.p.Store {
	case StoreBF16:
		return numeric.BF16ToF64(in.q.U16(i))
	case StoreFP4:
		rec := in.q.Data[i/Dim*FP4TokenBytes:]
		d := i % Dim
		return fp4Value(fp4Code(rec, d), rec[FP4CodeBytes+d/FP4Block])
	}
	return float64(numeric.E4M3ToF32(in.q.Data[i]))
}

// reqOf returns the request of query row i (rows = B·next_n).
func (in *inputs) reqOf(i int) int { return i / in.p.N() }

// slot returns the cache slot of position s of query row i (64-bit):
// page_table[i / next_n][s >> log2 P]·P + (s & (P−1)).
func (in *inputs) slot(i, s int) int64 {
	id := int64(in.tbl.I32(in.reqOf(i)*in.p.MaxPages + s>>in.p.Log2P()))
	return id*int64(in.p.PageSize) + int64(s&(in.p.PageSize-1))
}

// slotBytes locates a slot in the cache (docs/contracts/norm_rope_store.md
// step 4 and "FP4 keys"), page = slot >> log2 P, off = slot & (P−1), base
// = page·page_stride: FP8 codes at base + off·128, scale at base + 128P +
// off·4; BF16 values at base + off·256 (scaleAt −1); FP4 codes at base +
// off·64, the 4 scale bytes at base + 64P + off·4. Offsets are int64: a
// cache may exceed 2 GiB.
func slotBytes(p Params, slot int64) (at, scaleAt int64) {
	return slotBytesPitch(p, slot, int64(p.Pitch()))
}

// slotBytesPitch is slotBytes with pages pitch bytes apart: the layout
// norm_rope_store writes (normrope.SlotBytes).
func slotBytesPitch(p Params, slot, pitch int64) (at, scaleAt int64) {
	return normrope.SlotBytes(p.Store, p.PageSize, slot, pitch)
}

// key decodes the key of a slot exactly: FP8, the e4m3fn values of its
// codes and its f32 scale; BF16, its values and scale 1; FP4, code ×
// block scale per dim and scale 1. dc is non-empty when the position is
// "don't care": a NaN code, a non-finite bf16 value, a non-finite scale,
// an FP4 scale byte 0xFF (NaN) or an FP4 value beyond the f32 range.
func (in *inputs) key(slot int64, k *[Dim]float64) (scale float64, dc string) {
	at, scaleAt := slotBytes(in.p, slot)
	data := in.cache.Data
	switch in.p.Store {
	case StoreBF16:
		for d := range k {
			bits := binary.LittleEndian.Uint16(data[at+2*int64(d):])
			k[d] = numeric.BF16ToF64(bits)
			if dc == "" && (math.IsNaN(k[d]) || math.IsInf(k[d], 0)) {
				dc = "key value " + itoa(d) + " is not finite"
			}
		}
		return 1, dc
	case StoreFP4:
		rec := data[at : at+FP4CodeBytes]
		sc := data[scaleAt : scaleAt+FP4Blocks]
		for d := range k {
			s := sc[d/FP4Block]
			k[d] = fp4Value(fp4Code(rec, d), s)
			if dc == "" {
				switch {
				case s == 0xFF:
					dc = "the key's block " + itoa(d/FP4Block) + " scale byte is 0xFF (NaN)"
				case math.Abs(k[d]) > math.MaxFloat32:
					dc = "key value " + itoa(d) + " exceeds the f32 range"
				}
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

// query returns the 128 values of head h of query row i exactly.
func (in *inputs) query(i, h int, q *[Dim]float64) {
	base := (i*in.p.Heads + h) * Dim
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
