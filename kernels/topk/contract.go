package topk

import "github.com/kerneldiff/kerneldiff/difftest"

var _ difftest.ContractDescriber = Kernel{}

// Contract describes topk_transform as data (docs/contracts/topk_transform.md):
// inputs scores f32 [B, stride], seq_lens i32 [B], page_table i32
// [B, max_pages]; outputs page_indices i32 [B, K] and, with return_raw,
// raw_indices i32 [B, K]. K and P are required; the shape facts may be
// stated and must then agree with the tensors (FromTensors).
func (Kernel) Contract() difftest.ContractInfo {
	bk := []difftest.Dim{difftest.InputDim(TensorScores, 0), difftest.ParamDim("K")}
	return difftest.ContractInfo{
		Name: KernelName,
		Inputs: []difftest.TensorInfo{
			difftest.Input(TensorScores, difftest.F32, difftest.BF16, difftest.F16),
			difftest.Input(TensorSeqLens, difftest.I32),
			difftest.Input(TensorPageTable, difftest.I32),
		},
		Outputs: []difftest.OutputInfo{
			{Name: TensorPageIndices, DType: difftest.I32, Shape: bk},
			{Name: TensorRawIndices, DType: difftest.I32, Shape: bk, When: "return_raw"},
		},
		Required: []string{"K", "P"},
		Optional: []string{"return_raw", "batch", "stride", "max_pages", "family", "pages", "needles", "score_dtype"},
		Sizes:    []difftest.SizeInfo{{Param: "K", Tensor: TensorPageIndices, Axis: 1}},
	}
}
