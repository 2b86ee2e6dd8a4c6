package logits

import "github.com/kerneldiff/kerneldiff/difftest"

var _ difftest.ContractDescriber = Kernel{}

// Contract describes indexer_logits as data (docs/contracts/indexer_logits.md):
// inputs q [B, (next_n,) H, 128] (u8 e4m3fn codes for the FP8 store, bf16
// for the BF16 store) or [B, (next_n,) H, 68] (u8 FP4 records), weights
// f32 [B·next_n, H], cache u8 [num_pages, page_stride], seq_lens i32 [B]
// or [B, next_n], page_table i32 [B, max_pages]; output logits f32 or
// bf16 (logits_dtype) [batch·next_n, stride]. Without clean (false) the positions past a row's length
// are unspecified; accum_bits defaults to 24.
func (Kernel) Contract() difftest.ContractInfo {
	return difftest.ContractInfo{
		Name: KernelName,
		Inputs: []difftest.TensorInfo{
			difftest.Input(NameQ, difftest.U8, difftest.BF16),
			difftest.Input(NameWeights, difftest.F32),
			difftest.Input(NameCache, difftest.U8),
			difftest.Input(NameSeqLens, difftest.I32),
			difftest.Input(NamePageTable, difftest.I32),
		},
		Outputs: []difftest.OutputInfo{
			{Name: NameLogits, DType: difftest.F32, DTypeBy: "logits_dtype",
				DTypeOf: map[string]difftest.DType{LogitsF32: difftest.F32, LogitsBF16: difftest.BF16},
				Shape:   []difftest.Dim{{Param: "batch", Times: "next_n"}, difftest.ParamDim("stride")}},
		},
		Required: []string{"store", "page_size", "heads", "batch", "stride", "max_pages", "num_pages"},
		Optional: []string{"clean", "accum_bits", "family", "pages", "needles", "next_n", "page_stride", "logits_dtype"},
		Sizes: []difftest.SizeInfo{
			{Param: "batch", Tensor: NameQ, Axis: 0}, {Param: "heads", Tensor: NameQ, Axis: -2},
			{Param: "num_pages", Tensor: NameCache, Axis: 0}, {Param: "max_pages", Tensor: NamePageTable, Axis: 1},
			{Param: "stride", Tensor: NameLogits, Axis: 1},
		},
	}
}
