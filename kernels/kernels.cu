/* kernels.cu: the one translation unit of the kernel build.
 *
 * scripts/build-kernels compiles this file into build/kernels.fatbin, so
 * every kernel lands in one CUDA module and the bridge loads one image:
 *   kd_topk_transform_512, kd_topk_transform_1024, kd_topk_transform_2048
 *     (topk/topk.h), kd_norm_rope_store (normrope/normrope.h),
 *   kd_indexer_logits (logits/logits.h).
 * A fault build (-DKD_FAULT_<NAME>, kernels/faults.txt) compiles the same
 * file with one fault switched on. */

#include "topk/topk.cu"
#include "normrope/normrope.cu"
#include "logits/logits.cu"
