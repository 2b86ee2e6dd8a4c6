// Launcher of indexer_logits (docs/contracts/indexer_logits.md, kernels/logits/logits.h):
// packs kd_logits_params by value for kd_indexer_logits.

package bridge

/*
#cgo CFLAGS: -I${SRCDIR}/../kernels/logits
#include <string.h>
#include "logits.h"

#ifndef KD_LOGITS_THREADS
#error "logits.h must define KD_LOGITS_THREADS (block size of the launch)"
#endif
#ifndef KD_LOGITS_TILE
#error "logits.h must define KD_LOGITS_TILE (positions per block)"
#endif
#ifndef KD_LOGITS_MAX_HEADS
#error "logits.h must define KD_LOGITS_MAX_HEADS"
#endif
#ifndef KD_LOGITS_DYNAMIC_SMEM
#error "logits.h must define KD_LOGITS_DYNAMIC_SMEM (dynamic shared memory, bytes)"
#endif
#ifndef KD_LOGITS_MAX_NEXT_N
#error "logits.h must define KD_LOGITS_MAX_NEXT_N"
#endif
enum { kd_logits_threads = KD_LOGITS_THREADS };
enum { kd_logits_tile = KD_LOGITS_TILE };
enum { kd_logits_max_heads = KD_LOGITS_MAX_HEADS };
enum { kd_logits_dynamic_smem = KD_LOGITS_DYNAMIC_SMEM };
enum { kd_logits_max_next_n = KD_LOGITS_MAX_NEXT_N };

static void kd_pack_logits(unsigned char *out,
		uint64_t q, uint64_t weights, uint64_t cache, uint64_t seq_lens, uint64_t page_table, uint64_t logits,
		int64_t stride, int64_t max_pages, int64_t num_pages,
		int32_t batch, int32_t heads, int32_t log2_page, int32_t store, int32_t clean, int32_t tiles,
		int64_t page_stride, int32_t next_n, int32_t logits_bf16) {
	kd_logits_params p;
	memset(&p, 0, sizeof p);
	p.q = (const uint8_t *)(uintptr_t)q;
	p.weights = (const float *)(uintptr_t)weights;
	p.cache = (const uint8_t *)(uintptr_t)cache;
	p.seq_lens = (const int32_t *)(uintptr_t)seq_lens;
	p.page_table = (const int32_t *)(uintptr_t)page_table;
	p.logits = (void *)(uintptr_t)logits;
	p.stride = stride;
	p.max_pages = max_pages;
	p.num_pages = num_pages;
	p.batch = batch;
	p.heads = heads;
	p.log2_page = log2_page;
	p.store = store;
	p.clean = clean;
	p.tiles = tiles;
	p.page_stride = page_stride;
	p.next_n = next_n;
	p.logits_bf16 = logits_bf16;
	memcpy(out, &p, sizeof p);
}
*/
import "C"

import (
	"math"
	"unsafe"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/kernels/logits"
)

// logitsParamsSize is sizeof(kd_logits_params) as cgo compiled it.
const logitsParamsSize = C.sizeof_kd_logits_params

func init() {
	registerLauncher(launcher{Kernel: logits.KernelName, Pack: packLogits, Struct: "kd_logits_params",
		Header: "kernels/logits/logits.h", Size: logitsParamsSize, Entries: []string{"kd_indexer_logits"}})
}

// packLogits is indexer_logits' packer: launchLogits on the case's
// decoded logits.Params.
var packLogits = decoded(logits.KernelName, launchLogits)

// launchLogits launches kd_indexer_logits with KD_LOGITS_THREADS threads per
// block, one block per (query row, tile of KD_LOGITS_TILE positions): grid
// (batch · next_n · ⌈stride / tile⌉, 1, 1). Inputs q [B, (next_n,) H, 128]
// (u8 e4m3fn codes for store fp8, bf16 for bf16) or [B, (next_n,) H, 68]
// (u8 FP4 records for fp4), weights f32 [B·next_n, H], cache u8
// [num_pages, page_stride] (tight 132·P, 256·P or 68·P when page_stride is
// absent), seq_lens i32 [B] (next_n = 1) or [B, next_n], page_table i32
// [B, max_pages]; output logits f32 or bf16 (logits_dtype) [B·next_n,
// stride]. Errors name the tensor or parameter and the rule: an unknown
// store or logits_dtype, H outside [1, KD_LOGITS_MAX_HEADS] (the kernel
// stages at most 64 heads; the contract allows 128), P not a power of
// two, next_n outside [1, KD_LOGITS_MAX_NEXT_N], page_stride below the
// tight page or not a multiple of 4, shapes that disagree, a grid over
// 2^31 − 1 blocks. accum_bits only loosens the comparator's bound; the
// kernel accumulates in f32 whatever a case declares. Per-row rules
// (seq_lens, page ids) are the harness's Validate.
func launchLogits(p logits.Params, ts map[string]devTensor) (launch, error) {
	store, err := enum("store", p.Store, map[string]int32{"fp8": C.KD_LOGITS_STORE_FP8, "bf16": C.KD_LOGITS_STORE_BF16, "fp4": C.KD_LOGITS_STORE_FP4})
	if err != nil {
		return launch{}, err
	}
	if p.LogitsDType == "" {
		p.LogitsDType = "f32"
	}
	bf16Out, err := enum("logits_dtype", p.LogitsDType, map[string]int32{"f32": 0, "bf16": 1})
	if err != nil {
		return launch{}, err
	}
	if p.Heads < 1 || p.Heads > int(C.kd_logits_max_heads) {
		return launch{}, difftest.Inputf("H", nil, "the CUDA kernel takes 1 to %d heads (KD_LOGITS_MAX_HEADS), got %d", int(C.kd_logits_max_heads), p.Heads)
	}
	log2P, err := log2Exact("P", p.PageSize)
	if err != nil {
		return launch{}, err
	}
	nextN := p.NextN
	if nextN == 0 {
		nextN = 1
	}
	if nextN < 1 || nextN > int(C.kd_logits_max_next_n) {
		return launch{}, difftest.Inputf("next_n", nil, "the CUDA kernel takes 1 to %d rows per request (KD_LOGITS_MAX_NEXT_N), got %d", int(C.kd_logits_max_next_n), nextN)
	}
	qType, qHead, pageBytes := p.QDType(), p.QHeadElems(), p.PageBytes()
	if p.PageStride != 0 && (p.PageStride < pageBytes || p.PageStride%4 != 0) {
		return launch{}, difftest.Inputf("page_stride", nil, "must be a multiple of 4 ≥ the tight page bytes %d for store %s and P, got %d", pageBytes, p.Store, p.PageStride)
	}
	pitch := p.Pitch()
	logits, err := need(ts, "logits", p.OutDType(), 2)
	if err != nil {
		return launch{}, err
	}
	rows, stride := logits.Shape[0], logits.Shape[1]
	if rows%nextN != 0 {
		return launch{}, difftest.Inputf("logits", nil, "rows %d are not a multiple of next_n = %d", rows, nextN)
	}
	batch := rows / nextN
	reqsWhat := "batch (rows of logits)"
	if nextN > 1 {
		reqsWhat = "batch (rows of logits / next_n)"
	}
	reqs := axis{0, batch, reqsWhat}
	allRows := axis{0, rows, "batch·next_n (rows of logits)"}
	var q, seqLens devTensor
	if nextN == 1 {
		q, err = need(ts, "q", qType, 3, reqs, axis{1, p.Heads, "H"}, axis{2, qHead, "the head record"})
	} else {
		q, err = need(ts, "q", qType, 4, reqs, axis{1, nextN, "next_n"}, axis{2, p.Heads, "H"}, axis{3, qHead, "the head record"})
	}
	if err != nil {
		return launch{}, err
	}
	weights, err := need(ts, "weights", difftest.F32, 2, allRows, axis{1, p.Heads, "H"})
	if err != nil {
		return launch{}, err
	}
	cache, err := need(ts, "cache", difftest.U8, 2, axis{1, pitch, "page bytes for store " + p.Store + " and P"})
	if err != nil {
		return launch{}, err
	}
	if nextN == 1 {
		seqLens, err = need(ts, "seq_lens", difftest.I32, 1, reqs)
	} else {
		seqLens, err = need(ts, "seq_lens", difftest.I32, 2, reqs, axis{1, nextN, "next_n"})
	}
	if err != nil {
		return launch{}, err
	}
	table, err := need(ts, "page_table", difftest.I32, 2, reqs)
	if err != nil {
		return launch{}, err
	}
	if batch > math.MaxInt32 {
		return launch{}, difftest.Inputf("logits", nil, "batch %d exceeds int32", batch)
	}
	tiles := ceilDiv(int64(stride), int64(C.kd_logits_tile))
	l := blockLaunch("kd_indexer_logits", C.kd_logits_threads, C.kd_logits_dynamic_smem)
	return l.over(int64(rows)*tiles, "logits", logitsParamsSize, func(out unsafe.Pointer) {
		C.kd_pack_logits((*C.uchar)(out),
			C.uint64_t(q.Ptr), C.uint64_t(weights.Ptr), C.uint64_t(cache.Ptr), C.uint64_t(seqLens.Ptr), C.uint64_t(table.Ptr), C.uint64_t(logits.Ptr),
			C.int64_t(stride), C.int64_t(table.Shape[1]), C.int64_t(cache.Shape[0]),
			C.int32_t(batch), C.int32_t(p.Heads), C.int32_t(log2P), C.int32_t(store), C.int32_t(cFlag(p.Clean)), C.int32_t(tiles),
			C.int64_t(pitch), C.int32_t(nextN), C.int32_t(bf16Out))
	})
}
