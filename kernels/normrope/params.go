// Configuration of the fused norm + RoPE + Hadamard + paged store kernel
// (DESIGN.md §4): the switches of kd_normrope_params in normrope.h and the
// three model presets.

package normrope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// Dim is the indexer key width: every token has 128 values (DESIGN.md §4).
const Dim = 128

// RopeDim is the number of rotated dimensions, 64 (32 pairs), the
// qk_rope_head_dim of both DeepSeek model families.
const RopeDim = 64

// Preset names (DESIGN.md §4).
const (
	PresetV32    = "v32"     // DeepSeek-V3.2: LayerNorm, RoPE on dims [0,64) neox, Hadamard, FP8 plain scale
	PresetV4     = "v4"      // DeepSeek-V4: RMSNorm, RoPE on dims [64,128) interleaved, Hadamard, FP8 plain scale
	PresetV4BF16 = "v4-bf16" // v4 with the BF16 store
)

// Params is the configuration of one norm_rope_store case: everything the
// kernel needs besides the input tensors. It is what Case.Params holds, what
// exec metadata and capture files carry as JSON, and what FromTensors reads
// back. The field values mirror the enums of normrope.h.
type Params struct {
	Preset     string  `json:"preset,omitempty"` // the preset it started from, informational
	Norm       string  `json:"norm"`             // "rms" (RMSNorm) or "layer" (LayerNorm)
	RopeOffset int     `json:"rope_offset"`      // first rotated dimension: 0 or 64
	RopeStyle  string  `json:"rope_style"`       // "neox": pairs (j, j+32); "interleaved": pairs (2j, 2j+1)
	Hadamard   bool    `json:"hadamard"`         // apply the 128-point Walsh–Hadamard transform
	Store      string  `json:"store"`            // "fp8" (e4m3fn codes + f32 scale) or "bf16"
	ScaleFmt   string  `json:"scale_fmt"`        // FP8 only: "plain" or "ue8m0" (scale rounded up to 2^k)
	PageSize   int     `json:"page_size"`        // P, tokens per cache page, a power of two ≥ 1
	NumPages   int     `json:"num_pages"`        // pages in the cache, ≥ 1
	Eps        float32 `json:"eps"`              // norm epsilon, finite and > 0 (1e-6 in both families)
	Model      string  `json:"model"`            // YaRN table of the freqs input: "v32" or "v4" (informational for replay)
}

// Enumerated values of Params.
const (
	NormRMS          = "rms"
	NormLayer        = "layer"
	StyleNeox        = "neox"
	StyleInterleaved = "interleaved"
	StoreFP8         = "fp8"
	StoreBF16        = "bf16"
	ScalePlain       = "plain"
	ScaleUE8M0       = "ue8m0"
)

// DefaultEps is the norm epsilon of both model families, 1e-6 (as f32).
const DefaultEps float32 = 1e-6

// Preset returns the configuration of a named preset (DESIGN.md §4) with
// page size p and one page, or an error for an unknown name:
//
//	v32     = layer, rope_offset 0,  neox,        hadamard on, fp8 plain, YaRN v32
//	v4      = rms,   rope_offset 64, interleaved, hadamard on, fp8 plain, YaRN v4
//	v4-bf16 = v4 with the BF16 store
func Preset(name string, p int) (Params, error) {
	base := Params{Preset: name, Hadamard: true, Store: StoreFP8, ScaleFmt: ScalePlain, PageSize: p, NumPages: 1, Eps: DefaultEps}
	switch name {
	case PresetV32:
		base.Norm, base.RopeOffset, base.RopeStyle, base.Model = NormLayer, 0, StyleNeox, ModelV32
	case PresetV4, PresetV4BF16:
		base.Norm, base.RopeOffset, base.RopeStyle, base.Model = NormRMS, 64, StyleInterleaved, ModelV4
		if name == PresetV4BF16 {
			base.Store = StoreBF16
		}
	default:
		return Params{}, fmt.Errorf("unknown preset %q (want %s, %s or %s)", name, PresetV32, PresetV4, PresetV4BF16)
	}
	return base, nil
}

// Check reports the first configuration error as an *InputError naming the
// parameter and the rule: unknown enum values, rope_offset not 0 or 64, P
// not a power of two ≥ 1, num_pages < 1 or a cache over 2^62 bytes, eps not
// finite or not > 0, an unknown YaRN model.
func (p Params) Check() error {
	switch {
	case p.Norm != NormRMS && p.Norm != NormLayer:
		return difftest.Inputf("norm", nil, "must be %q or %q, got %q", NormRMS, NormLayer, p.Norm)
	case p.RopeOffset != 0 && p.RopeOffset != 64:
		return difftest.Inputf("rope_offset", nil, "must be 0 or 64, got %d", p.RopeOffset)
	case p.RopeStyle != StyleNeox && p.RopeStyle != StyleInterleaved:
		return difftest.Inputf("rope_style", nil, "must be %q or %q, got %q", StyleNeox, StyleInterleaved, p.RopeStyle)
	case p.Store != StoreFP8 && p.Store != StoreBF16:
		return difftest.Inputf("store", nil, "must be %q or %q, got %q", StoreFP8, StoreBF16, p.Store)
	case p.ScaleFmt != ScalePlain && p.ScaleFmt != ScaleUE8M0:
		return difftest.Inputf("scale_fmt", nil, "must be %q or %q, got %q", ScalePlain, ScaleUE8M0, p.ScaleFmt)
	case p.PageSize < 1 || bits.OnesCount(uint(p.PageSize)) != 1:
		return difftest.Inputf("P", nil, "page size must be a power of two ≥ 1, got %d", p.PageSize)
	case p.NumPages < 1:
		return difftest.Inputf("num_pages", nil, "must be ≥ 1, got %d", p.NumPages)
	case p.NumPages > (1<<62)/p.PageBytes():
		return difftest.Inputf("num_pages", nil, "%d pages of %d bytes overflow the cache size", p.NumPages, p.PageBytes())
	case math.IsNaN(float64(p.Eps)) || math.IsInf(float64(p.Eps), 0) || p.Eps <= 0:
		return difftest.Inputf("eps", nil, "must be finite and > 0, got %g", p.Eps)
	case p.Model != ModelV32 && p.Model != ModelV4:
		return difftest.Inputf("model", nil, "must be %q or %q, got %q", ModelV32, ModelV4, p.Model)
	}
	return nil
}

// Log2P returns log2 of the page size (PageSize must be a power of two).
func (p Params) Log2P() int { return bits.TrailingZeros(uint(p.PageSize)) }

// PageBytes returns the bytes of one cache page: 132·P for FP8 (128 code
// bytes and a 4-byte f32 scale per token), 256·P for BF16.
func (p Params) PageBytes() int {
	if p.Store == StoreBF16 {
		return 2 * Dim * p.PageSize
	}
	return (Dim + 4) * p.PageSize
}

// NumSlots returns num_pages·P, the number of token slots in the cache.
func (p Params) NumSlots() int { return p.NumPages * p.PageSize }

// String renders the configuration in one line, for messages.
func (p Params) String() string {
	h := "off"
	if p.Hadamard {
		h = "on"
	}
	s := fmt.Sprintf("norm=%s rope=%s@%d hadamard=%s store=%s", p.Norm, p.RopeStyle, p.RopeOffset, h, p.Store)
	if p.Store == StoreFP8 {
		s += "/" + p.ScaleFmt
	}
	return s + fmt.Sprintf(" P=%d pages=%d eps=%g", p.PageSize, p.NumPages, p.Eps)
}

// ParseParams decodes the JSON form of Params (capture files, exec
// metadata) and checks it. Unknown fields are errors.
func ParseParams(raw json.RawMessage) (Params, error) {
	var p Params
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Params{}, fmt.Errorf("norm_rope_store params: %w", err)
	}
	if err := p.Check(); err != nil {
		return Params{}, err
	}
	return p, nil
}
