package normrope

import "github.com/kerneldiff/kerneldiff/difftest"

var _ difftest.ContractDescriber = Kernel{}

// Contract describes norm_rope_store as data (docs/contracts/norm_rope_store.md):
// inputs x bf16 [N, row stride], weight and bias f32 [128], freqs f32
// [max_pos, 64], positions and out_loc i64 [N], and the paged cache u8
// [num_pages, page_bytes], which is also the one output (written in place).
// rope_offset (0), hadamard (off), preset, model, intermediate (f32) and
// stages (all) may be left out (model names the YaRN table, which a
// capture of a live call need not know).
func (Kernel) Contract() difftest.ContractInfo {
	return difftest.ContractInfo{
		Name: KernelName,
		Inputs: []difftest.TensorInfo{
			difftest.Input(NameX, difftest.BF16),
			difftest.Input(NameWeight, difftest.F32),
			difftest.Input(NameBias, difftest.F32),
			difftest.Input(NameFreqs, difftest.F32),
			difftest.Input(NamePositions, difftest.I64),
			difftest.Input(NameOutLoc, difftest.I64),
			{Name: NameCache, DTypes: []difftest.DType{difftest.U8}, InOut: true},
		},
		Outputs:  []difftest.OutputInfo{{Name: NameCache, DType: difftest.U8, InOut: true}},
		Required: []string{"norm", "rope_style", "store", "scale_fmt", "page_size", "num_pages", "eps"},
		Optional: []string{"rope_offset", "hadamard", "preset", "model", "intermediate", "stages"},
		Sizes:    []difftest.SizeInfo{{Param: "num_pages", Tensor: NameCache, Axis: 0}},
	}
}
