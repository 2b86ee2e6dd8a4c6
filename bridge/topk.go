// Launcher of topk_transform (docs/contracts/topk_transform.md, kernels/topk/topk.h): packs
// kd_topk_params by value for kd_topk_transform_<K>.

package bridge

/*
#cgo CFLAGS: -I${SRCDIR}/../kernels/topk
#include <string.h>
#include "topk.h"

#ifndef KD_TOPK_THREADS
#error "topk.h must define KD_TOPK_THREADS (block size of the launch)"
#endif
#ifndef KD_TOPK_DYNAMIC_SMEM
#error "topk.h must define KD_TOPK_DYNAMIC_SMEM (dynamic shared memory, bytes)"
#endif
enum { kd_topk_threads = KD_TOPK_THREADS };
enum { kd_topk_dynamic_smem = KD_TOPK_DYNAMIC_SMEM };

static void kd_pack_topk(unsigned char *out,
		uint64_t scores, uint64_t seq_lens, uint64_t page_table,
		uint64_t page_indices, uint64_t raw_indices,
		int64_t stride, int64_t max_pages, int32_t batch, int32_t log2_page, int32_t k,
		int32_t score_dtype) {
	kd_topk_params p;
	memset(&p, 0, sizeof p);
	p.scores = (const void *)(uintptr_t)scores;
	p.seq_lens = (const int32_t *)(uintptr_t)seq_lens;
	p.page_table = (const int32_t *)(uintptr_t)page_table;
	p.page_indices = (int32_t *)(uintptr_t)page_indices;
	p.raw_indices = (int32_t *)(uintptr_t)raw_indices;
	p.stride = stride;
	p.max_pages = max_pages;
	p.batch = batch;
	p.log2_page = log2_page;
	p.k = k;
	p.score_dtype = score_dtype;
	memcpy(out, &p, sizeof p);
}
*/
import "C"

import (
	"math"
	"unsafe"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/kernels/topk"
)

// topkScoreDType maps score_dtype to the scores tensor dtype and the
// KD_TOPK_SCORES_* value of kd_topk_params.score_dtype.
func topkScoreDType(d string) (difftest.DType, C.int32_t, error) {
	switch d {
	case "", "f32":
		return difftest.F32, C.KD_TOPK_SCORES_F32, nil
	case "bf16":
		return difftest.BF16, C.KD_TOPK_SCORES_BF16, nil
	case "f16":
		return difftest.F16, C.KD_TOPK_SCORES_F16, nil
	}
	return "", 0, difftest.Inputf("score_dtype", nil, "must be f32, bf16 or f16, got %q", d)
}

// topkEntryKs are the K values topk.cu instantiates.
var topkEntryKs = [...]int{512, 1024, 2048}

// topkParamsSize is sizeof(kd_topk_params) as cgo compiled it.
const topkParamsSize = C.sizeof_kd_topk_params

func init() {
	var entries []string
	for _, k := range topkEntryKs {
		entries = append(entries, fmtEntry("kd_topk_transform_%d", k))
	}
	registerLauncher(launcher{Kernel: topk.KernelName, Pack: packTopk, Struct: "kd_topk_params",
		Header: "kernels/topk/topk.h", Size: topkParamsSize, Entries: entries})
}

// packTopk is topk_transform's packer: launchTopk on the case's decoded
// topk.Params.
var packTopk = decoded(topk.KernelName, launchTopk)

// launchTopk launches kd_topk_transform_<K> on one block of KD_TOPK_THREADS
// threads per row: grid (batch, 1, 1). Inputs scores f32 [B, stride]
// (BF16 or F16 per score_dtype, packed as kd_topk_params.score_dtype),
// seq_lens i32 [B], page_table i32 [B, max_pages]; outputs page_indices
// i32 [B, K] and, when present, raw_indices i32 [B, K] (absent: NULL).
// Errors: a K without an entry point, shapes that disagree with each other
// or with K, a page size that is not a power of two, a batch over 2^31 − 1.
// Per-row rules (seq_lens, slot range) are the harness's Validate.
func launchTopk(p topk.Params, ts map[string]devTensor) (launch, error) {
	ok := false
	for _, k := range topkEntryKs {
		ok = ok || p.K == k
	}
	if !ok {
		return launch{}, difftest.Inputf("K", nil, "the CUDA kernel instantiates K = 512, 1024, 2048 only, got %d", p.K)
	}
	log2P, err := log2Exact("P", p.P)
	if err != nil {
		return launch{}, err
	}
	scoresDType, dtypeCode, err := topkScoreDType(p.ScoreDType)
	if err != nil {
		return launch{}, err
	}
	scores, err := need(ts, "scores", scoresDType, 2)
	if err != nil {
		return launch{}, err
	}
	batch, stride := scores.Shape[0], scores.Shape[1]
	rows := axis{0, batch, "batch (rows of scores)"}
	seqLens, err := need(ts, "seq_lens", difftest.I32, 1, rows)
	if err != nil {
		return launch{}, err
	}
	table, err := need(ts, "page_table", difftest.I32, 2, rows)
	if err != nil {
		return launch{}, err
	}
	outShape := []axis{{0, batch, "batch"}, {1, p.K, "K"}}
	out, err := need(ts, "page_indices", difftest.I32, 2, outShape...)
	if err != nil {
		return launch{}, err
	}
	rawPtr, present, err := optional(ts, "raw_indices", difftest.I32, 2, outShape...)
	if err != nil {
		return launch{}, err
	}
	if !present && p.ReturnRaw {
		return launch{}, difftest.Inputf("raw_indices", nil, "params ask for raw indices (return_raw) but the case has no such output")
	}
	if batch > math.MaxInt32 {
		return launch{}, difftest.Inputf("scores", nil, "batch %d exceeds int32", batch)
	}
	l := blockLaunch(fmtEntry("kd_topk_transform_%d", p.K), C.kd_topk_threads, C.kd_topk_dynamic_smem)
	return l.over(int64(batch), "scores", topkParamsSize, func(dst unsafe.Pointer) {
		C.kd_pack_topk((*C.uchar)(dst),
			C.uint64_t(scores.Ptr), C.uint64_t(seqLens.Ptr), C.uint64_t(table.Ptr),
			C.uint64_t(out.Ptr), C.uint64_t(rawPtr),
			C.int64_t(stride), C.int64_t(table.Shape[1]), C.int32_t(batch), C.int32_t(log2P), C.int32_t(p.K),
			dtypeCode)
	})
}
