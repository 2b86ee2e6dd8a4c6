package logits

import (
	"errors"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// Each rule of Validate, broken once on an otherwise valid case; the
// error names the tensor, the index and the rule.
func TestValidateRules(t *testing.T) {
	base := func(store string) *difftest.Case {
		return mustCaseQuiet(t, map[string]any{"lengths": []any{int64(130), int64(5)}, "H": int64(2), "P": int64(64), "store": store})
	}
	setParams := func(c *difftest.Case, f func(p *Params)) {
		p := c.Params.(Params)
		f(&p)
		c.Params = p
	}
	tests := []struct {
		name  string
		store string
		edit  func(c *difftest.Case)
		want  string
	}{
		{"P not a power of two", StoreFP8, func(c *difftest.Case) { setParams(c, func(p *Params) { p.PageSize = 48 }) },
			"P: page size must be a power of two in [1, 65536] (MaxPageSize), got 48"},
		{"H out of range", StoreFP8, func(c *difftest.Case) { setParams(c, func(p *Params) { p.Heads = 129 }) },
			"H: heads must be in [1, 128], got 129"},
		{"H zero", StoreFP8, func(c *difftest.Case) { setParams(c, func(p *Params) { p.Heads = 0 }) },
			"H: heads must be in [1, 128], got 0"},
		{"accum_bits", StoreFP8, func(c *difftest.Case) { setParams(c, func(p *Params) { p.AccumBits = 32 }) },
			"accum_bits: must be in [4, 24]"},
		{"unknown store", StoreFP8, func(c *difftest.Case) { setParams(c, func(p *Params) { p.Store = "fp6" }) },
			`store: must be "fp8", "bf16" or "fp4", got "fp6"`},
		{"cache of the other store", StoreFP8, func(c *difftest.Case) {
			setParams(c, func(p *Params) { p.Store = StoreBF16 })
			q := c.Inputs[0]
			c.Inputs[0] = difftest.MustTensor(NameQ, difftest.BF16, q.Shape...)
		}, "cache: shape must be [num_pages = 4, 256·P = 16384], got [4 8448] (wrong cache shape for the bf16 store; that is the page size of the fp8 store)"},
		{"q of the other dtype", StoreFP8, func(c *difftest.Case) { c.Inputs[0] = difftest.MustTensor(NameQ, difftest.BF16, 2, 2, 128) },
			"q: dtype must be U8, got BF16"},
		{"weights of other heads", StoreFP8, func(c *difftest.Case) { c.Inputs[1] = difftest.MustTensor(NameWeights, difftest.F32, 2, 3) },
			"weights: shape must be [batch, H] = [2 2], got [2 3]"},
		{"inputs out of order", StoreFP8, func(c *difftest.Case) { c.Inputs[0], c.Inputs[1] = c.Inputs[1], c.Inputs[0] },
			`inputs[0]: must be "q", got "weights"`},
		{"stride below the longest row", StoreFP8, func(c *difftest.Case) { c.Input(NameSeqLens).SetI32(1, 131) },
			"seq_lens[1]: 131 keys exceed the logits row stride 130 (the stride must hold the longest row)"},
		{"negative length", StoreFP8, func(c *difftest.Case) { c.Input(NameSeqLens).SetI32(0, -1) },
			"seq_lens[0]: must be ≥ 0, got -1"},
		{"page table too short", StoreFP8, func(c *difftest.Case) {
			setParams(c, func(p *Params) { p.MaxPages = 1 })
			c.Inputs[4] = difftest.MustTensor(NamePageTable, difftest.I32, 2, 1)
		}, "page_table[0]: too short: 130 keys at P=64 need ceil(130/64) = 3 pages, max_pages is 1"},
		{"slot beyond the cache", StoreFP8, func(c *difftest.Case) { c.Input(NamePageTable).SetI32(1, 4) },
			"page_table[0][1]: page 4 puts slots [256, 320) beyond the cache (num_pages·P = 4·64 = 256 slots); ids must be in [0, 4)"},
		{"negative page id", StoreFP8, func(c *difftest.Case) { c.Input(NamePageTable).SetI32(3, -1) },
			"page_table[1][0]: page -1 puts slots [-64, 0) beyond the cache"},
		{"NaN query code", StoreFP8, func(c *difftest.Case) { c.Input(NameQ).Data[128+5] = 0xFF },
			"q[0][1][5]: must be finite (the query, not a stored key), got NaN (bits 0xff)"},
		{"inf bf16 query", StoreBF16, func(c *difftest.Case) { c.Input(NameQ).SetU16(256+7, 0x7F80) },
			"q[1][0][7]: must be finite (the query, not a stored key), got +Inf (bits 0x7f80)"},
		{"NaN weight", StoreFP8, func(c *difftest.Case) { c.Input(NameWeights).SetU32(3, 0x7FC00000) },
			"weights[1][1]: must be finite, got NaN"},
		{"in-out logits", StoreFP8, func(c *difftest.Case) { c.Outputs[0].InOut = true },
			"logits: must be f32 [batch = 2, stride = 130], not in-out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base(tt.store)
			tt.edit(c)
			err := Validate(c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v\nwant it to contain %q", err, tt.want)
			}
			if !errors.Is(err, difftest.ErrInvalidInput) {
				t.Errorf("%v does not wrap ErrInvalidInput", err)
			}
		})
	}
}

// mustCaseQuiet draws a gaussian case with distinct pages 0..n−1 in
// order (identity of the compact pages), for edits by hand.
func mustCaseQuiet(t *testing.T, params map[string]any) *difftest.Case {
	t.Helper()
	params["pages"] = PagesDistinct
	return mustCase(t, "gaussian", params)
}

// Stored keys may hold anything: NaN codes and non-finite scales make the
// position don't care, not the case invalid; Check skips it and says so.
func TestDontCareKeys(t *testing.T) {
	c := mustCase(t, "gaussian", map[string]any{"lengths": []any{int64(3)}, "H": int64(2), "P": int64(4), "pages": PagesIdentity})
	cache := c.Input(NameCache)
	cache.Data[5] = 0x7F                                       // slot 0: a NaN code
	copy(cache.Data[128*4+4:], []byte{0x00, 0x00, 0x80, 0x7F}) // slot 1: scale +inf
	if err := Validate(c); err != nil {
		t.Fatal(err)
	}
	want := reference(t, c)
	got := newLogits(c)
	copy(got.Data, want.Data)
	got.SetF32(0, 12345) // don't care: any value passes
	got.SetU32(1, 0x7FC00000)
	r := Check(c, []*difftest.Tensor{got}, []*difftest.Tensor{want})
	if r.Failed() || r.Metrics["dont_care"] != 2 || r.Metrics["checked"] != 1 {
		t.Fatalf("%v %s %v", r.Class, r.Message, r.Metrics)
	}
	got.SetF32(2, got.F32(2)*1.01) // the specified position still is checked
	if r := Check(c, []*difftest.Tensor{got}, []*difftest.Tensor{want}); r.Class != difftest.Mismatch {
		t.Fatalf("a 1%% error on the checked position: %v", r.Class)
	}
}
