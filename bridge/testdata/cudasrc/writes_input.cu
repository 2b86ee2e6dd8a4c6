// writes_input.cu: a deliberately broken adapter (bridge/cudasrc_test.go):
// the example's kernel (examples/cuda_adapter), correct, then a second
// kernel that flips the sign of scores[0][0] on the device. Its outputs
// are right; the harness must still fail it as input-modified, naming
// scores[0][0], from the device copy it reads back after the launch.
#include <kd_adapter.h>

#include "../../../examples/cuda_adapter/topk_rows.cuh"

// scribble flips the sign bit of the first score (the top byte of a
// little-endian f32, bf16 or f16 element of width bytes).
__global__ void scribble(const void *scores, int width)
{
    unsigned char *s = (unsigned char *)scores;
    s[width - 1] ^= 0x80;
}

int kd_adapter_topk_transform(const kd_topk_params *p, cudaStream_t stream)
{
    const int width = p->score_dtype == KD_TOPK_SCORES_F32 ? 4 : 2;
    mine::topk_rows<256><<<p->batch, 256, 0, stream>>>(p->scores, p->stride, width, p->seq_lens, p->page_table,
                                                        p->max_pages, 1 << p->log2_page, p->k, p->page_indices,
                                                        p->raw_indices);
    scribble<<<1, 1, 0, stream>>>(p->scores, width);
    return cudaGetLastError();
}
