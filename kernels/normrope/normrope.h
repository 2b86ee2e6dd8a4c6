/* norm_rope_store: fused norm + RoPE + Hadamard + paged FP8/BF16 store of
 * indexer keys. Contract: DESIGN.md §4. Shared by normrope.cu and by cgo
 * (bridge/), so it holds only C99 types and macros. */
#ifndef KD_NORMROPE_H
#define KD_NORMROPE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { KD_NORM_RMS = 0, KD_NORM_LAYER = 1 };
enum { KD_ROPE_NEOX = 0, KD_ROPE_INTERLEAVED = 1 };
enum { KD_STORE_FP8 = 0, KD_STORE_BF16 = 1 };
enum { KD_SCALE_PLAIN = 0, KD_SCALE_UE8M0 = 1 };

/* Parameters, passed by value to kd_norm_rope_store. Device pointers. */
typedef struct {
    const uint16_t *x;          /* bf16 bits [num_tokens, x_stride], x_stride >= 128 */
    const float    *weight;     /* f32 [128], norm gamma */
    const float    *bias;       /* f32 [128], norm beta (LayerNorm only; may be NULL for RMSNorm) */
    const float    *freqs;      /* f32 [max_pos, 64]: (cos_j, sin_j) interleaved, j in [0, 32) */
    const int64_t  *positions;  /* i64 [num_tokens], 0 <= pos < max_pos */
    const int64_t  *out_loc;    /* i64 [num_tokens], -1 = skip, else distinct slots < num_pages * P */
    uint8_t        *cache;      /* u8 [num_pages, page_bytes]; FP8: 132 * P, BF16: 256 * P */
    int64_t         x_stride;   /* row stride of x, elements */
    int64_t         num_tokens; /* N */
    int64_t         max_pos;    /* rows of freqs */
    int64_t         num_pages;  /* pages in cache */
    float           eps;        /* norm epsilon (1e-6) */
    int32_t         log2_page;  /* log2 P */
    int32_t         norm;       /* KD_NORM_* */
    int32_t         rope_offset;/* 0 or 64 */
    int32_t         rope_style; /* KD_ROPE_* */
    int32_t         hadamard;   /* 0 off, 1 on */
    int32_t         store;      /* KD_STORE_* */
    int32_t         scale_fmt;  /* KD_SCALE_* (FP8 store only) */
} kd_normrope_params;

#ifdef __cplusplus
}
#endif

#endif /* KD_NORMROPE_H */
