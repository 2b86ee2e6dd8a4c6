// Family and suite-param documentation of indexer_logits for `difftest
// list families` (difftest.FamilyDescriber). It restates, one line each,
// what decode (case.go) reads; describe_test.go checks it against the
// parser.

package logits

import (
	"fmt"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// describeParams returns the suite params decode reads for family.
func describeParams(family string) []difftest.ParamInfo {
	var ps []difftest.ParamInfo
	switch family {
	case "page-counts":
		ps = append(ps, difftest.ParamInfo{Name: "counts", Doc: "[]int, default 2^k − 1, 2^k, 2^k + 1 for k in [0, 8]: page count of each row (the lengths follow)"})
	default:
		ps = append(ps, difftest.ParamInfo{Name: "lengths", Required: true, Doc: fmt.Sprintf("[]int, required: seq_lens, each in [0, %d]; row b has lengths[b mod len]", MaxSeqLen)})
	}
	if family == "nan-keys" {
		ps = append(ps, difftest.ParamInfo{Name: "special", Doc: "int, default 8: about 1 used slot in special is altered (≥ 1)"})
	}
	return append(ps,
		difftest.ParamInfo{Name: "batch", Doc: fmt.Sprintf("int, default the number of lengths: rows, in [1, %d]", MaxBatch)},
		difftest.ParamInfo{Name: "stride", Doc: "int, default the longest length (at least 1): logits row stride, ≥ every length"},
		difftest.ParamInfo{Name: "P", Doc: fmt.Sprintf("int, default 64: page size, a power of two in [1, %d]", MaxPageSize)},
		difftest.ParamInfo{Name: "H", Doc: fmt.Sprintf("int, default 16: heads, in [1, %d] (the CUDA kernel takes ≤ 64)", MaxHeads)},
		difftest.ParamInfo{Name: "store", Doc: `string, default "fp8": fp8, bf16 or fp4 (the keys' layout, and q's dtype)`},
		difftest.ParamInfo{Name: "clean", Doc: "bool, default true: positions past L_b must be −inf; false leaves them unspecified"},
		difftest.ParamInfo{Name: "accum_bits", Doc: fmt.Sprintf("int, default 24: the dot products' declared precision, in [%d, 24] (bound.go)", MinAccumBits)},
		difftest.ParamInfo{Name: "next_n", Doc: fmt.Sprintf("int, default 1: query rows per request, in [1, %d]; row r sees max(0, L − (next_n − 1 − r)) keys", MaxNextN)},
		difftest.ParamInfo{Name: "page_stride", Doc: "int, default the tight page size: bytes from page to page, a multiple of 4 ≥ 132·P, 256·P or 68·P; padding poisoned"},
		difftest.ParamInfo{Name: "logits_dtype", Doc: `string, default "f32": f32 or bf16 (the output's precision)`},
		difftest.ParamInfo{Name: "pages", Doc: `string, default "distinct": identity, perm, distinct or high (page-table kind)`},
		difftest.ParamInfo{Name: "num_pages", Doc: "int, default the pages used (4× for high): cache pages, unused ones hold NaN"},
		difftest.ParamInfo{Name: "max_pages", Doc: "int, default ceil(stride / P): page-table row width, ≥ the longest row's pages"},
	)
}

// DescribeFamilies documents every family of Families, in that order,
// with FamilyDoc's line and the params decode reads for it.
func (Kernel) DescribeFamilies() []difftest.FamilyInfo {
	var out []difftest.FamilyInfo
	for _, name := range Families() {
		out = append(out, difftest.FamilyInfo{Name: name, Doc: FamilyDoc(name), Params: describeParams(name)})
	}
	return out
}
