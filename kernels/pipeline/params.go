// Package pipeline is the chained case of docs/pipeline.md: the indexer as a
// server runs it. norm_rope_store writes the keys of every row into the
// paged cache, indexer_logits scores them against the row's query,
// topk_transform selects K slots. Each stage runs on the implementation
// under test and reads that implementation's previous output; each stage
// is checked against its kernel's reference given that same input
// (difftest.Chain), so one stage's rounding never shows as another's
// error. The case also records end-to-end metrics against the exact
// pipeline (f64 keys before any quantisation, the unquantised queries):
// whether the planted needle is selected, its rank, and the recall of the
// exact top-K. They are diagnostics, not verdicts: an FP8 store that loses
// a needle by its rounding is a property of the store, not a fault of the
// kernel.
//
// The kernel registers as "pipeline". Its case's inputs (contract order):
// stage 1, x bf16 [N, 128], weight f32 [128], bias f32 [128], freqs f32
// [stride, 64], positions i64 [N], out_loc i64 [N], with N = Σ_b L_b
// tokens, token L_0 + … + L_(b−1) + s being position s of row b (RoPE
// position s, written to the slot its page table gives); stage 2, q (u8
// e4m3fn codes or bf16) [B, H, 128], weights f32 [B, H]; stages 2 and 3,
// seq_lens i32 [B], page_table i32 [B, max_pages]; the exact pipeline,
// q_exact f32 [B, H, 128] and weights_exact f32 [B, H].
package pipeline

import (
	"encoding/json"
	"fmt"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/kernels/logits"
	"github.com/kerneldiff/kerneldiff/kernels/normrope"
	"github.com/kerneldiff/kerneldiff/kernels/topk"
)

// KernelName is the name the pipeline registers under.
const KernelName = "pipeline"

// Names of the pipeline's own inputs (the stages' inputs keep their
// kernels' contract names).
const (
	NameQExact       = "q_exact"       // f32 [B, H, 128]: the queries before quantisation
	NameWeightsExact = "weights_exact" // f32 [B, H]: the head weights before the FP8 query scale is folded in
)

// Stage kernel names, in order.
var stageKernels = [3]string{normrope.KernelName, logits.KernelName, topk.KernelName}

// Params are the parameters of one pipeline case (JSON in captures).
//
// Preset is the norm_rope_store preset of stage 1 (v4: FP8 keys; v4-bf16:
// BF16 keys; v4-fp4: FP4 keys, v4 without the Hadamard transform), and
// with it the store of stage 2. K is the top-k of stage 3;
// H and PageSize the heads and page size. Batch, Stride (the longest
// row), MaxPages and NumPages are the shape facts. Needles holds the
// planted position of each row (−1: none) and Margins the margin each
// needle was planted with (its exact logit minus the row's K-th largest
// other exact logit, in standard deviations of the row's exact logits).
type Params struct {
	Preset   string    `json:"preset"`
	K        int       `json:"K"`
	Heads    int       `json:"heads"`
	PageSize int       `json:"page_size"`
	Batch    int       `json:"batch"`
	Stride   int       `json:"stride"`
	MaxPages int       `json:"max_pages"`
	NumPages int       `json:"num_pages"`
	Needles  []int     `json:"needles,omitempty"`
	Margins  []float64 `json:"margins,omitempty"`
	Family   string    `json:"family,omitempty"`
}

// Store returns the key store of the preset: "fp8" for v4, "bf16" for
// v4-bf16, "fp4" for v4-fp4.
func (p Params) Store() string {
	switch p.Preset {
	case normrope.PresetV4BF16:
		return "bf16"
	case normrope.PresetV4FP4:
		return "fp4"
	}
	return "fp8"
}

// KeyPreset returns the preset whose keys span the space q_exact is drawn
// in and the needle is planted in: v4 for v4-fp4 (its keys are the v4
// keys without the Hadamard transform, and its queries the FP4
// quantisation of H·q, which scores them as q scores the v4 keys), the
// preset itself otherwise.
func (p Params) KeyPreset() string {
	if p.Preset == normrope.PresetV4FP4 {
		return normrope.PresetV4
	}
	return p.Preset
}

// Limits of one pipeline case.
const (
	// MaxSeqLen bounds a row's length S.
	MaxSeqLen = 1 << 18
	// MaxTokens bounds B·stride, the tokens of stage 1.
	MaxTokens = 1 << 21
	// MaxHeads bounds H (the CUDA kernel takes 64).
	MaxHeads = 64
	// MaxK bounds K.
	MaxK = 1 << 14
)

// Check reports the first configuration error as an *InputError naming
// the parameter and the rule.
func (p Params) Check() error {
	switch {
	case p.Preset != normrope.PresetV4 && p.Preset != normrope.PresetV4BF16 && p.Preset != normrope.PresetV4FP4:
		return difftest.Inputf("preset", nil, "must be %q (FP8 keys), %q (BF16 keys) or %q (FP4 keys), got %q (the needle is planted through RMSNorm)", normrope.PresetV4, normrope.PresetV4BF16, normrope.PresetV4FP4, p.Preset)
	case p.K < 1 || p.K > MaxK:
		return difftest.Inputf("K", nil, "must be in [1, %d], got %d", MaxK, p.K)
	case p.Heads < 1 || p.Heads > MaxHeads:
		return difftest.Inputf("H", nil, "must be in [1, %d], got %d", MaxHeads, p.Heads)
	case p.PageSize < 1 || p.PageSize > 1<<10 || p.PageSize&(p.PageSize-1) != 0:
		return difftest.Inputf("P", nil, "must be a power of two in [1, 1024], got %d", p.PageSize)
	case p.Batch < 1 || p.Stride < 1 || p.Stride > MaxSeqLen || p.Batch > MaxTokens/p.Stride:
		return difftest.Inputf("batch", nil, "batch %d and stride %d must be ≥ 1 with stride ≤ %d and batch·stride ≤ %d", p.Batch, p.Stride, MaxSeqLen, MaxTokens)
	case len(p.Needles) != 0 && len(p.Needles) != p.Batch:
		return difftest.Inputf("needles", nil, "one per row (%d), got %d", p.Batch, len(p.Needles))
	}
	return nil
}

// ParseParams decodes the JSON form of Params (unknown fields are errors)
// and checks it.
func ParseParams(raw json.RawMessage) (Params, error) {
	var p Params
	if err := difftest.DecodeStrict(raw, &p); err != nil {
		return Params{}, fmt.Errorf("%s params: %w", KernelName, err)
	}
	return p, p.Check()
}

func paramsOf(c *difftest.Case) (Params, error) { return difftest.ParamsOf[Params](c) }

// InputNames returns the pipeline case's input names in contract order.
func InputNames() []string {
	return append(append(normrope.InputNames(), "q", "weights", "seq_lens", "page_table"), NameQExact, NameWeightsExact)
}
