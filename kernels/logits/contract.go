package logits

import "github.com/kerneldiff/kerneldiff/difftest"

var _ difftest.ContractDescriber = Kernel{}

// Contract describes indexer_logits as data (docs/contracts/indexer_logits.md):
// inputs q [B, H, 128] (u8 e4m3fn codes for the FP8 store, bf16 for the
// BF16 store), weights f32 [B, H], cache u8 [num_pages, page_bytes],
// seq_lens i32 [B], page_table i32 [B, max_pages]; output logits f32
// [batch, stride]. Without clean (false) the positions past a row's length
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
			{Name: NameLogits, DType: difftest.F32, Shape: []difftest.Dim{difftest.ParamDim("batch"), difftest.ParamDim("stride")}},
		},
		Required: []string{"store", "page_size", "heads", "batch", "stride", "max_pages", "num_pages"},
		Optional: []string{"clean", "accum_bits", "family", "pages", "needles"},
		Sizes: []difftest.SizeInfo{
			{Param: "batch", Tensor: NameQ, Axis: 0}, {Param: "heads", Tensor: NameQ, Axis: 1},
			{Param: "num_pages", Tensor: NameCache, Axis: 0}, {Param: "max_pages", Tensor: NamePageTable, Axis: 1},
			{Param: "stride", Tensor: NameLogits, Axis: 1},
		},
	}
}
