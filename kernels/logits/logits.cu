/* Indexer logits over the paged FP8/BF16/FP4 key cache (indexer_logits).
 *
 * Contract: docs/contracts/indexer_logits.md. Launch geometry, shared memory, the evaluation
 * order and preconditions: logits.h. Sources: the DeepSeek-V3.2 lightning
 * indexer (logits = Σ_h w_h · ReLU(q_h · k), scaled by the key's FP8
 * scale), the block-planar paged layout of docs/contracts/norm_rope_store.md (vLLM #50576 is
 * what happens when a reader assumes another), the e4m3fn format of
 * the OCP 8-bit Floating Point Specification (OFP8) rev. 1.0, and the e2m1
 * and E8M0 formats of the OCP Microscaling Formats (MX) Specification v1.0
 * (the FP4 keys of docs/contracts/norm_rope_store.md "FP4 keys"; the
 * padded pages, next_n rows and bf16 logits of DeepGEMM's
 * fp8_fp4_paged_mqa_logits).
 *
 * Fault builds (kernels/faults.txt) are the KD_FAULT_LOGITS_* blocks
 * below; a normal build defines none. */

#include <stdint.h>

#include "logits.h"

namespace kd_logits {

constexpr int kThreads = KD_LOGITS_THREADS;
constexpr int kTile = KD_LOGITS_TILE;
constexpr int kGroups = KD_LOGITS_GROUPS;
constexpr int kDim = KD_LOGITS_DIM;
constexpr int kMaxHeads = KD_LOGITS_MAX_HEADS;
constexpr int kPairs = kDim / 2;       /* bf16 pairs per key or query head */
constexpr int kKeyWords = kPairs + 1;  /* a key's row in shared memory, padded: 65 words */

static_assert(kGroups * kTile == kThreads, "every thread scores one key for one head group");
static_assert(kThreads % 32 == 0 && kTile % 32 == 0, "whole warps");

struct Shared {
    uint32_t keys[kTile * kKeyWords];   /* bf16 pairs (d, d+1), element d in the low half */
    uint32_t q[kMaxHeads * kPairs];     /* the row's queries, bf16 pairs */
    float w[kMaxHeads];                 /* the row's weights */
    float scale[kTile];                 /* the tile's key scales (1 for BF16) */
    float partial[kGroups * kTile];     /* per head group and key */
};

/* e4m3_to_bf16 returns the bf16 bits of an e4m3fn code's value (exact:
 * 4 significant bits, magnitudes 2^-9 to 448): normal 2^(e-7)(1 + m/8),
 * subnormal m * 2^-9, NaN (0x7F/0xFF) a quiet bf16 NaN of the code's sign. */
__device__ __forceinline__ uint32_t e4m3_to_bf16(uint32_t c)
{
    const uint32_t sign = (c & 0x80u) << 8;
    const uint32_t e = (c >> 3) & 15u, m = c & 7u;
    if (e == 15u && m == 7u) return sign | 0x7FC0u;
    if (e != 0u) return sign | ((e + 120u) << 7) | (m << 4);
    if (m == 0u) return sign;
    const uint32_t p = m >= 4u ? 2u : (m >= 2u ? 1u : 0u); /* leading bit of m */
    return sign | ((p + 118u) << 7) | ((m - (1u << p)) << (7u - p));
}

/* load4 reads 4 bytes at src, little-endian, as one word. */
__device__ __forceinline__ uint32_t load4(const uint8_t *src)
{
    if ((reinterpret_cast<uintptr_t>(src) & 3u) == 0) return *reinterpret_cast<const uint32_t *>(src);
    return static_cast<uint32_t>(src[0]) | static_cast<uint32_t>(src[1]) << 8 | static_cast<uint32_t>(src[2]) << 16 |
           static_cast<uint32_t>(src[3]) << 24;
}

/* fp8_pair decodes the two codes in the low (lo = 1) or high 16 bits of a
 * word of four codes into one bf16 pair. */
__device__ __forceinline__ uint32_t fp8_pair(uint32_t w4, int hi)
{
    const uint32_t two = hi ? w4 >> 16 : w4 & 0xFFFFu;
    return e4m3_to_bf16(two & 0xFFu) | e4m3_to_bf16(two >> 8) << 16;
}

/* fp4_to_bf16 returns the bf16 bits of e2m1 code c (low nibble) times
 * 2^(e - 127), e a ue8m0 byte: exact (2 significant bits; the smallest
 * value 0.5 * 2^-127 is a bf16 subnormal), +-inf past the range, a quiet
 * NaN for e = 0xFF. */
__device__ __forceinline__ uint32_t fp4_to_bf16(uint32_t c, uint32_t e)
{
    /* Magnitude index i = c & 7: 0, 0.5, then 2^((i >> 1) - 1) * (1 + (i & 1) / 2). */
    const uint32_t i = c & 7u;
    const uint32_t mag = i >= 2u ? (((i >> 1) + 126u) << 23) | ((i & 1u) << 22) : (i ? 0x3F000000u : 0u);
    const float v = __uint_as_float(mag | (c & 8u) << 28);
    const float sc = e == 0xFFu ? __uint_as_float(0x7FC00000u) : (e == 0u ? __uint_as_float(0x00400000u) : __uint_as_float(e << 23));
    return __float_as_uint(__fmul_rn(v, sc)) >> 16;
}

/* fp4_pairs decodes the 8 codes of word w8 (dims 8c .. 8c + 7 of a
 * record, dim 2i in the low nibble of byte i) under the ue8m0 byte e into
 * four bf16 pairs. */
__device__ __forceinline__ void fp4_pairs(uint32_t w8, uint32_t e, uint32_t *dst)
{
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const uint32_t byte = (w8 >> (8 * k)) & 0xFFu;
#ifdef KD_FAULT_LOGITS_FP4_NIBBLE_SWAP
        const uint32_t even = byte >> 4, odd = byte & 15u; /* Fault: the high nibble read as the even dim. */
#else
        const uint32_t even = byte & 15u, odd = byte >> 4;
#endif
        dst[k] = fp4_to_bf16(even, e) | fp4_to_bf16(odd, e) << 16;
    }
}

/* bf16_rn returns the bf16 bits of f rounded to nearest even (NaN stays a
 * quiet NaN of its sign). */
__device__ __forceinline__ uint32_t bf16_rn(float f)
{
    const uint32_t u = __float_as_uint(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (u >> 16) | 0x40u;
#ifdef KD_FAULT_LOGITS_BF16_TRUNCATE
    return u >> 16; /* Fault: truncated, not rounded. */
#else
    return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
#endif
}

__device__ __forceinline__ float lo_f32(uint32_t pair) { return __uint_as_float(pair << 16); }
__device__ __forceinline__ float hi_f32(uint32_t pair) { return __uint_as_float(pair & 0xFFFF0000u); }

/* tight_page_bytes returns the bytes of an unpadded page: 132P (FP8),
 * 256P (BF16), 68P (FP4). */
__device__ __forceinline__ int64_t tight_page_bytes(const kd_logits_params &p)
{
    const int64_t per = p.store == KD_LOGITS_STORE_FP8 ? 132 : (p.store == KD_LOGITS_STORE_BF16 ? 256 : 68);
    return per << p.log2_page;
}

/* config_ok reports whether the launch-wide configuration is in range. */
__device__ __forceinline__ bool config_ok(const kd_logits_params &p)
{
    if (!((p.store == KD_LOGITS_STORE_FP8 || p.store == KD_LOGITS_STORE_BF16 || p.store == KD_LOGITS_STORE_FP4) &&
          p.heads >= 1 && p.heads <= kMaxHeads && p.log2_page >= 0 && p.log2_page <= 30 &&
          (p.clean == 0 || p.clean == 1) && (p.logits_bf16 == 0 || p.logits_bf16 == 1) && p.next_n >= 1 &&
          p.next_n <= KD_LOGITS_MAX_NEXT_N && p.batch >= 1 && p.stride >= 1 &&
          p.tiles == (p.stride + kTile - 1) / kTile &&
          static_cast<int64_t>(gridDim.x) == static_cast<int64_t>(p.batch) * p.next_n * p.tiles))
        return false;
    return p.page_stride >= tight_page_bytes(p) && p.page_stride % 4 == 0;
}

/* page_base returns the byte offset of the page holding position s of row
 * b (64-bit), trapping on a page-table entry past max_pages or a page id
 * outside [0, num_pages). */
__device__ __forceinline__ int64_t page_base(const kd_logits_params &p, int64_t b, int64_t s, int64_t page_bytes)
{
#ifdef KD_FAULT_LOGITS_TIGHT_STRIDE
    page_bytes = tight_page_bytes(p); /* Fault: pages read as if packed tight, not page_stride apart. */
#endif
    const int64_t j = s >> p.log2_page;
    if (j >= p.max_pages) __trap();
    const int64_t id = p.page_table[b * p.max_pages + j];
    if (id < 0 || id >= p.num_pages) __trap();
#ifdef KD_FAULT_LOGITS_OFFSET_INT32
    /* Fault: the byte offset in 32-bit signed arithmetic (wraps past 2 GiB). */
    return static_cast<int32_t>(static_cast<uint32_t>(id) * static_cast<uint32_t>(page_bytes));
#else
    return id * page_bytes;
#endif
}

} /* namespace kd_logits */

extern "C" __global__ void __launch_bounds__(KD_LOGITS_THREADS) kd_indexer_logits(kd_logits_params p)
{
    using namespace kd_logits;
    __shared__ Shared sh;
    if (!config_ok(p)) __trap();
    const int tid = threadIdx.x;
    const int64_t row = blockIdx.x / p.tiles; /* query row, of batch * next_n */
    const int64_t b = row / p.next_n;         /* its request: page-table row */
    const int64_t t0 = static_cast<int64_t>(blockIdx.x % p.tiles) * kTile;
#ifdef KD_FAULT_LOGITS_MTP_SHARED_LEN
    const int64_t L = p.seq_lens[b * p.next_n + p.next_n - 1]; /* Fault: the request's last row's length for every row. */
#else
    const int64_t L = p.seq_lens[row];
#endif
    if (L < 0 || L > p.stride) __trap();
    const int64_t P = int64_t{1} << p.log2_page;
#ifdef KD_FAULT_LOGITS_GRID_CAP
    /* Fault: a grid sized for KD_LOGITS_GRID_CAP_PAGES pages; no block
     * reaches the positions past them. */
    if ((t0 >> p.log2_page) >= KD_LOGITS_GRID_CAP_PAGES) return;
#endif
    float *out32 = static_cast<float *>(p.logits) + row * p.stride;
    uint16_t *out16 = static_cast<uint16_t *>(p.logits) + row * p.stride;
    const bool bf16_out = p.logits_bf16 == 1;
    const int64_t tile_end = t0 + kTile < p.stride ? t0 + kTile : p.stride;
#ifdef KD_FAULT_LOGITS_PAST_LENGTH
    /* Fault: with clean, the row's last page is scored whole. */
    int64_t scored = L;
    if (p.clean) {
        scored = ((L + P - 1) >> p.log2_page) << p.log2_page;
        if (scored > p.stride) scored = p.stride;
    }
#else
    const int64_t scored = L;
#endif
    if (t0 >= scored) { /* uniform over the block */
        if (p.clean && tid < tile_end - t0) {
            if (bf16_out) out16[t0 + tid] = 0xFF80u;
            else out32[t0 + tid] = __uint_as_float(0xFF800000u);
        }
        return;
    }
    const int H = p.heads;
    const bool fp8 = p.store == KD_LOGITS_STORE_FP8, fp4 = p.store == KD_LOGITS_STORE_FP4;
    const int64_t page_bytes = p.page_stride;

    /* Stage the row's queries and weights. */
    const uint8_t *qrow = p.q + row * H * (fp8 ? kDim : (fp4 ? 68 : 2 * kDim));
    for (int i = tid; i < H * kPairs; i += kThreads) {
        uint32_t pair;
        if (fp8) {
            const uint8_t *c = qrow + 2 * i;
            pair = e4m3_to_bf16(c[0]) | e4m3_to_bf16(c[1]) << 16;
        } else if (fp4) {
            const uint8_t *rec = qrow + (i / kPairs) * 68;
            const int j = i % kPairs; /* dims 2j, 2j + 1: byte j */
            const uint32_t e = rec[64 + j / 16];
            pair = fp4_to_bf16(rec[j] & 15u, e) | fp4_to_bf16(rec[j] >> 4, e) << 16;
        } else {
            pair = load4(qrow + 4 * i);
        }
        sh.q[i] = pair;
    }
    if (tid < H) {
#ifdef KD_FAULT_LOGITS_WEIGHTS_IGNORED
        sh.w[tid] = 1.0f; /* Fault: every head weighs 1. */
#else
        sh.w[tid] = p.weights[row * H + tid];
#endif
    }

    /* Stage the tile's keys (positions t0 + j < scored) and scales. */
#ifdef KD_FAULT_LOGITS_PAGE_ROW0
    const int64_t trow = 0; /* Fault: page-table row 0 for every row. */
    (void)b;
#else
    const int64_t trow = b;
#endif
    const int words = fp8 ? kDim / 4 : (fp4 ? kDim / 8 : kPairs); /* 4-byte words per key */
    for (int i = tid; i < kTile * words; i += kThreads) {
        const int j = i / words, c = i % words;
        const int64_t s = t0 + j;
        uint32_t *dst = sh.keys + j * kKeyWords;
        if (s >= scored) {
            if (fp8) dst[2 * c] = dst[2 * c + 1] = 0;
            else if (fp4) dst[4 * c] = dst[4 * c + 1] = dst[4 * c + 2] = dst[4 * c + 3] = 0;
            else dst[c] = 0;
            continue;
        }
        const int64_t off = s & (P - 1);
        const uint8_t *page = p.cache + page_base(p, trow, s, page_bytes);
        if (fp4) {
            /* Word c holds dims [8c, 8c + 8), all in block c / 4. */
#ifdef KD_FAULT_LOGITS_FP4_ONE_SCALE
            const uint32_t e = page[64 * P + off * 4]; /* Fault: the block-0 scale for every dim. */
#else
            const uint32_t e = page[64 * P + off * 4 + c / 4];
#endif
            fp4_pairs(load4(page + off * 64 + 4 * c), e, dst + 4 * c);
        } else if (fp8) {
#ifdef KD_FAULT_LOGITS_SCALE_INTERLEAVED
            const uint32_t w4 = load4(page + off * 132 + 4 * c); /* Fault: [codes | scale] records. */
#else
            const uint32_t w4 = load4(page + off * kDim + 4 * c);
#endif
            dst[2 * c] = fp8_pair(w4, 0);
            dst[2 * c + 1] = fp8_pair(w4, 1);
        } else {
            dst[c] = load4(page + off * 2 * kDim + 4 * c);
        }
    }
    if (tid < kTile) {
        const int64_t s = t0 + tid;
        float sc = 1.0f;
        if (fp8 && s < scored) {
            const int64_t off = s & (P - 1);
            const uint8_t *page = p.cache + page_base(p, trow, s, page_bytes);
#if defined(KD_FAULT_LOGITS_SCALE_INTERLEAVED)
            sc = __uint_as_float(load4(page + off * 132 + kDim)); /* Fault: after the slot's codes. */
#elif defined(KD_FAULT_LOGITS_ONE_SCALE_PER_PAGE)
            sc = __uint_as_float(load4(page + kDim * P)); /* Fault: the page's first scale. */
            (void)off;
#else
            sc = __uint_as_float(load4(page + kDim * P + off * 4));
#endif
        }
        sh.scale[tid] = sc;
    }
    __syncthreads();

    /* Score: key j, heads g, g + 4, ... */
    const int j = tid % kTile, g = tid / kTile;
    const uint32_t *kr = sh.keys + j * kKeyWords;
    float acc = 0.0f;
    for (int h = g; h < H; h += kGroups) {
        const uint32_t *qr = sh.q + h * kPairs;
        float d = 0.0f;
#pragma unroll 8
        for (int c = 0; c < kPairs; ++c) {
            const uint32_t kw = kr[c], qw = qr[c];
            d = __fmaf_rn(lo_f32(qw), lo_f32(kw), d);
            d = __fmaf_rn(hi_f32(qw), hi_f32(kw), d);
        }
#ifdef KD_FAULT_LOGITS_BF16_DOT
        /* Fault: the dot product rounded to bf16 (nearest even) before the ReLU. */
        {
            const uint32_t u = __float_as_uint(d);
            if ((u & 0x7FFFFFFFu) <= 0x7F800000u) d = __uint_as_float(((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16) << 16);
        }
#endif
#ifdef KD_FAULT_LOGITS_NO_RELU
        const float r = d; /* Fault: no ReLU. */
#else
        const float r = fmaxf(d, 0.0f);
#endif
        acc = __fmaf_rn(sh.w[h], r, acc);
    }
    sh.partial[g * kTile + j] = acc;
    __syncthreads();

    if (tid < tile_end - t0) {
        const int64_t s = t0 + tid;
        if (s < scored) {
            float S = sh.partial[tid];
#pragma unroll
            for (int k = 1; k < kGroups; ++k) S = __fadd_rn(S, sh.partial[k * kTile + tid]);
            const float logit = __fmul_rn(S, sh.scale[tid]);
            if (bf16_out) out16[s] = static_cast<uint16_t>(bf16_rn(logit));
            else out32[s] = logit;
        } else if (p.clean) {
            if (bf16_out) out16[s] = 0xFF80u;
            else out32[s] = __uint_as_float(0xFF800000u);
        }
    }
}
