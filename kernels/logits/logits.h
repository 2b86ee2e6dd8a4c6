/* indexer_logits: the lightning indexer's scores over the paged FP8/BF16/FP4
 * key cache (DeepSeek-V3.2/V4/V4.1; DeepGEMM fp8_paged_mqa_logits and
 * fp8_fp4_paged_mqa_logits, decode form: next_n query tokens per request).
 * Contract: docs/contracts/indexer_logits.md. Shared by logits.cu and by
 * cgo (bridge/), so it holds only C99 types and macros. */
#ifndef KD_LOGITS_H
#define KD_LOGITS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { KD_LOGITS_STORE_FP8 = 0, KD_LOGITS_STORE_BF16 = 1, KD_LOGITS_STORE_FP4 = 2 };

/* Entry point: extern "C" kd_indexer_logits(kd_logits_params p).
 *
 * Launch geometry: one block per (query row, tile of KD_LOGITS_TILE = 64
 * consecutive positions); block = (KD_LOGITS_THREADS, 1, 1) = 256 threads;
 * grid = (batch * next_n * ceil(stride / KD_LOGITS_TILE), 1, 1), block i
 * serving query row r = i / tiles (request r / next_n) and tile i % tiles,
 * so the grid follows the logits' stride,
 * never max_pages (a tile past every row's length still writes its -inf
 * when clean). Dynamic shared memory = KD_LOGITS_DYNAMIC_SMEM (0); static
 * shared memory is 34,560 bytes: the tile's keys as bf16 (64 x 130 u16,
 * rows padded to 65 words so the 32 lanes of a warp read 32 banks), the
 * row's queries as bf16 (64 heads x 128), its weights, the tile's scales,
 * and 4 x 64 partial sums. Two __syncthreads per block, reached by every
 * thread (the early exits are uniform over the block).
 *
 * Algorithm, per block (all f32 arithmetic with explicit rounding:
 * __fmaf_rn, __fadd_rn, __fmul_rn, so host emulation gives the same bits):
 *  1. L = seq_lens[r] (seq_lens is [batch, next_n] row-major); a tile
 *     wholly past L writes -inf (clean) or nothing, and returns.
 *  2. Stage: the row's q (H x 128) and every key of the tile's positions s
 *     < L, each slot = page_table[r / next_n][s >> log2_page] * P + (s &
 *     (P - 1)), page base = page id * page_stride bytes, offsets in 64-bit,
 *     into shared memory as bf16 bits. FP8: e4m3fn codes decode exactly
 *     into bf16 (4 significant bits, exponents 2^-9 to 2^8), NaN codes to
 *     a bf16 NaN; the f32 scale at base + 128P + off * 4 (block-planar,
 *     docs/contracts/norm_rope_store.md). BF16: the values as stored,
 *     scale 1. FP4: byte i of the slot's 64 at base + off * 64 holds dim 2i
 *     in its low nibble and 2i + 1 in its high one, the ue8m0 byte of dims
 *     [32k, 32k + 32) at base + 64P + off * 4 + k; each value e2m1(code) *
 *     2^(byte - 127) decodes exactly into bf16 (2 significant bits; beyond
 *     the range +-inf, byte 0xFF NaN), scale 1. FP4 queries likewise, from
 *     68-byte head records (64 code bytes, 4 ue8m0 bytes). Weights as f32.
 *  3. Thread t scores key j = t & 63 for the heads h = g, g + 4, ... (g = t
 *     >> 6): d = sum over d = 0..127, in order, of fma(q[h][d], k[j][d], d)
 *     (exact products: the error is the additions'), r = fmaxf(d, 0) (a
 *     NaN dot product gives 0), acc_g = fma(w[h], r, acc_g), h ascending.
 *  4. logit = (((acc_0 + acc_1) + acc_2) + acc_3) * scale, stored at
 *     logits[r * stride + s] as f32, or with logits_bf16 rounded to bf16
 *     (nearest even); positions s >= L of the tile: -inf when clean,
 *     untouched otherwise.
 * Positions never read keys past L, and only the pages of [0, ceil(L/P)).
 *
 * Preconditions (the launcher and the harness check them): store one of
 * KD_LOGITS_STORE_*, 1 <= heads <= KD_LOGITS_MAX_HEADS, 0 <= log2_page <=
 * 30, clean and logits_bf16 0 or 1, 1 <= next_n <= KD_LOGITS_MAX_NEXT_N,
 * page_stride a multiple of 4 at least the tight page bytes (132P, 256P,
 * 68P), 0 <= seq_lens[r] <= stride, max_pages >= ceil(L / P) for every
 * row of the request, page ids of the used entries in [0, num_pages),
 * logits not aliasing an input. The kernel executes a trap (the launch
 * fails; nothing is clamped) when it sees a bad store, heads, log2_page,
 * clean, logits_bf16, next_n or page_stride, a negative seq_len or one
 * above stride, a used page-table entry past max_pages, or a page id
 * outside [0, num_pages), and a grid or tiles other than the geometry
 * above. q and cache need no particular alignment (aligned
 * pointers take 4-byte loads, others bytes); weights and logits are f32
 * arrays, 4-byte aligned.
 *
 * Fault builds: see kernels/faults.txt; -DKD_FAULT_<NAME> compiles one. */
#define KD_LOGITS_THREADS      256
#define KD_LOGITS_TILE         64 /* positions per block */
#define KD_LOGITS_GROUPS       (KD_LOGITS_THREADS / KD_LOGITS_TILE) /* head groups per key */
#define KD_LOGITS_MAX_HEADS    64
#define KD_LOGITS_DIM          128
#define KD_LOGITS_DYNAMIC_SMEM 0
#define KD_LOGITS_GRID_CAP_PAGES 2048 /* KD_FAULT_LOGITS_GRID_CAP only */
#define KD_LOGITS_MAX_NEXT_N   16

/* Parameters, passed by value to kd_indexer_logits. Device pointers. */
typedef struct {
    const uint8_t *q;          /* [batch * next_n, heads, .]: FP8 e4m3fn codes x128; BF16 bf16 bits x128 (little-endian); FP4 68-byte records */
    const float   *weights;    /* f32 [batch * next_n, heads] */
    const uint8_t *cache;      /* u8 [num_pages, page_stride]; tight page bytes FP8 132 * P, BF16 256 * P, FP4 68 * P */
    const int32_t *seq_lens;   /* i32 [batch, next_n], 0 <= L <= stride */
    const int32_t *page_table; /* i32 [batch, max_pages] */
    void          *logits;     /* out [batch * next_n, stride]: f32, or bf16 bits with logits_bf16 */
    int64_t        stride;     /* row stride of logits, elements */
    int64_t        max_pages;  /* row stride of page_table, elements */
    int64_t        num_pages;  /* pages in cache */
    int32_t        batch;      /* B */
    int32_t        heads;      /* H */
    int32_t        log2_page;  /* log2 P */
    int32_t        store;      /* KD_LOGITS_STORE_* */
    int32_t        clean;      /* 1: positions s >= L_b get -inf; 0: untouched */
    int32_t        tiles;      /* ceil(stride / KD_LOGITS_TILE): grid.x = batch * next_n * tiles */
    int64_t        page_stride; /* bytes from one cache page to the next (>= the tight page bytes, a multiple of 4) */
    int32_t        next_n;      /* query rows per request, in [1, KD_LOGITS_MAX_NEXT_N] */
    int32_t        logits_bf16; /* 1: logits are bf16 (round to nearest even); 0: f32 */
} kd_logits_params;

/* The entry points of this kernel, X(contract, entry, params struct, block
 * threads) each (docs/adding-a-kernel.md). */
#define KD_LOGITS_ENTRIES(X) \
    X(indexer_logits, kd_indexer_logits, kd_logits_params, KD_LOGITS_THREADS)

#ifdef __cplusplus
}
#endif

#endif /* KD_LOGITS_H */
