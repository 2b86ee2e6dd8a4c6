/* topk_transform: per-row top-K selection with page-table transform.
 * Contract: DESIGN.md §3. Shared by topk.cu and by cgo (bridge/), so it
 * holds only C99 types and macros. */
#ifndef KD_TOPK_H
#define KD_TOPK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Parameters, passed by value to kd_topk_transform_<K>.
 * Device pointers; raw_indices may be NULL (not returned). */
typedef struct {
    const float   *scores;       /* f32 [batch, stride]; only [0, seq_lens[b]) of row b is read */
    const int32_t *seq_lens;     /* i32 [batch], 0 <= L_b <= stride */
    const int32_t *page_table;   /* i32 [batch, max_pages], max_pages >= ceil(L_b / P) */
    int32_t       *page_indices; /* out i32 [batch, K] */
    int32_t       *raw_indices;  /* out i32 [batch, K], or NULL */
    int64_t        stride;       /* row stride of scores, elements */
    int64_t        max_pages;    /* row stride of page_table, elements */
    int32_t        batch;        /* B */
    int32_t        log2_page;    /* log2 P, P = page size (power of two) */
    int32_t        k;            /* must equal the K of the entry point */
} kd_topk_params;

#ifdef __cplusplus
}
#endif

#endif /* KD_TOPK_H */
