package logits

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// fp4HandCase builds the hand-worked FP4 case: one request with next_n =
// 2, two heads, three keys in page 1 of two pages of P = 4, pages 280
// bytes apart (tight 68·4 = 272, then 8 bytes of 0xFF poison; page 0 all
// poison), bf16 logits, clean.
//
//	keys (ue8m0 byte 127 = 1 but block 1 of k2: 129 = 4)
//	  k0 = (1, 2, 0, …)   k1 = (−1, 0.5, 0, …)   k2 = (2, 0, 1, …; dim 40: 3·4 = 12)
//	q (both rows; every scale byte 127)
//	  h0 = (1, 1, 0, …)   h1 = (−2, 0, 0.5, …; dim 40: 0.5)
//	weights row 0 (0.5, 2), row 1 (1, 1); seq_lens (2, 3)
//
// Dot products (h0, h1): k0 (3, −2), k1 (−0.5, 2), k2 (2, −4 + 0.5 + 6 =
// 2.5). Row 0: 0.5·3 = 1.5, 2·2 = 4, then −inf (L = 2); row 1: 3, 2, 2 +
// 2.5 = 4.5, then −inf (L = 3). All exact in bf16.
func fp4HandCase() *difftest.Case {
	p := Params{Store: StoreFP4, PageSize: 4, Heads: 2, Clean: true, AccumBits: 24, NextN: 2, PageStride: 280, LogitsDType: LogitsBF16,
		Batch: 1, Stride: 4, MaxPages: 1, NumPages: 2, Family: "hand"}
	q := difftest.MustTensor(NameQ, p.QDType(), p.QShape()...)
	w := difftest.MustTensor(NameWeights, difftest.F32, 2, 2)
	cache := difftest.MustTensor(NameCache, difftest.U8, 2, 280)
	lens := difftest.MustTensor(NameSeqLens, difftest.I32, p.LensShape()...)
	table := difftest.MustTensor(NamePageTable, difftest.I32, 1, 1)
	for i := range cache.Data {
		cache.Data[i] = 0xFF
	}
	table.SetI32(0, 1)
	lens.SetI32(0, 2)
	lens.SetI32(1, 3)
	for i, v := range []float32{0.5, 2, 1, 1} {
		w.SetF32(i, v)
	}
	// e2m1 codes: 0x1 = 0.5, 0x2 = 1, 0x4 = 2, 0x5 = 3, 0xA = −1, 0xC = −2.
	put := func(rec []byte, d int, code byte) { rec[d/2] |= code << (4 * (d & 1)) }
	page := cache.Data[280:]
	for o := 0; o < 4; o++ {
		clear(page[o*FP4CodeBytes : (o+1)*FP4CodeBytes])
		for k := 0; k < FP4Blocks; k++ {
			page[FP4CodeBytes*4+o*FP4Blocks+k] = 127
		}
	}
	k := func(o int) []byte { return page[o*FP4CodeBytes : (o+1)*FP4CodeBytes] }
	put(k(0), 0, 0x2)
	put(k(0), 1, 0x4)
	put(k(1), 0, 0xA)
	put(k(1), 1, 0x1)
	put(k(2), 0, 0x4)
	put(k(2), 2, 0x2)
	put(k(2), 40, 0x5)
	page[FP4CodeBytes*4+2*FP4Blocks+1] = 129 // k2's block 1: scale 4
	for row := 0; row < 2; row++ {
		for h := 0; h < 2; h++ {
			rec := q.Data[(row*2+h)*FP4TokenBytes : (row*2+h+1)*FP4TokenBytes]
			for b := 0; b < FP4Blocks; b++ {
				rec[FP4CodeBytes+b] = 127
			}
			if h == 0 {
				put(rec, 0, 0x2)
				put(rec, 1, 0x2)
			} else {
				put(rec, 0, 0xC)
				put(rec, 2, 0x1)
				put(rec, 40, 0x1)
			}
		}
	}
	return &difftest.Case{ID: "hand/fp4", Kernel: KernelName, Family: "hand", Params: p,
		Inputs: []*difftest.Tensor{q, w, cache, lens, table}, Outputs: p.Outputs()}
}

// TestHandWorkedFP4 pins the reference's bf16 bytes on the FP4 hand case;
// every legitimate f32 variant and the CUDA order reproduce them, and the
// tight-stride, FP4 and next_n mutants fail it.
func TestHandWorkedFP4(t *testing.T) {
	c := fp4HandCase()
	if err := Validate(c); err != nil {
		t.Fatal(err)
	}
	want := [8]uint16{0x3FC0, 0x4080, 0xFF80, 0xFF80, 0x4040, 0x4000, 0x4090, 0xFF80} // 1.5 4 −inf −inf | 3 2 4.5 −inf
	got := reference(t, c)
	for i, w := range want {
		if got.U16(i) != w {
			t.Errorf("logits[%d][%d] = 0x%04x (%g), want 0x%04x (%g)", i/4, i%4, got.U16(i), numeric.BF16ToF64(got.U16(i)), w, numeric.BF16ToF64(w))
		}
	}
	for _, v := range append(legitimate, variant{"cuda", cudaOrder}) {
		if failed, why := outcome(t, c, got, func(o []*difftest.Tensor) error { return runSim(c, o, v.sim) }); failed {
			t.Errorf("variant %s fails the hand case: %s", v.name, why)
		}
	}
	for _, name := range []string{"logits-tight-stride", "logits-fp4-nibble-swap", "logits-fp4-one-scale", "logits-mtp-shared-len"} {
		m := mutant(name, "")
		if failed, _ := outcome(t, c, got, func(o []*difftest.Tensor) error { return m.Run(c, o) }); !failed {
			t.Errorf("mutant %s passes the hand case", name)
		}
	}
}

// TestBF16BoundKnownAnswer: x = 1 + 3·2^-9 lies between the bf16 values 1
// and 1 + 2^-7; rounding to nearest gives 1 + 2^-7 (off by 2^-9), inside
// E + 2^-8·(|x| + E) + 2^-134; truncation gives 1 (off by 1.5·2^-8),
// outside it for a small f32 bound E.
func TestBF16BoundKnownAnswer(t *testing.T) {
	x, e := 1+3*0x1p-9, 1e-7
	b := bf16Bound(e, x)
	if want := e + 0x1p-8*(x+e) + 0x1p-134; b != want {
		t.Fatalf("bf16Bound = %g, want %g", b, want)
	}
	rne := numeric.BF16ToF64(numeric.BF16FromF64(x))
	if rne != 1+0x1p-7 || !(rne-x <= b) {
		t.Errorf("nearest even %g (off %g) not within %g", rne, rne-x, b)
	}
	if trunc := 1.0; !(x-trunc > b) {
		t.Errorf("truncation 1 (off %g) within %g", x-trunc, b)
	}
}

// TestV41ParamErrors: the new parameters' rules, each error naming the
// param; an explicit 0 is an error, not the default.
func TestV41ParamErrors(t *testing.T) {
	base := func(extra map[string]any) difftest.CaseSpec {
		p := map[string]any{"lengths": []any{int64(10)}, "H": int64(2)}
		for k, v := range extra {
			p[k] = v
		}
		return difftest.CaseSpec{Kernel: KernelName, Family: "gaussian", Name: "e", Params: p}
	}
	for _, tt := range []struct {
		extra map[string]any
		want  string
	}{
		{map[string]any{"next_n": int64(0)}, `param "next_n": must be in [1, 16] (omit it for 1), got 0`},
		{map[string]any{"next_n": int64(17)}, `"next_n": must be in [1, 16] (query rows per request), got 17`},
		{map[string]any{"page_stride": int64(0)}, `param "page_stride": must be ≥ the tight page size (omit it for tight pages), got 0`},
		{map[string]any{"page_stride": int64(8444)}, `"page_stride": must be in [the tight page size 132·P = 8448`},
		{map[string]any{"page_stride": int64(8450)}, `"page_stride": must be a multiple of 4 bytes`},
		{map[string]any{"store": "fp4", "page_stride": int64(4351)}, `"page_stride": must be in [the tight page size 68·P = 4352`},
		{map[string]any{"page_stride": int64(8448 + 1<<16 + 4)}, "+65536 bytes of padding"},
		{map[string]any{"logits_dtype": "f16"}, `"logits_dtype"`},
		{map[string]any{"store": "fp6"}, `"store"`},
	} {
		err := CheckSpec(base(tt.extra))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: got %v, want it to contain %q", tt.extra, err, tt.want)
		}
	}
	// Defaults: absent next_n, page_stride and logits_dtype are the V4 contract.
	if err := CheckSpec(base(map[string]any{"next_n": int64(1), "page_stride": int64(8448), "logits_dtype": "f32"})); err != nil {
		t.Errorf("explicit defaults: %v", err)
	}
	js := `{"store":"fp8","page_size":64,"heads":2,"clean":true,"batch":1,"stride":10,"max_pages":1,"num_pages":1`
	p, err := ParseParams(json.RawMessage(js + `}`))
	if err != nil || p.N() != 1 || p.Pitch() != 8448 || p.OutDType() != difftest.F32 {
		t.Errorf("absent fields: %+v, %v", p, err)
	}
	for _, f := range []string{"next_n", "page_stride"} {
		_, err := ParseParams(json.RawMessage(js + `,"` + f + `":0}`))
		if err == nil || !strings.Contains(err.Error(), f+": must be") || !strings.Contains(err.Error(), "explicit 0") {
			t.Errorf("explicit %s 0: got %v", f, err)
		}
	}
}

// TestV41ValidateShapes: with next_n > 1, q and seq_lens carry the next_n
// axis, weights and logits B·next_n rows; a V4-shaped seq_lens is named.
func TestV41ValidateShapes(t *testing.T) {
	c := mustCase(t, "gaussian", map[string]any{"lengths": []any{int64(5), int64(70)}, "H": int64(2), "next_n": int64(3), "store": "fp4", "page_stride": int64(4608), "logits_dtype": "bf16"})
	p := c.Params.(Params)
	if got := c.Input(NameQ).Shape; len(got) != 4 || got[1] != 3 || got[3] != FP4TokenBytes {
		t.Errorf("q shape %v", got)
	}
	if got := c.Outputs[0]; got.DType != difftest.BF16 || got.Shape[0] != 6 {
		t.Errorf("logits %s %v", got.DType, got.Shape)
	}
	lens := c.Input(NameSeqLens)
	for i, want := range []int32{3, 4, 5, 68, 69, 70} { // row r sees L − (next_n − 1 − r)
		if lens.I32(i) != want {
			t.Errorf("seq_lens[%d][%d] = %d, want %d", i/3, i%3, lens.I32(i), want)
		}
	}
	if cache := c.Input(NameCache); cache.Shape[1] != 4608 {
		t.Errorf("cache row %d, want page_stride 4608", cache.Shape[1])
	} else {
		for pg := 0; pg < p.NumPages; pg++ {
			for _, b := range cache.Data[pg*4608+p.PageBytes() : (pg+1)*4608] {
				if b != trapFP4Byte {
					t.Fatalf("page %d padding byte 0x%02x, want the poison 0x%02x", pg, b, trapFP4Byte)
				}
			}
		}
	}
	bad := *c
	bad.Inputs = append([]*difftest.Tensor(nil), c.Inputs...)
	bad.Inputs[3] = difftest.MustTensor(NameSeqLens, difftest.I32, 2)
	if err := Validate(&bad); err == nil || !strings.Contains(err.Error(), "seq_lens: shape must be [batch, next_n] = [2 3]") {
		t.Errorf("V4-shaped seq_lens: %v", err)
	}
}
