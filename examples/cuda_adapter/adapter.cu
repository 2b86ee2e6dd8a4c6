// adapter.cu: the bring-your-own adapter of the example (docs/byo.md): the
// topk_transform contract's parameters (kernels/topk/topk.h) passed to the
// kernel of topk_rows.cuh, launched with its own <<<>>>.
//
//   build/difftest run --suite quick --impl cudasrc-emu:examples/cuda_adapter   # CPU emulator
//   build/difftest run --suite quick --impl cudasrc:examples/cuda_adapter       # GPU (nvcc)
#include <kd_adapter.h>

#include "topk_rows.cuh"

int kd_adapter_topk_transform(const kd_topk_params *p, cudaStream_t stream)
{
    const int width = p->score_dtype == KD_TOPK_SCORES_F32 ? 4 : 2;
    mine::topk_rows<256><<<p->batch, 256, 0, stream>>>(p->scores, p->stride, width, p->seq_lens, p->page_table,
                                                        p->max_pages, 1 << p->log2_page, p->k, p->page_indices,
                                                        p->raw_indices);
    return cudaGetLastError();
}
