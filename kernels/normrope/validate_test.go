package normrope

import (
	"errors"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// validCase is a small valid case: 3 tokens, P = 2, 2 pages (4 slots),
// freqs with 5 positions.
func validCase() *difftest.Case {
	p := config(NormRMS, StyleInterleaved, 64, true, StoreFP8, ScalePlain, 2, 2)
	freqs := [][]float32{rotRow(1, 0), rotRow(0, 1), rotRow(1, 0), rotRow(0, 1), rotRow(1, 0)}
	return handCase(p, [][]float64{{1}, {2}, {3}}, nil, nil, freqs, []int64{0, 1, 4}, []int64{3, -1, 0})
}

func TestValidate(t *testing.T) {
	if err := Validate(validCase()); err != nil {
		t.Fatalf("valid case: %v", err)
	}
	setParams := func(f func(*Params)) func(*difftest.Case) {
		return func(c *difftest.Case) {
			p := c.Params.(Params)
			f(&p)
			c.Params = p
			c.Outputs = outputsOf(p)
		}
	}
	tests := []struct {
		rule   string
		mutate func(*difftest.Case)
		want   string // substring of the error text
	}{
		{"P not a power of two", setParams(func(p *Params) { p.PageSize = 3 }), "P: page size must be a power of two ≥ 1, got 3"},
		{"P zero", setParams(func(p *Params) { p.PageSize = 0 }), "P: page size must be a power of two ≥ 1, got 0"},
		{"eps zero", setParams(func(p *Params) { p.Eps = 0 }), "eps: must be finite and > 0, got 0"},
		{"eps negative", setParams(func(p *Params) { p.Eps = -1e-6 }), "eps: must be finite and > 0"},
		{"unknown norm", setParams(func(p *Params) { p.Norm = "batch" }), `norm: must be "rms" or "layer", got "batch"`},
		{"rope offset 32", setParams(func(p *Params) { p.RopeOffset = 32 }), "rope_offset: must be 0 or 64, got 32"},
		{"no pages", setParams(func(p *Params) { p.NumPages = 0 }), "num_pages: must be ≥ 1, got 0"},
		{"x dtype", func(c *difftest.Case) { c.Inputs[0] = difftest.MustTensor(NameX, difftest.F32, 3, Dim) }, "x: dtype must be BF16, got F32"},
		{"x too narrow", func(c *difftest.Case) { c.Inputs[0] = difftest.MustTensor(NameX, difftest.BF16, 3, 64) }, "x: row stride must be ≥ 128, got shape [3 64]"},
		{"weight length", func(c *difftest.Case) { c.Inputs[1] = difftest.MustTensor(NameWeight, difftest.F32, 127) }, "weight: shape must be [128], got [127]"},
		{"bias NaN", func(c *difftest.Case) { c.Inputs[2].SetU32(5, 0x7FC00000) }, "bias[5]: must be finite, got NaN"},
		{"freqs width", func(c *difftest.Case) { c.Inputs[3] = difftest.MustTensor(NameFreqs, difftest.F32, 5, 63) }, "freqs: shape must be [max_pos ≥ 1, 64], got [5 63]"},
		{"positions length", func(c *difftest.Case) { c.Inputs[4] = difftest.MustTensor(NamePositions, difftest.I64, 2) }, "positions: shape must be [3], got [2]"},
		{"out_loc dtype", func(c *difftest.Case) { c.Inputs[5] = difftest.MustTensor(NameOutLoc, difftest.I32, 3) }, "out_loc: dtype must be I64, got I32"},
		{"input order", func(c *difftest.Case) { c.Inputs[0], c.Inputs[1] = c.Inputs[1], c.Inputs[0] }, `inputs[0]: must be "x", got "weight"`},
		{"position negative", func(c *difftest.Case) { c.Inputs[4].SetI64(1, -1) }, "positions[1]: must be in [0, max_pos = 5), got -1"},
		{"position beyond the table", func(c *difftest.Case) { c.Inputs[4].SetI64(2, 5) }, "positions[2]: must be in [0, max_pos = 5), got 5"},
		{"out_loc below −1", func(c *difftest.Case) { c.Inputs[5].SetI64(1, -2) }, "out_loc[1]: must be −1 (skip) or a slot ≥ 0, got -2"},
		{"out_loc beyond the cache", func(c *difftest.Case) { c.Inputs[5].SetI64(0, 4) }, "out_loc[0]: slot 4 is beyond the cache (num_pages·P = 2·2 = 4 slots)"},
		{"duplicate out_loc", func(c *difftest.Case) { c.Inputs[5].SetI64(2, 3) }, "out_loc[2]: slot 3 duplicates out_loc[0]"},
		{"cache bytes", func(c *difftest.Case) { c.Outputs[0].Shape = []int{2, 256} }, "cache: must be in-out u8 [2 264] (fp8 store, P=2: page_bytes = 132·P = 264), got U8 [2 256]"},
		{"cache not in-out", func(c *difftest.Case) { c.Outputs[0].InOut = false }, "in-out=false"},
		{"params type", func(c *difftest.Case) { c.Params = map[string]any{} }, "params are map[string]interface {}, want normrope.Params"},
	}
	for _, tc := range tests {
		c := validCase()
		tc.mutate(c)
		err := Validate(c)
		if err == nil {
			t.Errorf("%s: Validate = nil, want an error containing %q", tc.rule, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q, want it to contain %q", tc.rule, err, tc.want)
		}
		var ie *difftest.InputError
		if tc.rule != "params type" && (!errors.As(err, &ie) || !errors.Is(err, difftest.ErrInvalidInput)) {
			t.Errorf("%s: error %T does not wrap *InputError / ErrInvalidInput", tc.rule, err)
		}
	}
	// The bf16 rule of the cache size: 256·P.
	c := validCase()
	p := c.Params.(Params)
	p.Store = StoreBF16
	c.Params = p
	if err := Validate(c); err == nil || !strings.Contains(err.Error(), "page_bytes = 256·P = 512") {
		t.Errorf("bf16 cache with fp8 shape: %v, want the 256·P rule", err)
	}
}

func TestNewCaseErrors(t *testing.T) {
	tests := []struct {
		family string
		params map[string]any
		want   string
	}{
		{"gaussian", map[string]any{"preset": "v5"}, `param "preset": must be one of v32, v4, v4-bf16, got "v5"`},
		{"gaussian", map[string]any{"Nn": int64(3)}, "unknown param(s) Nn"},
		{"gaussian", map[string]any{"P": int64(48)}, "P: page size must be a power of two ≥ 1, got 48"},
		{"gaussian", map[string]any{"N": int64(0)}, "N must be ≥ 1, got 0"},
		{"gaussian", map[string]any{"x_stride": int64(100)}, "x_stride must be ≥ 128, got 100"},
		{"gaussian", map[string]any{"N": int64(10), "P": int64(1), "num_pages": int64(5)}, "num_pages 5 holds 5 slots, family gaussian needs 11"},
		{"e4m3-midpoint", map[string]any{"preset": "v4"}, "needs hadamard = false"},
		{"e4m3-midpoint", map[string]any{"preset": "v32", "hadamard": false}, `needs norm = "rms"`},
		{"e4m3-max", map[string]any{"preset": "v4-bf16", "hadamard": false}, `needs store = "fp8"`},
		{"e4m3-midpoint", map[string]any{"hadamard": false, "scale_fmt": "ue8m0"}, `needs scale_fmt = "plain"`},
		{"uniform", nil, `unknown family "uniform"`},
	}
	for _, tc := range tests {
		spec := difftest.CaseSpec{Kernel: KernelName, Family: tc.family, Name: "bad", Params: tc.params}
		_, err := NewCase(spec, 1, 1)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: error %v, want it to contain %q", tc.family, tc.params, err, tc.want)
		}
	}
}
