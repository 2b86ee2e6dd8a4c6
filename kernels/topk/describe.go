// Family and suite-param documentation of topk_transform for `difftest
// list families` (difftest.FamilyDescriber). It restates, one line each,
// what NewCase (generate.go) and the family catalog (families.go) read;
// describe_test.go checks it against the parser.

package topk

import (
	"fmt"

	"github.com/kerneldiff/kerneldiff/difftest"
)

var _ difftest.FamilyDescriber = Kernel{}

// commonParams are the suite params decodeConfig reads for every family.
var commonParams = []difftest.ParamInfo{
	{Name: "K", Required: true, Doc: fmt.Sprintf("int: picks per row, in [1, %d] (MaxK)", MaxK)},
	{Name: "lengths", Required: true, Doc: fmt.Sprintf("[]int (an array, [5] for one), required unless runs is given: seq_lens, each in [0, %d], at most %d of them; row b has lengths[b mod len(lengths)]", MaxSeqLen, MaxBatch)},
	{Name: "runs", Doc: "[{length, rows, step}], instead of lengths: consecutive rows of length, length+step, … (step default 0); decode batch [{length = 8192, rows = 64}, {length = 4500, rows = 64}], prefill chunk [{length = 8161, rows = 64, step = 1}]"},
	{Name: "P", Doc: fmt.Sprintf("int, default 64: page size, a power of two in [1, %d]", MaxPageSize)},
	{Name: "batch", Doc: fmt.Sprintf("int, default len(lengths) or the runs' total rows: rows, in [len(lengths), %d] (every length is drawn); with runs it must equal their total", MaxBatch)},
	{Name: "stride", Doc: fmt.Sprintf("int, default max(lengths, 1): scores row stride, in [max(lengths), %d]", MaxSeqLen)},
	{Name: "pages", Doc: `string, default "distinct": page_table kind: identity, perm, distinct or large`},
	{Name: "raw", Doc: "bool, default true: whether raw_indices is an output"},
	{Name: "dtype", Doc: `string, default "f32" ("bf16" for ties16, oneexp and nan16, which refuse "f32"): scores dtype, f32, bf16 or f16; a 16-bit case narrows what an f32 family draws (round to nearest even) and ranks by Key16`},
}

// familyDocs holds each family's one-line description and the params its
// params function reads (families.go), in catalog order.
var familyDocs = map[string]struct {
	doc    string
	params []difftest.ParamInfo
}{
	"gaussian": {doc: "N(0, 1) scores rounded once to f32; the baseline (short rows, off-by-one lengths, reads past L)"},
	"needle":   {doc: "Gaussian noise with one planted maximum at L/3; the top-k must keep it at every length"},
	"equal":    {doc: "every score of a row the same value; any K positions are valid (tie holes, duplicates on a plateau)"},
	"straddle": {doc: "above values > 1.0, tied values exactly 1.0, the rest below: the K-th value sits in the tie band", params: []difftest.ParamInfo{
		{Name: "above", Doc: "int, default min(3K/4, L) per row: values above 1.0, in [0, every row's length]"},
		{Name: "tied", Doc: "int, default min(K/2, L − above) per row: values exactly 1.0; above + tied ≤ every row's length"},
	}},
	"relu": {doc: "positives values > 0, the rest +0.0, like ReLU-ed indexer logits (threshold bin holds the whole row)", params: []difftest.ParamInfo{
		{Name: "positives", Doc: "int, default min(100, L) per row: values > 0, in [0, every row's length]"},
	}},
	"lowcontrast": {doc: "L distinct values in one narrow band, in random order (candidate-buffer overflow, fp16-rounded keys)", params: []difftest.ParamInfo{
		{Name: "span", Doc: `string, default "coarse": band: coarse [1.0, 1.25), high ≥ 65520, tiny [0, 1.5e-5); every row length ≤ the band's f32 count`},
	}},
	"masked": {doc: "finite Gaussian values, the rest −inf as masks leave them (−FLT_MAX sentinels, −inf emitted as −1)", params: []difftest.ParamInfo{
		{Name: "finite", Doc: "int, default min(K/2, L) per row: finite values, in [0, every row's length]"},
	}},
	"ties16":   {doc: "16-bit: five adjacent Key16 keys around a high-digit boundary, one tie band (single radix pass, low digit from the raw bits)"},
	"oneexp":   {doc: "16-bit: one binade per row, [1, 2) or (−2, −1], random mantissas: the low Key16 digit decides (sign flip, one pass, f16 at bf16 precision)"},
	"nan16":    {doc: "16-bit: Gaussian with a quarter of the positions NaNs of both signs (random payloads), ±inf, ±0, subnormals, ±max finite (Key16 NaN order)"},
	"specials": {doc: "Gaussian with a quarter of the positions ±0, subnormals, ±FLT_MAX, ±inf, quiet and signalling NaN (key32 order)"},
	FamilyLiteral: {doc: "the inputs written out in the entry (difftest shrink writes these): scores as f32 bit patterns, the page table as ids", params: []difftest.ParamInfo{
		{Name: "scores", Doc: `string, default every valid score +0 and the usual fill: batch·stride f32 bit patterns, row-major, 8 hex digits each, "HEX*N" for N repeats`},
		{Name: "page_table", Doc: `string, default the "pages" kind: batch·max_pages page ids (max_pages = ceil(stride/P)), row-major, decimal, "ID*N" for N repeats`},
	}},
	"pseudotie": {doc: "above values over a band that float compares tie but key32 ranks apart (−0/+0, ftz subnormals, NaN payloads)", params: []difftest.ParamInfo{
		{Name: "band", Doc: `string, default "zeros": zeros, subnormals or nans`},
		{Name: "above", Doc: "int, default min(K/2, L) per row: values above the band, in [0, every row's length]"},
	}},
}

// DescribeFamilies documents every family of Families, in that order:
// the common params (K and lengths required) followed by the family's
// own. A family without an entry in familyDocs gets an empty Doc and
// only the common params; describe_test.go fails on it.
func (Kernel) DescribeFamilies() []difftest.FamilyInfo {
	var out []difftest.FamilyInfo
	for _, name := range Families() {
		d := familyDocs[name]
		params := append(append([]difftest.ParamInfo(nil), commonParams...), d.params...)
		out = append(out, difftest.FamilyInfo{Name: name, Doc: d.doc, Params: params})
	}
	return out
}
