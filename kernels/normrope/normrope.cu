/* Fused norm + RoPE + Hadamard + paged FP8/BF16/FP4 store of indexer keys
 * (norm_rope_store).
 *
 * Contract: docs/contracts/norm_rope_store.md. Launch geometry, math order, rounding points and
 * preconditions: normrope.h. Sources: RMSNorm (Zhang & Sennrich 2019),
 * LayerNorm (Ba et al. 2016), rotary embedding (Su et al., RoFormer 2021;
 * "neox" halves and GPT-J "interleaved" pairs), the fast Walsh-Hadamard
 * transform in natural (Sylvester) order, and the e4m3fn format of the OCP
 * 8-bit Floating Point Specification (OFP8) rev. 1.0, and the e2m1 and E8M0
 * formats of the OCP Microscaling Formats (MX) Specification v1.0; the FP4
 * store's two stages follow DeepSeek-V4.1's index keys (docs/contracts/
 * norm_rope_store.md, "FP4 keys").
 *
 * Fault builds (kernels/faults.txt) are the KD_FAULT_* blocks below; a
 * normal build defines none. */

#include <stdint.h>

#include "normrope.h"
#include "../f16round.h"

namespace kd_normrope {

constexpr int kTokensPerBlock = KD_NORMROPE_TOKENS_PER_BLOCK;
constexpr int kThreads = KD_NORMROPE_THREADS;
constexpr int kDim = KD_NORMROPE_DIM;
constexpr int kPerLane = kDim / 32; /* 4 dims per lane */
constexpr unsigned kFullMask = 0xFFFFFFFFu;

static_assert(kPerLane == 4, "lane layout assumes 128 dims over 32 lanes");

__device__ __forceinline__ float bf16_to_f32(uint16_t h)
{
    return __uint_as_float(static_cast<uint32_t>(h) << 16);
}

/* f32_to_bf16 rounds to nearest, ties to even; NaN stays NaN (quiet, same
 * sign); overflow past the largest bf16 gives inf. */
__device__ __forceinline__ uint16_t f32_to_bf16(float f)
{
    const uint32_t u = __float_as_uint(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
#ifdef KD_FAULT_BF16_TRUNCATE
    return static_cast<uint16_t>(u >> 16); /* Fault: truncation. */
#else
    return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
#endif
}

/* f32_to_e4m3fn encodes q as OCP e4m3fn (bias 7, no infinities, 0x7F/0xFF
 * NaN): round to nearest, ties to even; |q| > 448 and +-inf saturate to
 * +-448 (0x7E | sign); NaN of either sign gives 0x7F. */
__device__ __forceinline__ uint8_t f32_to_e4m3fn(float q)
{
#ifdef KD_FAULT_FP8_DOUBLE_ROUND
    q = kd_round_through_f16(q); /* Fault: two roundings. */
#endif
    const uint32_t u = __float_as_uint(q);
    const uint32_t sign = (u >> 24) & 0x80u;
    const uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return 0x7Fu; /* NaN */
    if (a > 0x43E00000u) {             /* |q| > 448, or inf */
#ifdef KD_FAULT_FP8_NO_SATURATE
        return static_cast<uint8_t>(sign | 0x7Fu); /* Fault: overflow to NaN. */
#else
        return static_cast<uint8_t>(sign | 0x7Eu);
#endif
    }
    if (a >= 0x3C800000u) { /* |q| >= 2^-6: normal */
        /* Keep exponent and 3 mantissa bits, rounding at bit 20 to nearest
         * even; a mantissa carry moves into the exponent. |q| <= 448 keeps
         * the result <= 0x7E. f32 exponent e maps to e4m3 exponent e - 120. */
        const uint32_t r = (a + 0x7FFFFu + ((a >> 20) & 1u)) >> 20;
        return static_cast<uint8_t>(sign | (r - (120u << 3)));
    }
    /* |q| < 2^-6: subnormal m * 2^-9, m = rne(|q| * 512) in [0, 8] (8 is
     * the smallest normal, code 0x08, so the codes stay contiguous). The
     * product is exact. */
    const uint32_t m = __float2uint_rn(__fmul_rn(__uint_as_float(a), 512.0f));
    return static_cast<uint8_t>(sign | m);
}

/* ue8m0 rounds a positive scale up to a power of two on its bits (an exact
 * power of two, inf and NaN are returned unchanged). */
__device__ __forceinline__ float ue8m0(float scale)
{
    uint32_t u = __float_as_uint(scale);
    if ((u & 0x007FFFFFu) != 0 && (u & 0x7F800000u) != 0x7F800000u) {
#ifdef KD_FAULT_UE8M0_FLOOR
        u &= 0xFF800000u; /* Fault: rounded down. */
#else
        u = (u & 0xFF800000u) + 0x00800000u;
#endif
    }
    return __uint_as_float(u);
}

/* f32_to_e2m1 encodes q as OCP e2m1 (bit 3 sign, bits 0-2 the index of
 * the magnitude in {0, .5, 1, 1.5, 2, 3, 4, 6}): round to nearest, ties
 * to the even code (strict comparisons at the midpoints whose lower
 * neighbour is even: 0.25, 1.25, 2.5, 5; non-strict where it is odd:
 * 0.75, 1.75, 3.5), |q| > 6 and inf saturate to index 7, NaN gives 0x7.
 * The sign is kept (a negative value rounding to 0 gives 0x8). */
__device__ __forceinline__ uint32_t f32_to_e2m1(float q)
{
    const float a = fabsf(q);
    if (!(a == a)) return 0x7u;
    const uint32_t idx = static_cast<uint32_t>(a > 0.25f) + static_cast<uint32_t>(a >= 0.75f) +
                         static_cast<uint32_t>(a > 1.25f) + static_cast<uint32_t>(a >= 1.75f) +
                         static_cast<uint32_t>(a > 2.5f) + static_cast<uint32_t>(a >= 3.5f) +
                         static_cast<uint32_t>(a > 5.0f);
    return ((__float_as_uint(q) >> 28) & 0x8u) | idx;
}

/* e2m1_value returns the value of an e2m1 code, exact in f32. */
__device__ __forceinline__ float e2m1_value(uint32_t c)
{
    const uint32_t i = c & 7u;
    const float mag = i < 4u ? static_cast<float>(i) * 0.5f : (i < 6u ? static_cast<float>(i) - 2.0f : static_cast<float>(i - 4u) * 2.0f);
    return (c & 8u) ? -mag : mag;
}

/* ue8m0_byte returns the ue8m0 byte of the power of two at or above a
 * non-negative s, on its bits: the exponent field, plus one if the
 * mantissa field is non-zero, clamped to [1, 254]. */
__device__ __forceinline__ uint32_t ue8m0_byte(float s)
{
    const uint32_t u = __float_as_uint(s) & 0x7FFFFFFFu;
    if (u > 0x7F800000u) return 254u;
    int e = static_cast<int>(u >> 23) + ((u & 0x007FFFFFu) != 0u ? 1 : 0);
    e = e < 1 ? 1 : (e > 254 ? 254 : e);
    return static_cast<uint32_t>(e);
}

__device__ __forceinline__ float block_max(float v)
{
#pragma unroll
    for (int m = 4; m >= 1; m >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, m));
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) v = __fadd_rn(v, __shfl_xor_sync(kFullMask, v, m));
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, m));
    return v;
}

/* load_x reads dims [4*lane, 4*lane+4) of one token. */
__device__ __forceinline__ void load_x(const uint16_t *xrow, int lane, float v[kPerLane])
{
    const uint16_t *src = xrow + kPerLane * lane;
    if ((reinterpret_cast<uintptr_t>(src) & 7u) == 0) {
        const uint2 w = *reinterpret_cast<const uint2 *>(src);
        v[0] = __uint_as_float(w.x << 16);
        v[1] = __uint_as_float(w.x & 0xFFFF0000u);
        v[2] = __uint_as_float(w.y << 16);
        v[3] = __uint_as_float(w.y & 0xFFFF0000u);
    } else {
#pragma unroll
        for (int r = 0; r < kPerLane; ++r) v[r] = bf16_to_f32(src[r]);
    }
}

/* store4 writes the 4 bytes of w (little-endian) at dst. */
__device__ __forceinline__ void store4(uint8_t *dst, uint32_t w)
{
    if ((reinterpret_cast<uintptr_t>(dst) & 3u) == 0) {
        *reinterpret_cast<uint32_t *>(dst) = w;
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) dst[i] = static_cast<uint8_t>(w >> (8 * i));
    }
}

/* store_fp4 quantises and writes the lane's 4 values (normrope.h step 5,
 * FP4 store). Every lane of the warp calls it. */
__device__ __forceinline__ void store_fp4(uint8_t *page_base, int64_t page_size, int64_t in_page, int lane,
                                          const float v[kPerLane])
{
#ifdef KD_FAULT_FP4_AMAX_448
    const float fmax = 448.0f; /* Fault: the e4m3 maximum. */
#else
    const float fmax = 6.0f;
#endif
    float a = 0.0f;
#pragma unroll
    for (int r = 0; r < kPerLane; ++r) a = fmaxf(a, fabsf(v[r]));
    a = block_max(a);
    const uint32_t e1 = ue8m0_byte(__fmul_rn(fmaxf(a, 6.0f * 0x1p-126f), 1.0f / fmax));
    const float s1 = __uint_as_float(e1 << 23), inv1 = __uint_as_float((254u - e1) << 23);
    float g[kPerLane];
    float a2 = 0.0f;
#pragma unroll
    for (int r = 0; r < kPerLane; ++r) {
        g[r] = __fmul_rn(e2m1_value(f32_to_e2m1(__fmul_rn(v[r], inv1))), s1);
        a2 = fmaxf(a2, fabsf(g[r]));
    }
    a2 = block_max(a2);
    const uint32_t e2 = ue8m0_byte(fmaxf(__fdiv_rn(a2, fmax), 1e-4f));
    const float inv2 = __uint_as_float((254u - e2) << 23);
    uint32_t c[kPerLane];
#pragma unroll
    for (int r = 0; r < kPerLane; ++r) {
        c[r] = f32_to_e2m1(__fmul_rn(g[r], inv2));
        if ((c[r] & 7u) == 0u) c[r] = 0u; /* -0 stored as +0 */
    }
#ifdef KD_FAULT_FP4_NIBBLE_SWAP
    const uint32_t b0 = c[1] | (c[0] << 4), b1 = c[3] | (c[2] << 4); /* Fault: nibbles swapped. */
#else
    const uint32_t b0 = c[0] | (c[1] << 4), b1 = c[2] | (c[3] << 4);
#endif
    /* Block b's exponent lives on lanes 8b..8b+7; lane 0 gathers one of each. */
    const uint32_t x1 = __shfl_sync(kFullMask, e2, 8), x2 = __shfl_sync(kFullMask, e2, 16);
    const uint32_t x3 = __shfl_sync(kFullMask, e2, 24);
#ifdef KD_FAULT_FP4_SCALE_WRONG_BLOCK
    const uint32_t word = e2 | (x2 << 8) | (x1 << 16) | (x3 << 24); /* Fault: blocks 1 and 2 swapped. */
#else
    const uint32_t word = e2 | (x1 << 8) | (x2 << 16) | (x3 << 24);
#endif
#ifdef KD_FAULT_FP4_CACHE_INTERLEAVED
    /* Fault: each slot's scales right after its codes (68-byte records). */
    (void)page_size;
    uint8_t *code_dst = page_base + in_page * 68;
    uint8_t *scale_dst = code_dst + 64;
#else
    uint8_t *code_dst = page_base + in_page * 64;
    uint8_t *scale_dst = page_base + 64 * page_size + in_page * 4;
#endif
    code_dst[2 * lane] = static_cast<uint8_t>(b0);
    code_dst[2 * lane + 1] = static_cast<uint8_t>(b1);
    if (lane == 0) store4(scale_dst, word);
}

/* norm applies RMSNorm or LayerNorm in place (normrope.h step 2). */
__device__ __forceinline__ void norm(const kd_normrope_params &p, int lane, float v[kPerLane])
{
    const float inv_dim = 1.0f / kDim; /* exact: 2^-7 */
    const float *w = p.weight + kPerLane * lane;
    if (p.norm == KD_NORM_RMS) {
        float ss = __fmul_rn(v[0], v[0]);
#pragma unroll
        for (int r = 1; r < kPerLane; ++r) ss = __fadd_rn(ss, __fmul_rn(v[r], v[r]));
        const float ms = __fmul_rn(warp_sum(ss), inv_dim);
        const float rs = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(ms, p.eps)));
#pragma unroll
        for (int r = 0; r < kPerLane; ++r) v[r] = __fmul_rn(__fmul_rn(v[r], rs), w[r]);
    } else {
        float s = v[0];
#pragma unroll
        for (int r = 1; r < kPerLane; ++r) s = __fadd_rn(s, v[r]);
        const float mean = __fmul_rn(warp_sum(s), inv_dim);
        float d[kPerLane];
#pragma unroll
        for (int r = 0; r < kPerLane; ++r) d[r] = __fsub_rn(v[r], mean);
        float ss = __fmul_rn(d[0], d[0]);
#pragma unroll
        for (int r = 1; r < kPerLane; ++r) ss = __fadd_rn(ss, __fmul_rn(d[r], d[r]));
        const float var = __fmul_rn(warp_sum(ss), inv_dim);
        const float rs = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(var, p.eps)));
        const float *bias = p.bias + kPerLane * lane;
#pragma unroll
        for (int r = 0; r < kPerLane; ++r)
            v[r] = __fadd_rn(__fmul_rn(__fmul_rn(d[r], rs), w[r]), bias[r]);
    }
}

/* rope rotates dims [off, off+64) in place (normrope.h step 3). */
__device__ __forceinline__ void rope(const float *f, int off, int style, int lane, float v[kPerLane])
{
    /* neox partner of dim d (d - off < 32) is d + 32, i.e. lane ^ 8. All
     * lanes take part in the shuffle. */
    float partner[kPerLane];
#pragma unroll
    for (int r = 0; r < kPerLane; ++r) partner[r] = __shfl_xor_sync(kFullMask, v[r], 8);
    const int d0 = kPerLane * lane - off; /* rotary index of this lane's first dim */
    if (d0 < 0 || d0 >= KD_NORMROPE_ROPE_DIM) return;
    if (style == KD_ROPE_INTERLEAVED) {
#pragma unroll
        for (int r = 0; r < kPerLane; r += 2) {
            const int j = (d0 + r) >> 1;
            const float c = f[2 * j], s = f[2 * j + 1];
            const float a = v[r], b = v[r + 1];
            v[r] = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
            v[r + 1] = __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c));
        }
    } else {
#pragma unroll
        for (int r = 0; r < kPerLane; ++r) {
            const int d = d0 + r;
            if (d < 32) {
                const float c = f[2 * d], s = f[2 * d + 1];
                v[r] = __fsub_rn(__fmul_rn(v[r], c), __fmul_rn(partner[r], s));
            } else {
                const float c = f[2 * (d - 32)], s = f[2 * (d - 32) + 1];
                v[r] = __fadd_rn(__fmul_rn(partner[r], s), __fmul_rn(v[r], c));
            }
        }
    }
}

/* hadamard applies the scaled natural-order Walsh-Hadamard transform in
 * place (normrope.h step 4). Index k = 4*lane + r: bits 0-1 are in
 * registers, bits 2-6 are lane bits 0-4. */
__device__ __forceinline__ void hadamard(int lane, float v[kPerLane])
{
    float t0 = __fadd_rn(v[0], v[1]), t1 = __fsub_rn(v[0], v[1]);
    float t2 = __fadd_rn(v[2], v[3]), t3 = __fsub_rn(v[2], v[3]);
    v[0] = __fadd_rn(t0, t2);
    v[2] = __fsub_rn(t0, t2);
    v[1] = __fadd_rn(t1, t3);
    v[3] = __fsub_rn(t1, t3);
#pragma unroll
    for (int m = 1; m <= 16; m <<= 1) {
        const bool hi = (lane & m) != 0;
#pragma unroll
        for (int r = 0; r < kPerLane; ++r) {
            const float o = __shfl_xor_sync(kFullMask, v[r], m);
            v[r] = hi ? __fsub_rn(o, v[r]) : __fadd_rn(v[r], o);
        }
    }
#ifndef KD_FAULT_HADAMARD_UNSCALED
#pragma unroll
    for (int r = 0; r < kPerLane; ++r) v[r] = __fmul_rn(v[r], KD_HADAMARD_SCALE_F32);
#endif
}

/* config_ok reports whether the launch-wide configuration is in range. */
__device__ __forceinline__ bool config_ok(const kd_normrope_params &p)
{
    return (p.norm == KD_NORM_RMS || (p.norm == KD_NORM_LAYER && p.bias != nullptr)) &&
           (p.rope_offset == 0 || p.rope_offset == 64) &&
           (p.rope_style == KD_ROPE_NEOX || p.rope_style == KD_ROPE_INTERLEAVED) &&
           (p.hadamard == 0 || p.hadamard == 1) &&
           (p.store == KD_STORE_FP8 || p.store == KD_STORE_BF16 || p.store == KD_STORE_FP4) &&
           (p.scale_fmt == KD_SCALE_PLAIN || p.scale_fmt == KD_SCALE_UE8M0) &&
           (p.store != KD_STORE_FP4 || p.scale_fmt == KD_SCALE_UE8M0) &&
           (p.stages == KD_STAGES_ALL || p.stages == KD_STAGES_STORE) && p.log2_page >= 0 &&
           p.log2_page <= 30;
}

} /* namespace kd_normrope */

extern "C" __global__ void __launch_bounds__(KD_NORMROPE_THREADS)
    kd_norm_rope_store(kd_normrope_params p)
{
    using namespace kd_normrope;
    if (!config_ok(p)) __trap();
    const int lane = threadIdx.x & 31;
    const int64_t token = static_cast<int64_t>(blockIdx.x) * kTokensPerBlock + (threadIdx.x >> 5);
    if (token >= p.num_tokens) return; /* whole warp */
#ifdef KD_FAULT_SKIP_TAIL_TOKEN
    /* Fault: the tail count is off by one when N is not a multiple of 8. */
    if ((p.num_tokens % kTokensPerBlock) != 0 && token == p.num_tokens - 1) return;
#endif
    const int64_t loc = p.out_loc[token];
    const int64_t page_size = int64_t{1} << p.log2_page;
#ifndef KD_FAULT_WRITE_NEGATIVE_SLOT
    if (loc < 0) return; /* whole warp: nothing written */
#endif
    if (loc >= p.num_pages * page_size) __trap();
    int64_t pos = p.positions[token];
    if (pos < 0 || pos >= p.max_pos) __trap();
#ifdef KD_FAULT_ROPE_POSITION_OFF_BY_ONE
    pos += 1; /* Fault: position + 1. */
#endif

    float v[kPerLane];
    load_x(p.x + token * p.x_stride, lane, v);
    if (p.stages == KD_STAGES_ALL) {
        norm(p, lane, v);

        int off = p.rope_offset;
        int style = p.rope_style;
#ifdef KD_FAULT_ROPE_HALF_SWAP
        off = 64 - off; /* Fault: rotates the other 64 dims. */
#endif
#ifdef KD_FAULT_ROPE_STYLE_SWAP
        style = style == KD_ROPE_NEOX ? KD_ROPE_INTERLEAVED : KD_ROPE_NEOX; /* Fault. */
#endif
        rope(p.freqs + pos * 2 * 32, off, style, lane, v);
        if (p.hadamard) hadamard(lane, v);
    } /* KD_STAGES_STORE: z = x, the keys as given */

    const int64_t page = loc >> p.log2_page; /* arithmetic shift: -1 -> -1 */
    const int64_t in_page = loc & (page_size - 1);
    if (p.store == KD_STORE_BF16) {
        uint8_t *dst = p.cache + page * KD_BF16_PAGE_BYTES(page_size) + in_page * 256 + lane * 8;
        const uint32_t lo = f32_to_bf16(v[0]) | (static_cast<uint32_t>(f32_to_bf16(v[1])) << 16);
        const uint32_t hi = f32_to_bf16(v[2]) | (static_cast<uint32_t>(f32_to_bf16(v[3])) << 16);
        if ((reinterpret_cast<uintptr_t>(dst) & 7u) == 0) {
            *reinterpret_cast<uint2 *>(dst) = make_uint2(lo, hi);
        } else {
            store4(dst, lo);
            store4(dst + 4, hi);
        }
        return;
    }
    if (p.store == KD_STORE_FP4) {
        store_fp4(p.cache + page * KD_FP4_PAGE_BYTES(page_size), page_size, in_page, lane, v);
        return;
    }

    float amax = 0.0f;
#pragma unroll
    for (int r = 0; r < kPerLane; ++r) amax = fmaxf(amax, fabsf(v[r]));
    amax = warp_max(amax);
#ifdef KD_FAULT_SCALE_NO_FLOOR
    float scale = __fdiv_rn(amax, 448.0f); /* Fault: no 1e-4 floor. */
#else
    float scale = __fdiv_rn(fmaxf(amax, 1e-4f), 448.0f);
#endif
    if (p.scale_fmt == KD_SCALE_UE8M0) scale = ue8m0(scale);
    uint32_t codes = 0;
#pragma unroll
    for (int r = 0; r < kPerLane; ++r)
        codes |= static_cast<uint32_t>(f32_to_e4m3fn(__fdiv_rn(v[r], scale))) << (8 * r);

    uint8_t *page_base = p.cache + page * KD_FP8_PAGE_BYTES(page_size);
#ifdef KD_FAULT_CACHE_SCALE_INTERLEAVED
    /* Fault: each slot's scale right after its codes (132-byte records). */
    uint8_t *code_dst = page_base + in_page * 132;
    uint8_t *scale_dst = code_dst + 128;
#else
    uint8_t *code_dst = page_base + in_page * 128;
    uint8_t *scale_dst = page_base + 128 * page_size + in_page * 4;
#endif
    store4(code_dst + lane * 4, codes);
    if (lane == 0) store4(scale_dst, __float_as_uint(scale));
}
