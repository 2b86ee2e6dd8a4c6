/* v32_indexer_k.cu: the bring-your-own adapter of SGLang 0.5.23's
 * DeepSeek-V3.2 fused indexer-key kernel, FusedKIndexerNormRopeStoreKernel
 * (sglang/kernels/jit/csrc/deepseek_v32/indexer_k.cuh,
 * fused_k_indexer_norm_rope_store: LayerNorm, RoPE on the leading 64 dims,
 * FP8 quantisation with a plain f32 scale, paged store), against the
 * norm_rope_store contract (docs/contracts/norm_rope_store.md). It is
 * called through its own host entry,
 * FusedKIndexerNormRopeStoreKernel<sglang::bf16_t, false, P>::forward, read in
 * place from the pinned wheel.
 *
 * What the kernel computes, in the contract's terms: norm = layer,
 * rope_offset = 0, rope_style = interleaved (lane l rotates the pairs
 * (4l, 4l+1) and (4l+2, 4l+3), i.e. (2j, 2j+1)), hadamard off ("V3.2
 * drops the Hadamard incoherence rotation"), store = fp8 with plain
 * scales, pages of 132·P bytes. Its 1/sqrt is rsqrt (math::rsqrt), and it
 * computes the norm and RoPE in f32, then rounds the rotated key to bf16
 * once before quantising ("so the fp8 scale matches the un-fused path"):
 * declare that with --param intermediate=bf16-once, or the f32 contract
 * fails it where the rounding shows.
 *
 * The mapping: x bf16 [N, x_stride] is k_input (its row stride is the
 * kernel's k_input_stride_batch), out_loc i64 [N] the indices, cache u8
 * [num_pages, 132·P], weight and bias f32 [128] the LayerNorm's γ and β,
 * positions i64 [N]; eps as is. The kernel's cos_sin_cache is [max_pos,
 * 64] with each row's 32 cosines, then its 32 sines, where the contract's
 * freqs interleaves (cos_j, sin_j): the adapter copies freqs into that
 * layout (a device buffer and a small kernel of its own; values
 * unchanged) before each call. The page size is a template argument:
 * P = 1, 2, 4, ..., 256 are instantiated (SGLang instantiates the index
 * pool's, 64).
 *
 * Declined (KD_ADAPTER_UNSUPPORTED): any other configuration (RMSNorm,
 * neox, rope_offset 64, the Hadamard, BF16/FP4 stores, ue8m0 scales,
 * stages = store); a LayerNorm without bias; an x_stride that is not a
 * multiple of 4 (the kernel loads 4 bf16 per lane as one 8-byte vector,
 * so each row must start 8-byte aligned); page sizes outside the list.
 *
 * Not declined: out_loc = -1, which the kernel does not skip (it writes
 * page -1, before the cache): run with --param holes=false. */
#include <kd_adapter.h>

#include <deepseek_v32/indexer_k.cuh>

#include "tvm_view.h"

#include <algorithm>

namespace {

/* kd_cos_sin_halves rewrites freqs [rows, 64], (cos_j, sin_j) interleaved,
 * as out [rows, 64], the 32 cosines then the 32 sines of each row. */
__global__ void kd_cos_sin_halves(const float *freqs, float *out, int64_t rows)
{
    const int64_t n = rows * 32;
    for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
        const int64_t row = i / 32, j = i % 32;
        out[row * 64 + j] = freqs[row * 64 + 2 * j];
        out[row * 64 + 32 + j] = freqs[row * 64 + 2 * j + 1];
    }
}

template <uint32_t kPageSize>
int forward(const kd_normrope_params *p, const float *cos_sin, cudaStream_t stream)
{
    using namespace kd_sglang;
    View k_input(p->x, kBF16, {p->num_tokens, 128}, p->x_stride);
    View cache(p->cache, kU8, {p->num_pages, 132 * int64_t{kPageSize}});
    View indices(p->out_loc, kI64, {p->num_tokens});
    View weight(p->weight, kF32, {128});
    View bias(p->bias, kF32, {128});
    View cs(cos_sin, kF32, {p->max_pos, 64});
    View positions(p->positions, kI64, {p->num_tokens});
    using Kernel = sglang::FusedKIndexerNormRopeStoreKernel<sglang::bf16_t, false, kPageSize>;
    return call("v3.2 indexer_k", stream, [&] {
        Kernel::forward(
            k_input.view(), cache.view(), indices.view(), weight.view(), bias.view(), cs.view(), positions.view(),
            static_cast<double>(p->eps));
    });
}

int dispatch(const kd_normrope_params *p, const float *cos_sin, cudaStream_t stream)
{
    switch (p->log2_page) {
    case 0: return forward<1>(p, cos_sin, stream);
    case 1: return forward<2>(p, cos_sin, stream);
    case 2: return forward<4>(p, cos_sin, stream);
    case 3: return forward<8>(p, cos_sin, stream);
    case 4: return forward<16>(p, cos_sin, stream);
    case 5: return forward<32>(p, cos_sin, stream);
    case 6: return forward<64>(p, cos_sin, stream);
    case 7: return forward<128>(p, cos_sin, stream);
    case 8: return forward<256>(p, cos_sin, stream);
    }
    return KD_ADAPTER_UNSUPPORTED;
}

} /* namespace */

KD_ADAPTER_API int kd_adapter_norm_rope_store(const kd_normrope_params *p, cudaStream_t stream)
{
    if (p->stages != KD_STAGES_ALL || p->norm != KD_NORM_LAYER || p->bias == nullptr || p->rope_offset != 0 ||
        p->rope_style != KD_ROPE_INTERLEAVED || p->hadamard != 0 || p->store != KD_STORE_FP8 ||
        p->scale_fmt != KD_SCALE_PLAIN || p->x_stride % 4 != 0 || p->log2_page < 0 || p->log2_page > 8)
        return KD_ADAPTER_UNSUPPORTED;
    if (p->num_tokens == 0) return 0;
    float *cos_sin = nullptr;
    int rc = cudaMalloc(reinterpret_cast<void **>(&cos_sin), static_cast<size_t>(p->max_pos) * 64 * sizeof(float));
    if (rc != 0) return rc;
    const int64_t pairs = p->max_pos * 32;
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((pairs + 255) / 256, 1024));
    kd_cos_sin_halves<<<blocks, 256, 0, stream>>>(p->freqs, cos_sin, p->max_pos);
    rc = cudaGetLastError();
    if (rc == 0) rc = dispatch(p, cos_sin, stream);
    const int freed = cudaFree(cos_sin); /* waits for the kernels on the device */
    return rc != 0 ? rc : freed;
}
