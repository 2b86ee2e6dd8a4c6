/* dsv4_store.cu: the bring-your-own adapter of SGLang 0.5.23's DSv4
 * indexer-key store, FusedStoreCacheIndexerKernel (sglang/kernels/jit/
 * csrc/deepseek_v4/store.cuh, fused_store_indexer_cache), against the
 * norm_rope_store contract with stages = "store"
 * (docs/contracts/norm_rope_store.md): the kernel receives keys already
 * normed and rotated (SGLang's fused_store_cache(type="indexer") stores a
 * bf16 [N, 128] tensor) and quantises each token to 128 e4m3fn codes with
 * one plain f32 scale, max(amax, 1e-4) / 448, into pages of 132·P bytes:
 * the contract's FP8 store, block-planar. It is called through its own
 * host entry, FusedStoreCacheIndexerKernel<sglang::bf16_t, int64_t, P, false>::run,
 * read in place from the pinned wheel.
 *
 * The mapping: x bf16 [N, 128] is the kernel's input, out_loc i64 [N] its
 * indices, cache u8 [num_pages, 132·P] its cache; weight, bias, freqs and
 * positions are not read. The page size is a template argument: this
 * adapter instantiates P = 1, 2, 4, ..., 256 (SGLang instantiates the
 * indexer pool's page size, 64 for DSv4).
 *
 * Declined (KD_ADAPTER_UNSUPPORTED): stages other than store (the kernel
 * has no norm, RoPE or Hadamard); the BF16 and FP4 stores and ue8m0
 * scales (it writes FP8 with plain scales only); x_stride other than 128
 * (its input must be contiguous; SGLang's wrapper makes it so); page sizes
 * outside the list above.
 *
 * Not declined, because the adapter cannot see it without reading device
 * memory: out_loc = -1. The kernel has no such case (SGLang passes only
 * valid slots; slot 0 is its padding slot) and writes token -1 at page -1,
 * before the cache. Run it with --param holes=false, which gives every
 * token a slot, as SGLang's callers do. */
#include <kd_adapter.h>

#include <deepseek_v4/store.cuh>

#include "tvm_view.h"

namespace {

template <uint32_t kPageSize>
int store(const kd_normrope_params *p, cudaStream_t stream)
{
    using namespace kd_sglang;
    View input(p->x, kBF16, {p->num_tokens, 128});
    View cache(p->cache, kU8, {p->num_pages, 132 * int64_t{kPageSize}});
    View indices(p->out_loc, kI64, {p->num_tokens});
    using Kernel = sglang::FusedStoreCacheIndexerKernel<sglang::bf16_t, int64_t, kPageSize, false>;
    return call("dsv4 store", stream, [&] { Kernel::run(input.view(), cache.view(), indices.view()); });
}

} /* namespace */

KD_ADAPTER_API int kd_adapter_norm_rope_store(const kd_normrope_params *p, cudaStream_t stream)
{
    if (p->stages != KD_STAGES_STORE || p->store != KD_STORE_FP8 || p->scale_fmt != KD_SCALE_PLAIN || p->x_stride != 128)
        return KD_ADAPTER_UNSUPPORTED;
    if (p->num_tokens == 0) return 0;
    switch (p->log2_page) {
    case 0: return store<1>(p, stream);
    case 1: return store<2>(p, stream);
    case 2: return store<4>(p, stream);
    case 3: return store<8>(p, stream);
    case 4: return store<16>(p, stream);
    case 5: return store<32>(p, stream);
    case 6: return store<64>(p, stream);
    case 7: return store<128>(p, stream);
    case 8: return store<256>(p, stream);
    }
    return KD_ADAPTER_UNSUPPORTED;
}
