// Launcher of norm_rope_store (docs/contracts/norm_rope_store.md, kernels/normrope/normrope.h):
// packs kd_normrope_params by value for kd_norm_rope_store.

package bridge

/*
#cgo CFLAGS: -I${SRCDIR}/../kernels/normrope
#include <string.h>
#include "normrope.h"

#ifndef KD_NORMROPE_THREADS
#error "normrope.h must define KD_NORMROPE_THREADS (block size of the launch)"
#endif
#ifndef KD_NORMROPE_TOKENS_PER_BLOCK
#error "normrope.h must define KD_NORMROPE_TOKENS_PER_BLOCK"
#endif
#ifndef KD_NORMROPE_DYNAMIC_SMEM
#error "normrope.h must define KD_NORMROPE_DYNAMIC_SMEM (dynamic shared memory, bytes)"
#endif
enum { kd_normrope_threads = KD_NORMROPE_THREADS };
enum { kd_normrope_tokens_per_block = KD_NORMROPE_TOKENS_PER_BLOCK };
enum { kd_normrope_dynamic_smem = KD_NORMROPE_DYNAMIC_SMEM };

static void kd_pack_normrope(unsigned char *out,
		uint64_t x, uint64_t weight, uint64_t bias, uint64_t freqs,
		uint64_t positions, uint64_t out_loc, uint64_t cache,
		int64_t x_stride, int64_t num_tokens, int64_t max_pos, int64_t num_pages,
		float eps, int32_t log2_page, int32_t norm, int32_t rope_offset,
		int32_t rope_style, int32_t hadamard, int32_t store, int32_t scale_fmt, int32_t stages) {
	kd_normrope_params p;
	memset(&p, 0, sizeof p);
	p.x = (const uint16_t *)(uintptr_t)x;
	p.weight = (const float *)(uintptr_t)weight;
	p.bias = (const float *)(uintptr_t)bias;
	p.freqs = (const float *)(uintptr_t)freqs;
	p.positions = (const int64_t *)(uintptr_t)positions;
	p.out_loc = (const int64_t *)(uintptr_t)out_loc;
	p.cache = (uint8_t *)(uintptr_t)cache;
	p.x_stride = x_stride;
	p.num_tokens = num_tokens;
	p.max_pos = max_pos;
	p.num_pages = num_pages;
	p.eps = eps;
	p.log2_page = log2_page;
	p.norm = norm;
	p.rope_offset = rope_offset;
	p.rope_style = rope_style;
	p.hadamard = hadamard;
	p.store = store;
	p.scale_fmt = scale_fmt;
	p.stages = stages;
	memcpy(out, &p, sizeof p);
}
*/
import "C"

import (
	"math"
	"unsafe"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/kernels/normrope"
)

// normRopeParamsSize is sizeof(kd_normrope_params) as cgo compiled it.
const normRopeParamsSize = C.sizeof_kd_normrope_params

func init() {
	registerLauncher(launcher{Kernel: normrope.KernelName, Pack: packNormRope, Struct: "kd_normrope_params",
		Header: "kernels/normrope/normrope.h", Size: normRopeParamsSize, Entries: []string{"kd_norm_rope_store"}})
}

// packNormRope is norm_rope_store's packer: launchNormRope on the case's
// decoded normrope.Params.
var packNormRope = decoded(normrope.KernelName, launchNormRope)

// launchNormRope launches kd_norm_rope_store with KD_NORMROPE_THREADS
// threads per block and KD_NORMROPE_TOKENS_PER_BLOCK tokens per block:
// grid (⌈N / tokens per block⌉, 1, 1). Inputs x bf16 [N, x_stride ≥ 128],
// weight f32 [128], bias f32 [128] (required for LayerNorm, NULL when
// absent), freqs f32 [max_pos, 64], positions i64 [N], out_loc i64 [N];
// in/out cache u8 [num_pages, page_bytes] with page_bytes 132·P (FP8),
// 256·P (BF16) or 68·P (FP4). Errors name the tensor or parameter and the rule: unknown
// enum strings, rope_offset not 0 or 64, eps not finite and > 0, P not a
// power of two, shapes that disagree. stages "store" packs
// KD_STAGES_STORE (the keys arrive normed and rotated; store only). Per-token rules (positions below
// max_pos, out_loc distinct and in range) are the harness's Validate.
func launchNormRope(p normrope.Params, ts map[string]devTensor) (launch, error) {
	norm, err := enum("norm", p.Norm, map[string]int32{"rms": C.KD_NORM_RMS, "layer": C.KD_NORM_LAYER})
	if err != nil {
		return launch{}, err
	}
	style, err := enum("rope_style", p.RopeStyle, map[string]int32{"neox": C.KD_ROPE_NEOX, "interleaved": C.KD_ROPE_INTERLEAVED})
	if err != nil {
		return launch{}, err
	}
	store, err := enum("store", p.Store, map[string]int32{"fp8": C.KD_STORE_FP8, "bf16": C.KD_STORE_BF16, "fp4": C.KD_STORE_FP4})
	if err != nil {
		return launch{}, err
	}
	scale := int32(C.KD_SCALE_PLAIN)
	if p.Store != "bf16" || p.ScaleFmt != "" {
		if scale, err = enum("scale_fmt", p.ScaleFmt, map[string]int32{"plain": C.KD_SCALE_PLAIN, "ue8m0": C.KD_SCALE_UE8M0}); err != nil {
			return launch{}, err
		}
	}
	stages, err := enum("stages", p.Stages, map[string]int32{"": C.KD_STAGES_ALL, "store": C.KD_STAGES_STORE})
	if err != nil {
		return launch{}, err
	}
	if p.RopeOffset != 0 && p.RopeOffset != 64 {
		return launch{}, difftest.Inputf("rope_offset", nil, "must be 0 or 64, got %d", p.RopeOffset)
	}
	if e := float64(p.Eps); math.IsNaN(e) || math.IsInf(e, 0) || e <= 0 {
		return launch{}, difftest.Inputf("eps", nil, "must be finite and > 0, got %g", e)
	}
	log2P, err := log2Exact("P", p.PageSize)
	if err != nil {
		return launch{}, err
	}
	x, err := need(ts, "x", difftest.BF16, 2)
	if err != nil {
		return launch{}, err
	}
	n, xStride := x.Shape[0], x.Shape[1]
	if xStride < 128 {
		return launch{}, difftest.Inputf("x", nil, "row stride (dimension 1) must be ≥ 128, got %d", xStride)
	}
	key := axis{0, 128, "the key width"}
	weight, err := need(ts, "weight", difftest.F32, 1, key)
	if err != nil {
		return launch{}, err
	}
	biasPtr, present, err := optional(ts, "bias", difftest.F32, 1, key)
	if err != nil {
		return launch{}, err
	}
	if !present && p.Norm == "layer" {
		return launch{}, difftest.Inputf("bias", nil, "LayerNorm needs a bias tensor")
	}
	freqs, err := need(ts, "freqs", difftest.F32, 2, axis{1, 64, "32 (cos, sin) pairs"})
	if err != nil {
		return launch{}, err
	}
	tokens := axis{0, n, "N (rows of x)"}
	positions, err := need(ts, "positions", difftest.I64, 1, tokens)
	if err != nil {
		return launch{}, err
	}
	outLoc, err := need(ts, "out_loc", difftest.I64, 1, tokens)
	if err != nil {
		return launch{}, err
	}
	cache, err := need(ts, "cache", difftest.U8, 2, axis{1, p.PageBytes(), "page bytes for store " + p.Store + " and P"})
	if err != nil {
		return launch{}, err
	}
	if p.NumPages != 0 {
		if err := dim(cache, "cache", 0, p.NumPages, "num_pages"); err != nil {
			return launch{}, err
		}
	}
	l := blockLaunch("kd_norm_rope_store", C.kd_normrope_threads, C.kd_normrope_dynamic_smem)
	return l.over(ceilDiv(int64(n), int64(C.kd_normrope_tokens_per_block)), "x", normRopeParamsSize, func(out unsafe.Pointer) {
		C.kd_pack_normrope((*C.uchar)(out),
			C.uint64_t(x.Ptr), C.uint64_t(weight.Ptr), C.uint64_t(biasPtr), C.uint64_t(freqs.Ptr),
			C.uint64_t(positions.Ptr), C.uint64_t(outLoc.Ptr), C.uint64_t(cache.Ptr),
			C.int64_t(xStride), C.int64_t(n), C.int64_t(freqs.Shape[0]), C.int64_t(cache.Shape[0]),
			C.float(p.Eps), C.int32_t(log2P), C.int32_t(norm), C.int32_t(p.RopeOffset),
			C.int32_t(style), C.int32_t(cFlag(p.Hadamard)), C.int32_t(store), C.int32_t(scale), C.int32_t(stages))
	})
}
