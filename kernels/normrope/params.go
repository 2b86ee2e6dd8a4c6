// Configuration of the fused norm + RoPE + Hadamard + paged store kernel
// (docs/contracts/norm_rope_store.md): the switches of kd_normrope_params in normrope.h and the
// three model presets.

package normrope

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// Dim is the indexer key width: every token has 128 values (docs/contracts/norm_rope_store.md).
const Dim = 128

// RopeDim is the number of rotated dimensions, 64 (32 pairs), the
// qk_rope_head_dim of both DeepSeek model families.
const RopeDim = 64

// Preset names (docs/contracts/norm_rope_store.md).
const (
	PresetV32    = "v32"     // DeepSeek-V3.2: LayerNorm, RoPE on dims [0,64) neox, Hadamard, FP8 plain scale
	PresetV4     = "v4"      // DeepSeek-V4: RMSNorm, RoPE on dims [64,128) interleaved, Hadamard, FP8 plain scale
	PresetV4BF16 = "v4-bf16" // v4 with the BF16 store
	PresetV4FP4  = "v4-fp4"  // DeepSeek-V4.1 FP4 index keys: v4 without the Hadamard, FP4 store (ue8m0 block scales)
)

// Params is the configuration of one norm_rope_store case: everything the
// kernel needs besides the input tensors. It is what Case.Params holds, what
// exec metadata and capture files carry as JSON, and what FromTensors reads
// back. The field values mirror the enums of normrope.h.
type Params struct {
	Preset     string  `json:"preset,omitempty"` // the preset this configuration equals exactly (MatchPreset), or empty
	Norm       string  `json:"norm"`             // "rms" (RMSNorm) or "layer" (LayerNorm)
	RopeOffset int     `json:"rope_offset"`      // first rotated dimension: 0 or 64
	RopeStyle  string  `json:"rope_style"`       // "neox": pairs (j, j+32); "interleaved": pairs (2j, 2j+1)
	Hadamard   bool    `json:"hadamard"`         // apply the 128-point Walsh–Hadamard transform
	Store      string  `json:"store"`            // "fp8" (e4m3fn codes + f32 scale), "bf16", or "fp4" (e2m1 codes + four ue8m0 block scales)
	ScaleFmt   string  `json:"scale_fmt"`        // FP8: "plain" or "ue8m0" (scale rounded up to 2^k); BF16: "plain"; FP4: "ue8m0"
	PageSize   int     `json:"page_size"`        // P, tokens per cache page, a power of two in [1, MaxPageSize]
	NumPages   int     `json:"num_pages"`        // pages in the cache, ≥ 1, num_pages·page_bytes ≤ MaxCacheBytes
	Eps        float32 `json:"eps"`              // norm epsilon, a positive normal f32 (1e-6 in both families)
	Model      string  `json:"model"`            // YaRN table of the freqs input: "v32" or "v4", or "" in a capture of a live call (informational for replay)
	// Intermediate is the declared precision between the stages: "" (f32
	// throughout, the contract's default), "bf16" (the 128 values
	// rounded to bf16 after the norm, after RoPE and after the Hadamard
	// transform, as SGLang's unfused V3.2 path does) or "bf16-once" (norm,
	// RoPE and the Hadamard in f32, then the 128 values rounded to bf16
	// once, just before they are quantised or stored, as SGLang's fused
	// V3.2 indexer_k kernel does). The bound follows it (bound.go); the
	// reference does not.
	Intermediate string `json:"intermediate,omitempty"`
	// Stages is which steps of the contract the kernel performs: ""
	// (every step: norm, RoPE, the Hadamard when on, the store) or
	// "store" (x holds the keys already normed, rotated and mixed: the
	// kernel only quantises and stores them, as SGLang's DSv4 indexer
	// store does). With "store" the reference's z is x itself (the
	// norm, RoPE and Hadamard switches are ignored), and the bound has no
	// arithmetic before the store (bound.go).
	Stages string `json:"stages,omitempty"`
}

// Values of Params.Stages as suite params give them ("all" is stored as
// the empty string, the default).
const (
	StagesAll   = "all"
	StagesStore = "store"
)

// Values of Params.Intermediate as suite params give them ("f32" is
// stored as the empty string, the default).
const (
	IntermediateF32  = "f32"  // f32 between the stages: the contract
	IntermediateBF16 = "bf16" // bf16 after the norm, after RoPE and after the Hadamard (a chain of bf16 ops)
	// IntermediateBF16Once is one bf16 rounding: norm, RoPE and the
	// Hadamard in f32, the values rounded to bf16 (RNE) once before the
	// store quantises them (with the BF16 store, the store's own
	// rounding: the contract itself).
	IntermediateBF16Once = "bf16-once"
)

// declared returns the precision p declares that changes the check:
// p.Intermediate, except "" for bf16-once with the BF16 store, whose one
// rounding before the store is the store's own (the contract itself).
func (p Params) declared() string {
	if p.Intermediate == IntermediateBF16Once && p.Store == StoreBF16 {
		return ""
	}
	return p.Intermediate
}

// Enumerated values of Params.
const (
	NormRMS          = "rms"
	NormLayer        = "layer"
	StyleNeox        = "neox"
	StyleInterleaved = "interleaved"
	StoreFP8         = "fp8"
	StoreBF16        = "bf16"
	StoreFP4         = "fp4"
	ScalePlain       = "plain"
	ScaleUE8M0       = "ue8m0"
)

// DefaultEps is the norm epsilon of both model families, 1e-6 (as f32).
const DefaultEps float32 = 1e-6

// Preset returns the configuration of a named preset (docs/contracts/norm_rope_store.md) with
// page size p and one page, or an error for an unknown name:
//
//	v32     = layer, rope_offset 0,  neox,        hadamard on, fp8 plain, YaRN v32
//	v4      = rms,   rope_offset 64, interleaved, hadamard on, fp8 plain, YaRN v4
//	v4-bf16 = v4 with the BF16 store
//	v4-fp4  = v4 with hadamard off and the FP4 store (scale_fmt ue8m0), as
//	          DeepSeek-V4.1's FP4 index keys (SGLang 0.5.23
//	          fp4_indexer_rope.cuh: RMSNorm, RoPE, no Hadamard)
func Preset(name string, p int) (Params, error) {
	base := Params{Preset: name, Hadamard: true, Store: StoreFP8, ScaleFmt: ScalePlain, PageSize: p, NumPages: 1, Eps: DefaultEps}
	switch name {
	case PresetV32:
		base.Norm, base.RopeOffset, base.RopeStyle, base.Model = NormLayer, 0, StyleNeox, ModelV32
	case PresetV4, PresetV4BF16, PresetV4FP4:
		base.Norm, base.RopeOffset, base.RopeStyle, base.Model = NormRMS, 64, StyleInterleaved, ModelV4
		switch name {
		case PresetV4BF16:
			base.Store = StoreBF16
		case PresetV4FP4:
			base.Store, base.ScaleFmt, base.Hadamard = StoreFP4, ScaleUE8M0, false
		}
	default:
		return Params{}, fmt.Errorf("unknown preset %q (want %s, %s, %s or %s)", name, PresetV32, PresetV4, PresetV4BF16, PresetV4FP4)
	}
	return base, nil
}

// Check reports the first configuration error as an *InputError naming the
// parameter and the rule: unknown enum values, rope_offset not 0 or 64,
// scale_fmt other than "plain" with the BF16 store (the scale format
// belongs to the FP8 store; a BF16 store has no scale) or other than
// "ue8m0" with the FP4 store (its block scales are ue8m0 bytes), P not a power of
// two in [1, MaxPageSize], num_pages < 1 or a cache over MaxCacheBytes,
// eps not a positive normal f32 (checkEps), an unknown YaRN model (an
// absent one is fine: it only names the table the freqs input holds), or a
// preset label the configuration does not equal (see MatchPreset).
func (p Params) Check() error {
	switch {
	case p.Norm != NormRMS && p.Norm != NormLayer:
		return difftest.Inputf("norm", nil, "must be %q or %q, got %q", NormRMS, NormLayer, p.Norm)
	case p.RopeOffset != 0 && p.RopeOffset != 64:
		return difftest.Inputf("rope_offset", nil, "must be 0 or 64, got %d", p.RopeOffset)
	case p.RopeStyle != StyleNeox && p.RopeStyle != StyleInterleaved:
		return difftest.Inputf("rope_style", nil, "must be %q or %q, got %q", StyleNeox, StyleInterleaved, p.RopeStyle)
	case p.Store != StoreFP8 && p.Store != StoreBF16 && p.Store != StoreFP4:
		return difftest.Inputf("store", nil, "must be %q, %q or %q, got %q", StoreFP8, StoreBF16, StoreFP4, p.Store)
	case p.ScaleFmt != ScalePlain && p.ScaleFmt != ScaleUE8M0:
		return difftest.Inputf("scale_fmt", nil, "must be %q or %q, got %q", ScalePlain, ScaleUE8M0, p.ScaleFmt)
	case p.Store == StoreBF16 && p.ScaleFmt != ScalePlain:
		return difftest.Inputf("scale_fmt", nil, "must be %q with store %q (the BF16 store has no scale; %q applies to the FP8 store only), got %q", ScalePlain, StoreBF16, ScaleUE8M0, p.ScaleFmt)
	case p.Store == StoreFP4 && p.ScaleFmt != ScaleUE8M0:
		return difftest.Inputf("scale_fmt", nil, "must be %q with store %q (its four block scales per token are ue8m0 bytes), got %q", ScaleUE8M0, StoreFP4, p.ScaleFmt)
	case p.PageSize < 1 || p.PageSize > MaxPageSize || bits.OnesCount(uint(p.PageSize)) != 1:
		return difftest.Inputf("P", nil, "page size must be a power of two in [1, %d] (MaxPageSize), got %d", MaxPageSize, p.PageSize)
	case p.NumPages < 1:
		return difftest.Inputf("num_pages", nil, "must be ≥ 1, got %d", p.NumPages)
	case p.NumPages > MaxCacheBytes/p.PageBytes():
		return difftest.Inputf("num_pages", nil, "%d pages of %d bytes (%s store, P=%d) exceed the cache limit of %d bytes (MaxCacheBytes): at most %d pages at this page size",
			p.NumPages, p.PageBytes(), p.Store, p.PageSize, MaxCacheBytes, MaxCacheBytes/p.PageBytes())
	case p.Intermediate != "" && p.Intermediate != IntermediateBF16 && p.Intermediate != IntermediateBF16Once:
		return difftest.Inputf("intermediate", nil, "must be %q, %q or absent (f32 between the stages), got %q", IntermediateBF16, IntermediateBF16Once, p.Intermediate)
	case p.Stages != "" && p.Stages != StagesStore:
		return difftest.Inputf("stages", nil, "must be %q or absent (every step), got %q", StagesStore, p.Stages)
	case p.Stages == StagesStore && p.Intermediate != "":
		return difftest.Inputf("intermediate", nil, "must be absent with stages %q (a store-only kernel has no stages to round between), got %q", StagesStore, p.Intermediate)
	case p.Model != "" && p.Model != ModelV32 && p.Model != ModelV4:
		return difftest.Inputf("model", nil, "must be %q, %q or absent (a capture of a live call: the freqs input is the table), got %q", ModelV32, ModelV4, p.Model)
	}
	if err := checkEps(float64(p.Eps)); err != nil {
		return err
	}
	if p.Preset != "" {
		if _, err := Preset(p.Preset, p.PageSize); err != nil {
			return difftest.Inputf("preset", nil, "%v", err)
		}
		if got := MatchPreset(p); got != p.Preset {
			return difftest.Inputf("preset", nil, "%q does not match the configuration (%s); the preset label is set only when every switch, eps and model equal the preset's (this one equals %s)",
				p.Preset, p, presetOrNone(got))
		}
	}
	return nil
}

// MatchPreset returns the name of the preset whose configuration p equals
// exactly (norm, rope_offset, rope_style, hadamard, store, scale_fmt, eps
// and YaRN model; P and num_pages are free), or "" when none does, and
// always "" for a store-only configuration (stages "store": a preset is a
// whole pipeline). NewCase sets Params.Preset to it, so a report says "v4"
// only for the v4 configuration.
func MatchPreset(p Params) string {
	if p.Stages != "" {
		return ""
	}
	for _, name := range []string{PresetV32, PresetV4, PresetV4BF16, PresetV4FP4} {
		q, _ := Preset(name, p.PageSize)
		if p.Norm == q.Norm && p.RopeOffset == q.RopeOffset && p.RopeStyle == q.RopeStyle && p.Hadamard == q.Hadamard &&
			p.Store == q.Store && p.ScaleFmt == q.ScaleFmt && p.Eps == q.Eps && p.Model == q.Model {
			return name
		}
	}
	return ""
}

func presetOrNone(name string) string {
	if name == "" {
		return "no preset"
	}
	return "preset " + name
}

// Log2P returns log2 of the page size (PageSize must be a power of two).
func (p Params) Log2P() int { return bits.TrailingZeros(uint(p.PageSize)) }

// PageBytes returns the bytes of one cache page (PageBytes of the store
// and P): 132·P for FP8, 256·P for BF16, 68·P for FP4.
func (p Params) PageBytes() int { return PageBytes(p.Store, p.PageSize) }

// NumSlots returns num_pages·P, the number of token slots in the cache.
func (p Params) NumSlots() int { return p.NumPages * p.PageSize }

// String renders the configuration in one line, for messages: every field
// that tells two configurations apart, model, intermediate and stages only
// where set (the preset-mismatch error names what differs through it).
func (p Params) String() string {
	h := "off"
	if p.Hadamard {
		h = "on"
	}
	s := fmt.Sprintf("norm=%s rope=%s@%d hadamard=%s store=%s", p.Norm, p.RopeStyle, p.RopeOffset, h, p.Store)
	if p.Store != StoreBF16 {
		s += "/" + p.ScaleFmt
	}
	s += fmt.Sprintf(" P=%d pages=%d eps=%g", p.PageSize, p.NumPages, p.Eps)
	if p.Model != "" {
		s += " model=" + p.Model
	}
	if p.Intermediate != "" {
		s += " intermediate=" + p.Intermediate
	}
	if p.Stages != "" {
		s += " stages=" + p.Stages
	}
	return s
}

// ParseParams decodes the JSON form of Params (capture files, exec
// metadata) and checks it (Params.Check). Unknown fields are errors.
// intermediate "f32" and stages "all" (the suite's names of the defaults)
// are read as absent. eps is
// read as written (f64) and checked before it is rounded to f32, so an eps
// that underflows or overflows f32 is reported with the value given.
func ParseParams(raw json.RawMessage) (Params, error) {
	var pj struct {
		Params
		Eps json.Number `json:"eps"` // shadows Params.Eps
	}
	if err := difftest.DecodeStrict(raw, &pj); err != nil {
		return Params{}, fmt.Errorf("norm_rope_store params: %w", err)
	}
	p := pj.Params
	// The suite's names of the defaults, "f32" and "all", are accepted
	// here too and stored as the defaults (absent).
	switch p.Intermediate {
	case IntermediateF32:
		p.Intermediate = ""
	case "", IntermediateBF16, IntermediateBF16Once:
	default:
		return Params{}, difftest.Inputf("intermediate", nil, "must be %q, %q, %q or absent (f32 between the stages), got %q", IntermediateF32, IntermediateBF16, IntermediateBF16Once, p.Intermediate)
	}
	switch p.Stages {
	case StagesAll:
		p.Stages = ""
	case "", StagesStore:
	default:
		return Params{}, difftest.Inputf("stages", nil, "must be %q, %q or absent (every step), got %q", StagesAll, StagesStore, p.Stages)
	}
	if pj.Eps == "" {
		return Params{}, difftest.Inputf("eps", nil, "missing (the norm epsilon, 1e-6 in both model families)")
	}
	e, err := strconv.ParseFloat(string(pj.Eps), 64)
	if err != nil {
		return Params{}, difftest.Inputf("eps", nil, "must be a number, got %s", pj.Eps)
	}
	if err := checkEps(e); err != nil {
		return Params{}, err
	}
	p.Eps = float32(e)
	if err := p.Check(); err != nil {
		return Params{}, err
	}
	return p, nil
}
