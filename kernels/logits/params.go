// Parameters and tensor layout of the indexer_logits contract
// (docs/contracts/indexer_logits.md): the switches of kd_logits_params in logits.h, the shape
// facts of the generated tensors, and the size limits checked before
// anything is allocated.

package logits

import (
	"encoding/json"
	"fmt"
	"math/bits"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// KernelName is the contract name of docs/contracts/indexer_logits.md.
const KernelName = "indexer_logits"

// Dim is the indexer head dimension: every query head and every cached key
// has 128 values (the keys norm_rope_store writes, docs/contracts/norm_rope_store.md).
const Dim = 128

// Contract names of the tensors, in contract order.
const (
	NameQ         = "q"          // in: FP8 store u8 e4m3fn codes [B, H, 128]; BF16 store bf16 [B, H, 128]
	NameWeights   = "weights"    // in: f32 [B, H]
	NameCache     = "cache"      // in: u8 [num_pages, 132·P] (FP8) or [num_pages, 256·P] (BF16)
	NameSeqLens   = "seq_lens"   // in: i32 [B]
	NamePageTable = "page_table" // in: i32 [B, max_pages]
	NameLogits    = "logits"     // out: f32 [B, stride]
)

// InputNames returns the input tensor names in contract order: q, weights,
// cache, seq_lens, page_table.
func InputNames() []string {
	return []string{NameQ, NameWeights, NameCache, NameSeqLens, NamePageTable}
}

// Stores (Params.Store), the two layouts of docs/contracts/norm_rope_store.md step 4.
const (
	StoreFP8  = "fp8"  // 128 e4m3fn codes per slot, then per page the slots' f32 scales
	StoreBF16 = "bf16" // 128 bf16 values per slot
)

// DefaultAccumBits is the accumulation precision of an f32 kernel, the
// default of Params.AccumBits: 24 significand bits, binary32.
const DefaultAccumBits = 24

// Params are the parameters of one indexer_logits case. They travel as
// JSON in exec metadata and capture files (the field names match the
// bridge's packer of logits.h), and FromTensors reads them back.
//
// Store, PageSize (P), Heads (H), Clean and AccumBits are contract
// parameters; Batch, Stride, MaxPages and NumPages are the shape facts of
// the tensors (q [Batch, Heads, 128], weights [Batch, Heads], cache
// [NumPages, page_bytes], seq_lens [Batch], page_table [Batch, MaxPages],
// logits [Batch, Stride]); Family and Pages say how the generator drew the
// case (informational, kept in captures); Needles, for the needle family,
// the planted position of each row (−1 for none).
type Params struct {
	Store     string `json:"store"`      // "fp8" or "bf16"
	PageSize  int    `json:"page_size"`  // P, slots per page, a power of two in [1, MaxPageSize]
	Heads     int    `json:"heads"`      // H, in [1, MaxHeads]
	Clean     bool   `json:"clean"`      // positions s ≥ L_b must be −inf (DeepGEMM clean_logits); else unspecified
	AccumBits int    `json:"accum_bits"` // significand bits of the kernel's dot products, in [MinAccumBits, 24] (bound.go)
	Batch     int    `json:"batch"`
	Stride    int    `json:"stride"`
	MaxPages  int    `json:"max_pages"`
	NumPages  int    `json:"num_pages"`
	Family    string `json:"family,omitempty"`
	Pages     string `json:"pages,omitempty"`
	Needles   []int  `json:"needles,omitempty"`
}

// Log2P returns log2 of the page size (PageSize must be a power of two).
func (p Params) Log2P() int { return bits.TrailingZeros(uint(p.PageSize)) }

// PageBytes returns the bytes of one cache page: 132·P for FP8 (128 code
// bytes and a 4-byte f32 scale per slot), 256·P for BF16.
func (p Params) PageBytes() int {
	if p.Store == StoreBF16 {
		return 2 * Dim * p.PageSize
	}
	return (Dim + 4) * p.PageSize
}

// QDType returns the dtype of q: U8 (e4m3fn codes) for the FP8 store, BF16
// for the BF16 store.
func (p Params) QDType() difftest.DType {
	if p.Store == StoreBF16 {
		return difftest.BF16
	}
	return difftest.U8
}

// Outputs returns the output list: logits f32 [Batch, Stride].
func (p Params) Outputs() []difftest.OutputSpec {
	return []difftest.OutputSpec{{Name: NameLogits, DType: difftest.F32, Shape: []int{p.Batch, p.Stride}}}
}

// String renders the configuration in one line, for messages.
func (p Params) String() string {
	return fmt.Sprintf("store=%s P=%d H=%d clean=%v accum_bits=%d batch=%d stride=%d max_pages=%d num_pages=%d",
		p.Store, p.PageSize, p.Heads, p.Clean, p.AccumBits, p.Batch, p.Stride, p.MaxPages, p.NumPages)
}

// Upper bounds on the sizes of one case. They are above what the
// DeepSeek-V3.2/V4 indexers use (H = 64, P = 64, contexts up to 1M tokens,
// decode batches of a few hundred rows), and low enough that the inputs,
// two poisoned runs of the logits and the reference's fit on a GPU host;
// MaxCacheBytes admits the large suite's cache beyond 2 GiB (the 32-bit
// offset bug class). Each is checked by NewCase (a suite error naming the
// case and the param) and by Params.Check (captures).
const (
	// MaxHeads bounds H: 128, the contract's range (docs/contracts/indexer_logits.md). The
	// CUDA kernel is instantiated for H ≤ 64 (logits.h, KD_LOGITS_MAX_HEADS).
	MaxHeads = 128
	// MaxPageSize bounds P: 2^16 slots per page.
	MaxPageSize = 1 << 16
	// MaxSeqLen bounds every seq_lens[b] and the logits row stride: 2^24.
	MaxSeqLen = 1 << 24
	// MaxBatch bounds B.
	MaxBatch = 1 << 14
	// MaxPages bounds max_pages, the page-table row width.
	MaxPages = MaxSeqLen
	// MaxNumPages bounds num_pages, the cache's pages (ids below 2^31 fit
	// the i32 page table).
	MaxNumPages = 1<<31 - 1
	// MaxCacheBytes bounds the cache, num_pages·page_bytes: 2^34 (16 GiB).
	MaxCacheBytes = 1 << 34
	// MaxLogits bounds B·stride, the output: 2^28 f32 (1 GiB).
	MaxLogits = 1 << 28
	// MaxTableEntries bounds B·max_pages: 2^28 i32.
	MaxTableEntries = 1 << 28
	// MinAccumBits is the smallest accum_bits a kernel may declare.
	MinAccumBits = 4
)

// Check reports the first configuration error as an *InputError naming the
// parameter and the rule: an unknown store, P not a power of two in [1,
// MaxPageSize], H outside [1, MaxHeads], accum_bits outside [MinAccumBits,
// 24], negative shape facts, num_pages < 1, and any size over its limit
// (the factors are bounded before the products are formed, so nothing
// overflows).
func (p Params) Check() error {
	switch {
	case p.Store != StoreFP8 && p.Store != StoreBF16:
		return difftest.Inputf("store", nil, "must be %q or %q, got %q", StoreFP8, StoreBF16, p.Store)
	case p.PageSize < 1 || p.PageSize > MaxPageSize || bits.OnesCount(uint(p.PageSize)) != 1:
		return difftest.Inputf("P", nil, "page size must be a power of two in [1, %d] (MaxPageSize), got %d", MaxPageSize, p.PageSize)
	case p.Heads < 1 || p.Heads > MaxHeads:
		return difftest.Inputf("H", nil, "heads must be in [1, %d], got %d", MaxHeads, p.Heads)
	case p.AccumBits < MinAccumBits || p.AccumBits > DefaultAccumBits:
		return difftest.Inputf("accum_bits", nil, "must be in [%d, %d] (24: f32 accumulation), got %d", MinAccumBits, DefaultAccumBits, p.AccumBits)
	}
	type bound struct {
		name   string
		v, max int64
		why    string
	}
	B, S, M, N := int64(p.Batch), int64(p.Stride), int64(p.MaxPages), int64(p.NumPages)
	for _, n := range []struct {
		name string
		v    int64
	}{{"batch", B}, {"stride", S}, {"max_pages", M}} {
		if n.v < 0 {
			return difftest.Inputf(n.name, nil, "must be ≥ 0, got %d", n.v)
		}
	}
	if N < 1 {
		return difftest.Inputf("num_pages", nil, "the cache must hold at least one page, got %d", N)
	}
	for _, b := range []bound{
		{"batch", B, MaxBatch, "rows"},
		{"stride", S, MaxSeqLen, "logits per row"},
		{"max_pages", M, MaxPages, "page-table entries per row"},
		{"num_pages", N, MaxNumPages, "cache pages"},
		{"batch·stride", B * S, MaxLogits, "logits"},
		{"batch·max_pages", B * M, MaxTableEntries, "page-table entries"},
		{"num_pages·page_bytes", N * int64(p.PageBytes()), MaxCacheBytes, "cache bytes"},
	} {
		if b.v > b.max {
			return difftest.Inputf(b.name, nil, "exceeds the limit of %d %s: got %d", b.max, b.why, b.v)
		}
	}
	return nil
}

// ParseParams decodes the JSON form of Params (capture files, exec
// metadata; unknown fields are errors) and checks it (Params.Check). A
// missing accum_bits reads as DefaultAccumBits.
func ParseParams(raw json.RawMessage) (Params, error) {
	p := Params{AccumBits: DefaultAccumBits}
	if err := difftest.DecodeStrict(raw, &p); err != nil {
		return Params{}, fmt.Errorf("%s params: %w", KernelName, err)
	}
	if err := p.Check(); err != nil {
		return Params{}, err
	}
	return p, nil
}

// paramsOf returns the Params of a case (stored by value or by pointer).
func paramsOf(c *difftest.Case) (Params, error) { return difftest.ParamsOf[Params](c) }
