// Family and suite-param documentation of norm_rope_store for `difftest
// list families` (difftest.FamilyDescriber). It restates, one line each,
// what plan (case.go) reads; describe_test.go checks it against the parser.

package normrope

import (
	"fmt"

	"github.com/kerneldiff/kerneldiff/difftest"
)

var _ difftest.FamilyDescriber = Kernel{}

// describeParams returns the suite params plan reads for family: all
// optional, the same keys for every family; the defaults of max_pos and
// num_pages follow the family's maxPos and slots.
func describeParams(family string) []difftest.ParamInfo {
	maxPos := fmt.Sprintf("int, default 4096: rows of freqs, in [1, %d] (MaxPositions)", MaxPositions)
	if family == "positions" {
		maxPos = fmt.Sprintf("int, default the model's full context (v32 163840, v4 262144): rows of freqs, in [1, %d] (MaxPositions)", MaxPositions)
	}
	numPages := "int, default room for N + max(1, N/8) slots: cache pages; num_pages·page_bytes ≤ MaxCacheBytes"
	if family == "slots" {
		numPages = "int, default room for (2·ceil(N/2) + 1)·P slots: cache pages; num_pages·page_bytes ≤ MaxCacheBytes"
	}
	ps := []difftest.ParamInfo{
		{Name: "preset", Doc: `string, default "v4": v32, v4, v4-bf16 or v4-fp4; the params below override it`},
		{Name: "norm", Doc: `string, default the preset's: rms or layer`},
		{Name: "rope_offset", Doc: "int, default the preset's: first RoPE dim, 0 or 64"},
		{Name: "rope_style", Doc: `string, default the preset's: neox or interleaved`},
		{Name: "hadamard", Doc: "bool, default the preset's (true; false for v4-fp4): Hadamard transform after RoPE"},
		{Name: "store", Doc: `string, default the preset's (fp8; bf16 for v4-bf16, fp4 for v4-fp4): fp8, bf16 or fp4`},
		{Name: "scale_fmt", Doc: `string, default the preset's ("plain"; "ue8m0" for v4-fp4): plain or ue8m0: the fp8 store takes either, the bf16 store only plain, the fp4 store only ue8m0`},
		{Name: "eps", Doc: "float, default 1e-6: norm epsilon, a positive normal f32"},
		{Name: "model", Doc: `string, default the preset's: YaRN freqs table of v32 or v4`},
		{Name: "intermediate", Doc: `string, default "f32": the declared precision between norm, RoPE, Hadamard and the store: f32, bf16 (after every stage, SGLang's unfused path) or bf16-once (f32 stages, one bf16 rounding before the store, SGLang's fused V3.2 indexer_k); the bound follows it`},
		{Name: "stages", Doc: `string, default "all": all (norm, RoPE, Hadamard, store) or store (x is the key, already normed and rotated: only the store; the norm, RoPE and Hadamard switches are ignored)`},
		{Name: "P", Doc: fmt.Sprintf("int, default 64: page size, a power of two in [1, %d] (MaxPageSize)", MaxPageSize)},
		{Name: "N", Doc: fmt.Sprintf("int, default 96: tokens, in [1, %d] (MaxTokens)", MaxTokens)},
		{Name: "x_stride", Doc: fmt.Sprintf("int, default %d: row stride of x, in [%d, %d]; padding holds NaN; N·x_stride·2 ≤ MaxXBytes", Dim, Dim, MaxXStride)},
		{Name: "max_pos", Doc: maxPos},
		{Name: "num_pages", Doc: numPages},
		{Name: "holes", Doc: "bool, default true: about 1/8 of the tokens (never the last) get out_loc −1"},
	}
	if family == FamilyLiteral {
		ps = append(ps, literalParams...)
	}
	return ps
}

// DescribeFamilies documents every family of Families, in that order,
// with FamilyDoc's line and the params plan reads (none required: an empty
// params table draws the v4 preset, though the constructed FP8 families
// need a configuration the v4 preset does not have).
func (Kernel) DescribeFamilies() []difftest.FamilyInfo {
	var out []difftest.FamilyInfo
	for _, name := range Families() {
		out = append(out, difftest.FamilyInfo{Name: name, Doc: FamilyDoc(name), Params: describeParams(name)})
	}
	return out
}
