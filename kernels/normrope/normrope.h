/* norm_rope_store: fused norm + RoPE + Hadamard + paged FP8/BF16/FP4 store of
 * indexer keys. Contract: docs/contracts/norm_rope_store.md. Shared by normrope.cu and by cgo
 * (bridge/), so it holds only C99 types and macros. */
#ifndef KD_NORMROPE_H
#define KD_NORMROPE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { KD_NORM_RMS = 0, KD_NORM_LAYER = 1 };
enum { KD_ROPE_NEOX = 0, KD_ROPE_INTERLEAVED = 1 };
enum { KD_STORE_FP8 = 0, KD_STORE_BF16 = 1, KD_STORE_FP4 = 2 };
enum { KD_SCALE_PLAIN = 0, KD_SCALE_UE8M0 = 1 };
enum { KD_STAGES_ALL = 0, KD_STAGES_STORE = 1 };

/* Entry point: extern "C" kd_norm_rope_store(kd_normrope_params p).
 *
 * Launch geometry: one warp per token, KD_NORMROPE_TOKENS_PER_BLOCK tokens
 * per block; block = (KD_NORMROPE_THREADS, 1, 1); grid = (ceil(num_tokens /
 * KD_NORMROPE_TOKENS_PER_BLOCK), 1, 1); dynamic shared memory =
 * KD_NORMROPE_DYNAMIC_SMEM (0). No shared memory and no __syncthreads: each
 * warp works alone, with full-mask shuffles; a warp whose token is past
 * num_tokens or has out_loc < 0 returns as a whole. Lane l holds dims
 * [4l, 4l+4) of its token.
 *
 * Math, per token, all in f32 with every rounding point explicit (__fmul_rn,
 * __fadd_rn, __fsub_rn, __fdiv_rn, __fsqrt_rn: IEEE round-to-nearest-even,
 * never contracted into FMA), so the kernel is bit-reproducible and a host
 * emulation of this order gives the same bits:
 *  1. x: bf16 -> f32 (exact).
 *  2. norm (sums: each lane adds its 4 terms in dim order, then a 5-step
 *     butterfly over lanes, xor 16, 8, 4, 2, 1; every lane gets the same
 *     total):
 *     rms:   ms = sum(x^2) * (1/128); r = 1 / sqrt(ms + eps);
 *            y = (x * r) * w
 *     layer: mean = sum(x) * (1/128); d = x - mean;
 *            var = sum(d^2) * (1/128); r = 1 / sqrt(var + eps);
 *            y = ((d * r) * w) + b
 *     r is 1/sqrt with both operations correctly rounded (not rsqrtf, whose
 *     error is up to 2 ulp): |r - exact| <= about 1.5 ulp.
 *  3. RoPE on dims [rope_offset, rope_offset + 64), (c, s) = (freqs[pos][2j],
 *     freqs[pos][2j+1]); interleaved pairs (2j, 2j+1), neox pairs (j, j+32):
 *     a' = (a*c) - (b*s), b' = (a*s) + (b*c).
 *  4. Hadamard (when on): the 7-stage in-place butterfly in natural
 *     (Sylvester) order, stage bit 0 first: (lo, hi) -> (lo + hi, lo - hi)
 *     for each index pair differing in that bit; then z = h * c128 with
 *     c128 = KD_HADAMARD_SCALE_F32 (128^-1/2 rounded to f32, 0x3DB504F3).
 *  5. FP8 store: amax = max |z| (fmaxf, so NaN is ignored); scale =
 *     max(amax, 1e-4f) / 448; ue8m0: scale's bits rounded up to the next
 *     power of two (unchanged if already one); q = z / scale; code =
 *     e4m3fn(q): round-to-nearest-even on the bits, |q| > 448 (incl. inf)
 *     saturates to 0x7E | sign, NaN -> 0x7F, subnormals 2^-9 * m exact.
 *     128 codes at page*132P + off*128, scale (f32 LE) at page*132P +
 *     128P + off*4, page = out_loc >> log2_page, off = out_loc & (P-1).
 *     BF16 store: bf16 round-to-nearest-even of z (NaN -> quiet NaN with
 *     its sign) at page*256P + off*256.
 *     FP4 store (scale_fmt must be KD_SCALE_UE8M0), per 32-dim block (8
 *     lanes; block maxima by fmaxf over xor 4, 2, 1 shuffles), two stages:
 *     stage 1: e1 = ue8m0 byte of max(amax, 6*2^-126) * (1/6.0f) (exponent
 *     field, +1 if the mantissa is non-zero, clamped to [1, 254]);
 *     g = e2m1(z * 2^(127-e1)) * 2^(e1-127) (both products exact);
 *     stage 2: e2 = ue8m0 byte of max(amax(g) / 6, 1e-4f) (division);
 *     code = e2m1(g * 2^(127-e2)), a magnitude-0 code stored as 0x0.
 *     e2m1: nearest of +-{0, .5, 1, 1.5, 2, 3, 4, 6}, ties to the even
 *     code, |q| > 6 and inf saturate, NaN -> 0x7. Lane l packs dims 4l..4l+3
 *     as bytes 2l (dim 4l low nibble, 4l+1 high) and 2l+1 at page*68P +
 *     off*64; the four e2 bytes (block b in byte b) at page*68P + 64P +
 *     off*4, written by lane 0.
 *  Only the bytes of the token's own slot are written.
 *  stages KD_STAGES_STORE (the contract's stages = "store"): steps 2-4
 *  are skipped, z = x (the keys arrive normed and rotated), and step 5
 *  stores them; norm, rope_* and hadamard are still checked, not used.
 *
 * Preconditions (checked by the launcher and the harness before launch):
 * enums in range, rope_offset 0 or 64, bias non-NULL for LayerNorm, 0 <=
 * log2_page <= 30, 0 <= positions[i] < max_pos, out_loc values distinct and
 * < num_pages * P. The kernel executes a trap (the launch fails; nothing
 * is silently clamped) when it sees: a norm, rope_style or store outside
 * its KD_* values; hadamard not 0 or 1; scale_fmt outside KD_SCALE_*, with
 * either store (the BF16 store does not read it but checks it); stages
 * outside KD_STAGES_*; rope_offset
 * not 0 or 64; KD_NORM_LAYER with a NULL bias; log2_page outside [0, 30];
 * a position outside [0, max_pos); an out_loc >= num_pages * P; the FP4
 * store with a scale_fmt other than KD_SCALE_UE8M0. x, x_stride and cache need no particular
 * alignment: aligned pointers take vector loads and stores, others bytes.
 *
 * Fault builds: see kernels/faults.txt; -DKD_FAULT_<NAME> compiles one. */
#define KD_NORMROPE_TOKENS_PER_BLOCK 8
#define KD_NORMROPE_THREADS          (32 * KD_NORMROPE_TOKENS_PER_BLOCK)
#define KD_NORMROPE_DYNAMIC_SMEM     0
#define KD_NORMROPE_DIM              128 /* head dim of the indexer keys */
#define KD_NORMROPE_ROPE_DIM         64  /* rotated dims, from rope_offset */
#define KD_FP8_PAGE_BYTES(P)         (132 * (P)) /* 128 codes + 4 scale bytes per slot */
#define KD_BF16_PAGE_BYTES(P)        (256 * (P))
#define KD_FP4_PAGE_BYTES(P)         (68 * (P)) /* 64 packed e2m1 bytes + 4 ue8m0 bytes per slot */
#define KD_HADAMARD_SCALE_F32        0.0883883461356163f /* bits 0x3DB504F3 */

/* Parameters, passed by value to kd_norm_rope_store. Device pointers. */
typedef struct {
    const uint16_t *x;          /* bf16 bits [num_tokens, x_stride], x_stride >= 128 */
    const float    *weight;     /* f32 [128], norm gamma */
    const float    *bias;       /* f32 [128], norm beta (LayerNorm only; may be NULL for RMSNorm) */
    const float    *freqs;      /* f32 [max_pos, 64]: (cos_j, sin_j) interleaved, j in [0, 32) */
    const int64_t  *positions;  /* i64 [num_tokens], 0 <= pos < max_pos */
    const int64_t  *out_loc;    /* i64 [num_tokens], -1 = skip, else distinct slots < num_pages * P */
    uint8_t        *cache;      /* u8 [num_pages, page_bytes]; FP8: 132 * P, BF16: 256 * P, FP4: 68 * P */
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
    int32_t         scale_fmt;  /* KD_SCALE_*: the FP8 store's scale; checked with either store */
    int32_t         stages;     /* KD_STAGES_ALL (0) or KD_STAGES_STORE (1): x is the key, store only */
} kd_normrope_params;

/* The entry points of this kernel, X(contract, entry, params struct, block
 * threads) each (docs/adding-a-kernel.md). */
#define KD_NORMROPE_ENTRIES(X) \
    X(norm_rope_store, kd_norm_rope_store, kd_normrope_params, KD_NORMROPE_THREADS)

#ifdef __cplusplus
}
#endif

#endif /* KD_NORMROPE_H */
