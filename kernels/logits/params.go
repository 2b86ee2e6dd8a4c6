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
	"github.com/kerneldiff/kerneldiff/kernels/normrope"
)

// KernelName is the contract name of docs/contracts/indexer_logits.md.
const KernelName = "indexer_logits"

// Dim is the indexer head dimension: every query head and every cached key
// has 128 values (the keys norm_rope_store writes, docs/contracts/norm_rope_store.md).
const Dim = 128

// Contract names of the tensors, in contract order.
const (
	NameQ         = "q"          // in: [B, (next_n,) H, ·]: FP8 u8 e4m3fn codes ·128; BF16 bf16 ·128; FP4 u8 ·68 (64 packed e2m1 bytes, 4 ue8m0 bytes)
	NameWeights   = "weights"    // in: f32 [B·next_n, H]
	NameCache     = "cache"      // in: u8 [num_pages, page_stride], page_stride ≥ 132·P (FP8), 256·P (BF16), 68·P (FP4)
	NameSeqLens   = "seq_lens"   // in: i32 [B] (next_n = 1) or [B, next_n] (DeepGEMM's context_lens)
	NamePageTable = "page_table" // in: i32 [B, max_pages]
	NameLogits    = "logits"     // out: f32 or bf16 [B·next_n, stride]
)

// InputNames returns the input tensor names in contract order: q, weights,
// cache, seq_lens, page_table.
func InputNames() []string {
	return []string{NameQ, NameWeights, NameCache, NameSeqLens, NamePageTable}
}

// Stores (Params.Store), the layouts of docs/contracts/norm_rope_store.md
// step 4 and its "FP4 keys" section.
const (
	StoreFP8  = "fp8"  // 128 e4m3fn codes per slot, then per page the slots' f32 scales
	StoreBF16 = "bf16" // 128 bf16 values per slot
	StoreFP4  = "fp4"  // 64 bytes of packed e2m1 codes per slot (d = 2i low nibble, 2i+1 high), then per page the slots' 4 ue8m0 block scales
)

// FP4 layout: 32 values per ue8m0 block scale, 4 blocks per key, 64 code
// bytes and 4 scale bytes per slot (and per FP4 query head).
const (
	FP4Block      = 32
	FP4Blocks     = Dim / FP4Block
	FP4CodeBytes  = Dim / 2
	FP4TokenBytes = FP4CodeBytes + FP4Blocks
)

// Output precisions (Params.LogitsDType).
const (
	LogitsF32  = "f32"  // the default ("" reads as f32)
	LogitsBF16 = "bf16" // DeepGEMM's logits_dtype = torch.bfloat16 (the sparse paged variant's output)
)

// DefaultAccumBits is the accumulation precision of an f32 kernel, the
// default of Params.AccumBits: 24 significand bits, binary32.
const DefaultAccumBits = 24

// Params are the parameters of one indexer_logits case. They travel as
// JSON in exec metadata and capture files (the field names match the
// bridge's packer of logits.h), and FromTensors reads them back.
//
// Store, PageSize (P), Heads (H), Clean, AccumBits, NextN, PageStride
// and LogitsDType are contract parameters; Batch (B, requests), Stride,
// MaxPages and NumPages are the shape facts of the tensors (q [B,
// (next_n,) H, 128 or 68], weights [B·next_n, H], cache [NumPages,
// page_stride], seq_lens [B] or [B, next_n], page_table [B, MaxPages],
// logits [B·next_n, Stride]); Family and Pages say how the generator drew
// the case (informational, kept in captures); Needles, for the needle
// family, the planted position of each row (−1 for none).
//
// The zero values of NextN, PageStride and LogitsDType are the defaults
// (1, the tight page size, f32), so the JSON of a case that uses them
// omits them; ParseParams rejects an explicit 0.
type Params struct {
	Store       string `json:"store"`                  // "fp8", "bf16" or "fp4"
	PageSize    int    `json:"page_size"`              // P, slots per page, a power of two in [1, MaxPageSize]
	Heads       int    `json:"heads"`                  // H, in [1, MaxHeads]
	Clean       bool   `json:"clean"`                  // positions s ≥ L_b must be −inf (DeepGEMM clean_logits); else unspecified
	AccumBits   int    `json:"accum_bits"`             // significand bits of the kernel's dot products, in [MinAccumBits, 24] (bound.go)
	NextN       int    `json:"next_n,omitempty"`       // query rows per request (multi-token prediction), in [1, MaxNextN]; 0 reads as 1
	PageStride  int    `json:"page_stride,omitempty"`  // bytes from one cache page to the next, ≥ the tight page size, a multiple of 4; 0 reads as tight
	LogitsDType string `json:"logits_dtype,omitempty"` // "f32" (default, "" reads as it) or "bf16"
	Batch       int    `json:"batch"`
	Stride      int    `json:"stride"`
	MaxPages    int    `json:"max_pages"`
	NumPages    int    `json:"num_pages"`
	Family      string `json:"family,omitempty"`
	Pages       string `json:"pages,omitempty"`
	Needles     []int  `json:"needles,omitempty"`
}

// Log2P returns log2 of the page size (PageSize must be a power of two).
func (p Params) Log2P() int { return bits.TrailingZeros(uint(p.PageSize)) }

// PageBytes returns the tight bytes of one cache page, the layout
// norm_rope_store writes (normrope.PageBytes): 132·P for FP8 (128 code
// bytes and a 4-byte f32 scale per slot), 256·P for BF16, 68·P for FP4 (64
// code bytes and 4 ue8m0 bytes per slot).
func (p Params) PageBytes() int { return normrope.PageBytes(p.Store, p.PageSize) }

// Pitch returns the bytes from one cache page to the next: PageStride, or
// PageBytes when it is 0. Bytes [PageBytes, Pitch) of a page are padding,
// which no kernel may read.
func (p Params) Pitch() int {
	if p.PageStride != 0 {
		return p.PageStride
	}
	return p.PageBytes()
}

// Rows returns the query rows, Batch·NextN: the rows of weights and logits.
func (p Params) Rows() int { return p.Batch * p.N() }

// N returns next_n (NextN, 1 when 0).
func (p Params) N() int { return max(p.NextN, 1) }

// BF16Out reports whether the logits are bf16 (LogitsDType "bf16").
func (p Params) BF16Out() bool { return p.LogitsDType == LogitsBF16 }

// OutDType returns the dtype of the logits: F32, or BF16.
func (p Params) OutDType() difftest.DType {
	if p.BF16Out() {
		return difftest.BF16
	}
	return difftest.F32
}

// QDType returns the dtype of q: U8 (e4m3fn codes) for the FP8 store,
// BF16 for the BF16 store, U8 (packed e2m1 codes and ue8m0 scales) for
// FP4.
func (p Params) QDType() difftest.DType {
	if p.Store == StoreBF16 {
		return difftest.BF16
	}
	return difftest.U8
}

// QHeadElems returns the elements of one query head in q: 128, or 68
// bytes for FP4 (64 packed code bytes, then the 4 ue8m0 block scales;
// DeepGEMM passes those as q_sf i32 [B, next_n, H], the same bytes).
func (p Params) QHeadElems() int {
	if p.Store == StoreFP4 {
		return FP4TokenBytes
	}
	return Dim
}

// QShape returns the shape of q: [B, H, 128 or 68] for next_n = 1, [B,
// next_n, H, 128 or 68] otherwise (DeepGEMM's layout).
func (p Params) QShape() []int {
	if p.N() == 1 {
		return []int{p.Batch, p.Heads, p.QHeadElems()}
	}
	return []int{p.Batch, p.N(), p.Heads, p.QHeadElems()}
}

// LensShape returns the shape of seq_lens: [B] for next_n = 1, [B,
// next_n] otherwise (DeepGEMM's context_lens). Row r of request b is
// element b·next_n + r.
func (p Params) LensShape() []int {
	if p.N() == 1 {
		return []int{p.Batch}
	}
	return []int{p.Batch, p.N()}
}

// Outputs returns the output list: logits f32 or bf16 [Batch·NextN, Stride].
func (p Params) Outputs() []difftest.OutputSpec {
	return []difftest.OutputSpec{{Name: NameLogits, DType: p.OutDType(), Shape: []int{p.Rows(), p.Stride}}}
}

// String renders the configuration in one line, for messages.
func (p Params) String() string {
	return fmt.Sprintf("store=%s P=%d H=%d clean=%v accum_bits=%d next_n=%d page_stride=%d logits=%s batch=%d stride=%d max_pages=%d num_pages=%d",
		p.Store, p.PageSize, p.Heads, p.Clean, p.AccumBits, p.N(), p.Pitch(), p.OutDType(), p.Batch, p.Stride, p.MaxPages, p.NumPages)
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
	// MaxNextN bounds next_n: 16 query rows per request (DeepGEMM tests
	// 1, 2 and 6).
	MaxNextN = 16
	// MaxPagePad bounds the padding of a page, page_stride − page_bytes:
	// 2^16 bytes.
	MaxPagePad = 1 << 16
)

// Check reports the first configuration error as an *InputError naming the
// parameter and the rule: an unknown store, P not a power of two in [1,
// MaxPageSize], H outside [1, MaxHeads], accum_bits outside [MinAccumBits,
// 24], next_n outside [1, MaxNextN] (0 reads as 1), page_stride neither 0
// (tight) nor a multiple of 4 in [page_bytes, page_bytes + MaxPagePad],
// an unknown logits_dtype, negative shape facts, num_pages < 1, and any
// size over its limit (the factors are bounded before the products are
// formed, so nothing overflows).
func (p Params) Check() error {
	switch {
	case p.Store != StoreFP8 && p.Store != StoreBF16 && p.Store != StoreFP4:
		return difftest.Inputf("store", nil, "must be %q, %q or %q, got %q", StoreFP8, StoreBF16, StoreFP4, p.Store)
	case p.PageSize < 1 || p.PageSize > MaxPageSize || bits.OnesCount(uint(p.PageSize)) != 1:
		return difftest.Inputf("P", nil, "page size must be a power of two in [1, %d] (MaxPageSize), got %d", MaxPageSize, p.PageSize)
	case p.Heads < 1 || p.Heads > MaxHeads:
		return difftest.Inputf("H", nil, "heads must be in [1, %d], got %d", MaxHeads, p.Heads)
	case p.AccumBits < MinAccumBits || p.AccumBits > DefaultAccumBits:
		return difftest.Inputf("accum_bits", nil, "must be in [%d, %d] (24: f32 accumulation), got %d", MinAccumBits, DefaultAccumBits, p.AccumBits)
	case p.NextN < 0 || p.NextN > MaxNextN:
		return difftest.Inputf("next_n", nil, "must be in [1, %d] (query rows per request), got %d", MaxNextN, p.NextN)
	case p.LogitsDType != "" && p.LogitsDType != LogitsF32 && p.LogitsDType != LogitsBF16:
		return difftest.Inputf("logits_dtype", nil, "must be %q or %q, got %q", LogitsF32, LogitsBF16, p.LogitsDType)
	}
	if s := p.PageStride; s != 0 {
		tight := p.PageBytes()
		switch {
		case s < tight || s > tight+MaxPagePad:
			return difftest.Inputf("page_stride", nil, "must be in [the tight page size %s, +%d bytes of padding], got %d", pageBytesRule(p), MaxPagePad, s)
		case s%4 != 0:
			return difftest.Inputf("page_stride", nil, "must be a multiple of 4 bytes (the scale words stay aligned), got %d", s)
		}
	}
	B, S, M, N := int64(p.Batch), int64(p.Stride), int64(p.MaxPages), int64(p.NumPages)
	cacheName := "num_pages·page_bytes"
	if p.PageStride != 0 {
		cacheName = "num_pages·page_stride"
	}
	if err := difftest.NonNegative(difftest.Size{Name: "batch", V: B}, difftest.Size{Name: "stride", V: S}, difftest.Size{Name: "max_pages", V: M}); err != nil {
		return err
	}
	if N < 1 {
		return difftest.Inputf("num_pages", nil, "the cache must hold at least one page, got %d", N)
	}
	return difftest.WithinLimits(
		difftest.AtMost("batch", B, MaxBatch, "rows"),
		difftest.AtMost("stride", S, MaxSeqLen, "logits per row"),
		difftest.AtMost("max_pages", M, MaxPages, "page-table entries per row"),
		difftest.AtMost("num_pages", N, MaxNumPages, "cache pages"),
		difftest.AtMost("batch·next_n·stride", B*int64(p.N())*S, MaxLogits, "logits"),
		difftest.AtMost("batch·max_pages", B*M, MaxTableEntries, "page-table entries"),
		difftest.AtMost("batch·next_n", B*int64(p.N()), MaxBatch, "query rows"),
		difftest.AtMost(cacheName, N*int64(p.Pitch()), MaxCacheBytes, "cache bytes"),
	)
}

// ParseParams decodes the JSON form of Params (capture files, exec
// metadata; unknown fields are errors) and checks it (Params.Check). A
// missing accum_bits reads as DefaultAccumBits, a missing next_n as 1, a
// missing page_stride as the tight page size, a missing logits_dtype as
// f32; an explicit next_n or page_stride of 0 is an error (omit the field
// for the default).
func ParseParams(raw json.RawMessage) (Params, error) {
	p := Params{AccumBits: DefaultAccumBits}
	if err := difftest.DecodeStrict(raw, &p); err != nil {
		return Params{}, fmt.Errorf("%s params: %w", KernelName, err)
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(raw, &present); err != nil {
		return Params{}, fmt.Errorf("%s params: %w", KernelName, err)
	}
	for _, f := range []struct {
		name string
		v    int
		rule string
	}{{"next_n", p.NextN, "≥ 1 (omit it for 1)"}, {"page_stride", p.PageStride, "≥ the tight page size " + pageBytesRule(p) + " (omit it for tight pages)"}} {
		if _, ok := present[f.name]; ok && f.v == 0 {
			return Params{}, difftest.Inputf(f.name, nil, "must be %s, got an explicit 0", f.rule)
		}
	}
	if err := p.Check(); err != nil {
		return Params{}, err
	}
	return p, nil
}

// paramsOf returns the Params of a case (stored by value or by pointer).
func paramsOf(c *difftest.Case) (Params, error) { return difftest.ParamsOf[Params](c) }
