// page_row0.cu: a deliberately broken adapter (bridge/cudasrc_test.go): the
// example's kernel (examples/cuda_adapter) given a page-table row stride of
// 0, so every row maps its positions through row 0 of the page table. The
// harness must fail it and name the catalog mutant it behaves like,
// topk-page-row0.
#include <kd_adapter.h>

#include "../../../examples/cuda_adapter/topk_rows.cuh"

int kd_adapter_topk_transform(const kd_topk_params *p, cudaStream_t stream)
{
    const int width = p->score_dtype == KD_TOPK_SCORES_F32 ? 4 : 2;
    mine::topk_rows<256><<<p->batch, 256, 0, stream>>>(p->scores, p->stride, width, p->seq_lens, p->page_table,
                                                        /* max_pages */ 0, 1 << p->log2_page, p->k, p->page_indices,
                                                        p->raw_indices);
    return cudaGetLastError();
}
