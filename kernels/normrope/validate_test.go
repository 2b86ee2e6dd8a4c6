package normrope

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
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
		{"P not a power of two", setParams(func(p *Params) { p.PageSize = 3 }), "P: page size must be a power of two in [1, 65536] (MaxPageSize), got 3"},
		{"P zero", setParams(func(p *Params) { p.PageSize = 0 }), "P: page size must be a power of two in [1, 65536] (MaxPageSize), got 0"},
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
		// Size limits: a capture cannot make the harness divide by zero or
		// allocate past the limits.
		{"P 2^62 (page_bytes overflowed to 0)", setParams(func(p *Params) { p.PageSize = 1 << 62 }), "P: page size must be a power of two in [1, 65536] (MaxPageSize), got 4611686018427387904"},
		{"P 2^17", setParams(func(p *Params) { p.PageSize = 1 << 17 }), "(MaxPageSize), got 131072"},
		{"num_pages 1e8", setParams(func(p *Params) { p.NumPages = 100000000 }), "num_pages: 100000000 pages of 264 bytes (fp8 store, P=2) exceed the cache limit of 1073741824 bytes (MaxCacheBytes): at most 4067203 pages"},
		{"num_pages max int", setParams(func(p *Params) { p.NumPages = math.MaxInt }), "exceed the cache limit of 1073741824 bytes"},
		{"x stride 2^17", func(c *difftest.Case) { c.Inputs[0] = difftest.MustTensor(NameX, difftest.BF16, 3, 1<<17) }, "x: row stride x_stride must be in [128, 65536] (MaxXStride), got 131072"},
		{"freqs rows 2^21+1", func(c *difftest.Case) { c.Inputs[3] = difftest.MustTensor(NameFreqs, difftest.F32, 1<<21+1, RopeDim) }, "freqs: max_pos (rows of freqs) must be in [1, 2097152] (MaxPositions), got 2097153"},
		// Meaningless or silently altered configurations.
		{"bf16 store with ue8m0", setParams(func(p *Params) { p.Store, p.ScaleFmt = StoreBF16, ScaleUE8M0 }), `scale_fmt: must be "plain" with store "bf16" (the BF16 store has no scale; "ue8m0" applies to the FP8 store only), got "ue8m0"`},
		{"eps subnormal", setParams(func(p *Params) { p.Eps = 1e-40 }), "eps: must be a normal f32 value in [2^-126, 3.4028235e+38] (the kernel's type), got 1e-40 (as f32: 1e-40)"},
		{"preset label on another configuration", setParams(func(p *Params) { p.Preset = PresetV4; p.RopeOffset = 0; p.RopeStyle = StyleNeox }),
			`preset: "v4" does not match the configuration (norm=rms rope=neox@0 hadamard=on store=fp8/plain P=2 pages=2 eps=1e-06 model=v4); the preset label is set only when every switch, eps and model equal the preset's (this one equals no preset)`},
		{"unknown preset label", setParams(func(p *Params) { p.Preset = "v5" }), `preset: unknown preset "v5"`},
		{"preset label on another model", setParams(func(p *Params) {
			p.Preset, p.Norm, p.RopeStyle, p.RopeOffset, p.Model = PresetV4, NormRMS, StyleInterleaved, 64, ModelV32
		}),
			`preset: "v4" does not match the configuration (norm=rms rope=interleaved@64 hadamard=on store=fp8/plain P=2 pages=2 eps=1e-06 model=v32)`},

		// freqs rows a token reads must be finite; position 2 is unread.
		{"freqs NaN at a used row", func(c *difftest.Case) { c.Inputs[3].SetU32(4*RopeDim+7, 0x7FC00000) }, "freqs[4][7]: must be finite in every row a token reads (positions[2] = 4), got NaN"},
		{"freqs inf at a used row", func(c *difftest.Case) { c.Inputs[3].SetF32(1*RopeDim, float32(math.Inf(-1))) }, "freqs[1][0]: must be finite in every row a token reads (positions[1] = 1), got -Inf"},
		// Every written token don't care: the case would compare nothing.
		{"every written token NaN", func(c *difftest.Case) {
			c.Inputs[0].SetU16(0*Dim+3, 0x7FC0)
			c.Inputs[0].SetU16(2*Dim+0, 0xFF80)
		}, "x[0]: every token with out_loc ≥ 0 is don't care (2 of 3; this one: x[3] is not finite), so the case would compare no value"},
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
	// Valid edges: an unread freqs row may hold NaN; a case where only the
	// unwritten token is don't care, one where no token writes (canaries
	// only), and an all-don't-care case of the nonfinite family pass.
	valid := []struct {
		name   string
		mutate func(*difftest.Case)
	}{
		{"NaN in an unread freqs row", func(c *difftest.Case) { c.Inputs[3].SetU32(2*RopeDim, 0x7FC00000) }},
		{"the skipped token NaN", func(c *difftest.Case) { c.Inputs[0].SetU16(1*Dim, 0x7FC0) }},
		{"no token writes", func(c *difftest.Case) {
			for i := 0; i < 3; i++ {
				c.Inputs[5].SetI64(i, -1)
			}
		}},
		{"nonfinite family all don't care", func(c *difftest.Case) {
			c.Family = "nonfinite"
			c.Inputs[0].SetU16(0*Dim, 0x7F80)
			c.Inputs[0].SetU16(2*Dim, 0x7FA0)
		}},
	}
	for _, v := range valid {
		c := validCase()
		v.mutate(c)
		if err := Validate(c); err != nil {
			t.Errorf("%s: %v, want valid", v.name, err)
		}
	}
}

func TestNewCaseErrors(t *testing.T) {
	tests := []struct {
		family string
		params map[string]any
		want   string
	}{
		{"gaussian", map[string]any{"preset": "v5"}, `param "preset": must be one of v32, v4, v4-bf16, v4-fp4, got "v5"`},
		{"gaussian", map[string]any{"Nn": int64(3)}, "unknown param(s) Nn"},
		{"gaussian", map[string]any{"P": int64(48)}, "P: page size must be a power of two in [1, 65536] (MaxPageSize), got 48"},
		{"gaussian", map[string]any{"N": int64(0)}, "N: token count N must be in [1, 4194304] (MaxTokens), got 0"},
		{"gaussian", map[string]any{"x_stride": int64(100)}, "x_stride: row stride x_stride must be in [128, 65536] (MaxXStride), got 100"},
		{"gaussian", map[string]any{"N": int64(10), "P": int64(1), "num_pages": int64(5)}, "num_pages: 5 pages of P=1 hold 5 slots; family gaussian needs 11 for N=10"},
		{"e4m3-midpoint", map[string]any{"preset": "v4"}, "needs hadamard = false"},
		{"e4m3-midpoint", map[string]any{"preset": "v32", "hadamard": false}, `needs norm = "rms"`},
		{"e4m3-max", map[string]any{"preset": "v4-bf16", "hadamard": false}, `needs store = "fp8"`},
		{"e4m3-midpoint", map[string]any{"hadamard": false, "scale_fmt": "ue8m0"}, `needs scale_fmt = "plain"`},
		{"uniform", nil, `unknown family "uniform"`},
		// Size limits, checked before anything is drawn or allocated.
		{"gaussian", map[string]any{"P": int64(4611686018427387904)}, "P: page size must be a power of two in [1, 65536] (MaxPageSize), got 4611686018427387904"},
		{"slots", map[string]any{"P": int64(1 << 30)}, "(MaxPageSize), got 1073741824"},
		{"gaussian", map[string]any{"N": int64(1e11)}, "N: token count N must be in [1, 4194304] (MaxTokens), got 100000000000"},
		{"gaussian", map[string]any{"x_stride": int64(1e11)}, "x_stride: row stride x_stride must be in [128, 65536] (MaxXStride), got 100000000000"},
		{"gaussian", map[string]any{"N": int64(1 << 20), "x_stride": int64(1024)}, "N: x of N·x_stride = 1048576·1024 bf16 values is 2147483648 bytes, over the limit of 1073741824 (MaxXBytes)"},
		{"gaussian", map[string]any{"max_pos": int64(1 << 30)}, "max_pos: max_pos (rows of freqs) must be in [1, 2097152] (MaxPositions), got 1073741824"},
		{"gaussian", map[string]any{"num_pages": int64(1e8)}, "num_pages: 100000000 pages of 8448 bytes (fp8 store, P=64) exceed the cache limit of 1073741824 bytes (MaxCacheBytes): at most 127100 pages at this page size"},
		{"gaussian", map[string]any{"num_pages": int64(0)}, "num_pages: must be ≥ 1, got 0"},
		{"gaussian", map[string]any{"preset": "v4-bf16", "N": int64(4000000), "P": int64(1)}, "N = 4000000 needs 4500000 cache slots of P=1: invalid input: num_pages: 4500000 pages of 256 bytes (bf16 store, P=1) exceed the cache limit"},
		// Meaningless or silently altered configurations.
		{"gaussian", map[string]any{"store": "bf16", "scale_fmt": "ue8m0"}, `scale_fmt: must be "plain" with store "bf16"`},
		{"gaussian", map[string]any{"eps": 1e-50}, "eps: must be a normal f32 value in [2^-126, 3.4028235e+38] (the kernel's type), got 1e-50 (as f32: 0)"},
		{"gaussian", map[string]any{"eps": 1e39}, "got 1e+39 (as f32: +Inf)"},
		{"gaussian", map[string]any{"eps": -1e-6}, "eps: must be finite and > 0, got -1e-06"},
	}
	for _, tc := range tests {
		spec := difftest.CaseSpec{Kernel: KernelName, Family: tc.family, Name: "bad", Params: tc.params}
		_, err := NewCase(spec, 1, 1)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: error %v, want it to contain %q", tc.family, tc.params, err, tc.want)
		}
	}
}

func TestParseParams(t *testing.T) {
	good := `{"norm":"rms","rope_offset":64,"rope_style":"interleaved","hadamard":true,"store":"fp8","scale_fmt":"plain","page_size":64,"num_pages":2,"eps":1e-06,"model":"v4"}`
	p, err := ParseParams([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if p.Eps != DefaultEps || p.PageSize != 64 || p.Preset != "" {
		t.Errorf("parsed %+v", p)
	}
	with := func(field, value string) string {
		return strings.Replace(good, `"`+field+`":`, `"`+field+`":`+value+`,"_`+field+`":`, 1)
	}
	tests := []struct {
		name, raw, want string
	}{
		{"page_size 2^62 (page_bytes overflowed to 0)", strings.Replace(good, `"page_size":64`, `"page_size":4611686018427387904`, 1), "P: page size must be a power of two in [1, 65536] (MaxPageSize), got 4611686018427387904"},
		{"num_pages 1e8", strings.Replace(good, `"num_pages":2`, `"num_pages":100000000`, 1), "num_pages: 100000000 pages of 8448 bytes (fp8 store, P=64) exceed the cache limit"},
		{"eps underflows f32", strings.Replace(good, `"eps":1e-06`, `"eps":1e-50`, 1), "eps: must be a normal f32 value in [2^-126, 3.4028235e+38] (the kernel's type), got 1e-50 (as f32: 0)"},
		{"eps overflows f32", strings.Replace(good, `"eps":1e-06`, `"eps":1e40`, 1), "got 1e+40 (as f32: +Inf)"},
		{"eps missing", strings.Replace(good, `,"eps":1e-06`, ``, 1), "eps: missing"},
		{"eps a string", strings.Replace(good, `"eps":1e-06`, `"eps":"tiny"`, 1), `norm_rope_store params: param "eps": must be a number, got the string "tiny"`},
		{"norm a number (a field of the embedded Params)", strings.Replace(good, `"norm":"rms"`, `"norm":1`, 1), `norm_rope_store params: param "norm": must be a string, got a number`},
		{"bf16 with ue8m0", strings.Replace(strings.Replace(good, `"store":"fp8"`, `"store":"bf16"`, 1), `"scale_fmt":"plain"`, `"scale_fmt":"ue8m0"`, 1), `scale_fmt: must be "plain" with store "bf16"`},
		{"preset label on a neox configuration", strings.Replace(strings.Replace(good, `{`, `{"preset":"v4",`, 1), `"rope_style":"interleaved"`, `"rope_style":"neox"`, 1), `preset: "v4" does not match the configuration`},
		{"unknown field", with("norm", `"rms"`), `unknown field "_norm"`},
	}
	for _, tc := range tests {
		_, err := ParseParams([]byte(tc.raw))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	// A correctly labelled preset is kept.
	if p, err := ParseParams([]byte(strings.Replace(good, `{`, `{"preset":"v4",`, 1))); err != nil || p.Preset != PresetV4 {
		t.Errorf("v4 label: %+v, %v", p, err)
	}
	// The suite's spellings of the defaults, "f32" and "all", are the
	// defaults in a capture too (a capture written with the suite's
	// vocabulary was refused), stored as absent; other values stay errors.
	for _, tc := range []struct{ extra, im, st, err string }{
		{`"intermediate":"f32",`, "", "", ""},
		{`"stages":"all",`, "", "", ""},
		{`"intermediate":"bf16-once",`, IntermediateBF16Once, "", ""},
		{`"intermediate":"f32","stages":"store",`, "", StagesStore, ""},
		{`"intermediate":"F32",`, "", "", `intermediate: must be "f32", "bf16", "bf16-once" or absent`},
		{`"stages":"none",`, "", "", `stages: must be "all", "store" or absent`},
	} {
		p, err := ParseParams([]byte(strings.Replace(good, `{`, `{`+tc.extra, 1)))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.extra, err, tc.err)
		case tc.err == "" && (err != nil || p.Intermediate != tc.im || p.Stages != tc.st):
			t.Errorf("%s: intermediate %q stages %q (%v), want %q %q", tc.extra, p.Intermediate, p.Stages, err, tc.im, tc.st)
		}
	}
}

// TestPresetLabel: a case's preset label names the configuration it
// equals, and nothing when an override leaves every preset.
func TestPresetLabel(t *testing.T) {
	tests := []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"preset": "v4"}, PresetV4},
		{map[string]any{"preset": "v32"}, PresetV32},
		{map[string]any{"preset": "v4-bf16"}, PresetV4BF16},
		{map[string]any{"preset": "v4", "store": "bf16"}, PresetV4BF16},                    // the override lands on another preset
		{map[string]any{"preset": "v4", "P": int64(1), "num_pages": int64(500)}, PresetV4}, // P and num_pages are free
		{map[string]any{"preset": "v4", "norm": "rms", "rope_offset": int64(0), "rope_style": "neox"}, ""},
		{map[string]any{"preset": "v4", "scale_fmt": "ue8m0"}, ""},
		{map[string]any{"preset": "v4", "eps": 1e-5}, ""},
		{map[string]any{"preset": "v32", "model": "v4"}, ""},
		{map[string]any{"preset": "v32", "hadamard": false}, ""},
	}
	for _, tc := range tests {
		tc.params["N"] = int64(9)
		c, err := NewCase(difftest.CaseSpec{Kernel: KernelName, Family: "gaussian", Name: "label", Params: tc.params}, 1, 1)
		if err != nil {
			t.Fatalf("%v: %v", tc.params, err)
		}
		p := c.Params.(Params)
		if p.Preset != tc.want {
			t.Errorf("%v: preset label %q, want %q", tc.params, p.Preset, tc.want)
		}
		raw := difftest.MarshalParams(c)
		if tc.want == "" && strings.Contains(string(raw), `"preset"`) {
			t.Errorf("%v: params JSON %s carries a preset", tc.params, raw)
		}
		if _, err := ParseParams(raw); err != nil {
			t.Errorf("%v: params JSON %s does not parse back: %v", tc.params, raw, err)
		}
	}
}

// TestCheckSpecAgreesWithNewCase: CheckSpec reports exactly NewCase's
// errors, without drawing.
func TestCheckSpecAgreesWithNewCase(t *testing.T) {
	specs := []difftest.CaseSpec{
		{Family: "gaussian", Params: map[string]any{"N": 1e11}},
		{Family: "gaussian", Params: map[string]any{"P": int64(3)}},
		{Family: "e4m3-midpoint", Params: map[string]any{"preset": "v4"}},
		{Family: "gaussian", Params: map[string]any{"Nn": int64(3)}},
		{Family: "nope"},
		{Family: "gaussian", Params: map[string]any{"N": int64(9)}},
		{Family: "slots", Params: map[string]any{"N": int64(9), "P": int64(1), "num_pages": int64(19)}},
		{Family: "slots", Params: map[string]any{"N": int64(9), "P": int64(1), "num_pages": int64(10)}},
	}
	for _, spec := range specs {
		spec.Kernel, spec.Name = KernelName, "spec"
		kerneltest.CheckSpecAgrees(t, Kernel{}, spec)
	}
}
