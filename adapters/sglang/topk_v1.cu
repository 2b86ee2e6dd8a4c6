/* topk_v1.cu: the bring-your-own adapter of SGLang 0.5.23's DSv4 top-k
 * kernel, topk_transform_512 (sglang/kernels/jit/csrc/deepseek_v4/
 * topk_v1.cuh, its radix select in sgl_kernel/dsa/legacy_radix_topk.cuh),
 * against the topk_transform contract (docs/contracts/topk_transform.md).
 * The kernel is read in place from the pinned wheel (scripts/sglang-emu
 * fetches it) and called through its own host entry,
 * sglang::TopKKernel<false>::transform, with tvm-ffi TensorViews over the
 * contract's device pointers.
 *
 * The mapping, tensor by tensor: scores f32 [B, stride] (row stride
 * `stride`), seq_lens i32 [B], page_table i32 [B, max_pages], page_indices
 * i32 [B, K], page_size = 2^log2_page, raw_indices i32 [B, K] when the
 * case returns them (the kernel's optional out_raw_indices). K is a
 * run-time argument of the kernel, at most 1024 (kMaxTopK).
 *
 * Declined (KD_ADAPTER_UNSUPPORTED, the case is not tested): bf16 and f16
 * scores (the kernel takes f32 only; SGLang's 16-bit top-k is another
 * kernel) and K above 1024 (the contract's K = 2048 has no counterpart
 * here; SGLang's topk_v2 serves it with thread block clusters, which the
 * emulator refuses). */
#include <kd_adapter.h>

#include <deepseek_v4/topk_v1.cuh>

#include "tvm_view.h"

KD_ADAPTER_API int kd_adapter_topk_transform(const kd_topk_params *p, cudaStream_t stream)
{
    using namespace kd_sglang;
    if (p->score_dtype != KD_TOPK_SCORES_F32 || p->k < 1 || p->k > static_cast<int32_t>(sglang::kMaxTopK))
        return KD_ADAPTER_UNSUPPORTED;
    if (p->batch == 0) return 0; /* no rows: nothing to launch (the kernel's grid would be empty) */
    View scores(p->scores, kF32, {p->batch, p->stride});
    View seq_lens(p->seq_lens, kI32, {p->batch});
    View page_table(p->page_table, kI32, {p->batch, p->max_pages});
    View page_indices(p->page_indices, kI32, {p->batch, p->k});
    View raw(p->raw_indices, kI32, {p->batch, p->k});
    tvm::ffi::Optional<tvm::ffi::TensorView> raw_opt;
    if (p->raw_indices != nullptr) raw_opt = raw.view();
    return call("topk_v1", stream, [&] {
        sglang::TopKKernel<false>::transform(scores.view(), seq_lens.view(), page_table.view(), page_indices.view(),
                                             uint32_t{1} << p->log2_page, raw_opt);
    });
}
