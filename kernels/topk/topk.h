/* topk_transform: per-row top-K selection with page-table transform.
 * Contract: docs/contracts/topk_transform.md. Shared by topk.cu and by cgo (bridge/), so it
 * holds only C99 types and macros. */
#ifndef KD_TOPK_H
#define KD_TOPK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Entry points (extern "C", one per K, each takes kd_topk_params by value):
 *   kd_topk_transform_512, kd_topk_transform_1024, kd_topk_transform_2048.
 *
 * Launch geometry: grid = (batch, 1, 1), one block per row; block =
 * (KD_TOPK_THREADS, 1, 1); dynamic shared memory = KD_TOPK_DYNAMIC_SMEM (0).
 * Static shared memory is 24720 bytes (histogram of KD_TOPK_BINS u32, the
 * candidate buffer of KD_TOPK_CAND_CAP u32 keys, scan scratch; the driver
 * adds its 1 KiB per-block reservation on sm_90 and later); registers are
 * at most 50 per thread (ptxas-report.txt next to the fatbin has the
 * figures per target), so one 1024-thread block always fits an SM.
 *
 * Algorithm (topk.cu): radix select on key32(x) = bits(x) ^ (sign ?
 * 0xFFFFFFFF : 0x80000000), compared as unsigned (docs/contracts/topk_transform.md), in three
 * digits of 11, 11 and 10 bits, most significant first. Each digit pass
 * builds a shared-memory histogram of the keys that match the prefix chosen
 * so far and picks the bin holding the k-th largest; after the last digit
 * the threshold key T and the number of ties to take are exact. Fast path:
 * when the first digit's threshold bin holds at most KD_TOPK_CAND_CAP keys,
 * they are copied to shared memory and digits two and three run there.
 * Otherwise (low-contrast rows: e.g. 16384 distinct values in one fp16
 * bin) digits two and three re-read the row from global memory. Nothing is
 * dropped on either path. A final pass over the row writes every position
 * with key > T, then the lowest-positioned ties (key == T) until K slots are
 * filled, each group in ascending position order (block-wide prefix scans,
 * no atomics), so the output bytes are identical across runs.
 *
 * Output: L <= K: raw = 0, 1, ..., L-1, then -1; page_indices likewise.
 * L > K: the K positions above, in the order [above T ascending, ties
 * ascending]; page_indices[j] = page_table[b][raw >> log2_page] * P +
 * (raw & (P-1)), computed in 64-bit and stored as int32.
 *
 * Special values: only the key32 order is used (no float compares), so -0 <
 * +0, -NaN < -inf < finite < +inf < +NaN, and equal bit patterns tie.
 * PyTorch's torch.topk fallback differs (every NaN is largest).
 *
 * Preconditions (the launcher and the harness check them before launch):
 * p.k equals the entry point's K, 0 <= seq_lens[b] <= stride, max_pages >=
 * ceil(L_b / P), every slot fits in int32, page_indices and raw_indices do
 * not alias the inputs. A block that sees p.k != K, a negative seq_len,
 * seq_len > stride, log2_page outside [0, 30] or an unknown score_dtype
 * executes a trap before
 * writing anything (the launch fails with an error; other blocks may have
 * written their rows). Positions past L_b are never read.
 *
 * Sync rules: every __syncthreads is reached by the whole block (loop trip
 * counts depend only on L_b and on shared values); warp collectives use
 * the full mask, and every thread of a block runs every loop iteration.
 *
 * Fault builds: see kernels/faults.txt; -DKD_FAULT_<NAME> compiles one. */
#define KD_TOPK_THREADS      1024
#define KD_TOPK_DYNAMIC_SMEM 0
#define KD_TOPK_BINS         2048 /* histogram bins of the widest digit (11 bits) */
#define KD_TOPK_CAND_CAP     4096 /* shared-memory candidate buffer, keys */

/* kd_topk_params.score_dtype: the scores dtype. 16-bit scores are widened
 * exactly to f32 on load (bf16: bits << 16; f16: the exact value, NaN
 * payloads kept) and ranked by key32 of the widening, which is the Key16
 * order of docs/contracts/topk_transform.md, "16-bit scores". */
#define KD_TOPK_SCORES_F32  0
#define KD_TOPK_SCORES_BF16 1
#define KD_TOPK_SCORES_F16  2

/* Parameters, passed by value to kd_topk_transform_<K>.
 * Device pointers; raw_indices may be NULL (not returned). */
typedef struct {
    const void    *scores;       /* f32, bf16 or f16 (score_dtype) [batch, stride]; only [0, seq_lens[b]) of row b is read */
    const int32_t *seq_lens;     /* i32 [batch], 0 <= L_b <= stride */
    const int32_t *page_table;   /* i32 [batch, max_pages], max_pages >= ceil(L_b / P) */
    int32_t       *page_indices; /* out i32 [batch, K] */
    int32_t       *raw_indices;  /* out i32 [batch, K], or NULL */
    int64_t        stride;       /* row stride of scores, elements */
    int64_t        max_pages;    /* row stride of page_table, elements */
    int32_t        batch;        /* B */
    int32_t        log2_page;    /* log2 P, P = page size (power of two) */
    int32_t        k;            /* must equal the K of the entry point */
    int32_t        score_dtype;  /* KD_TOPK_SCORES_F32 (0), _BF16 (1) or _F16 (2) */
} kd_topk_params;

/* The entry points of this kernel, one X(contract, entry, params struct,
 * block threads) each: the one list of them. kernels/kernels.cu composes
 * every kernel's list into KD_KERNEL_ENTRIES (docs/adding-a-kernel.md). */
#define KD_TOPK_ENTRIES(X)                                                  \
    X(topk_transform, kd_topk_transform_512, kd_topk_params, KD_TOPK_THREADS)  \
    X(topk_transform, kd_topk_transform_1024, kd_topk_params, KD_TOPK_THREADS) \
    X(topk_transform, kd_topk_transform_2048, kd_topk_params, KD_TOPK_THREADS)

#ifdef __cplusplus
}
#endif

#endif /* KD_TOPK_H */
