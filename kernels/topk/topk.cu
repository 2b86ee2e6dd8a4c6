/* Radix top-K select with page-table transform (topk_transform).
 *
 * Contract: docs/contracts/topk_transform.md. Launch geometry, preconditions, sync rules and
 * the output order: topk.h. The method is the most-significant-digit radix
 * select of Alabi et al., "Fast k-selection algorithms for graphics
 * processing units" (ACM JEA 17, 2012), run on the order-preserving key32
 * transform of the f32 bits, one thread block per row.
 *
 * Fault builds (kernels/faults.txt) are the KD_FAULT_TOPK_* and
 * KD_FAULT_RACE_MISSING_BARRIER blocks below; a normal build defines none. */

#include <stdint.h>

#include "topk.h"
#include "../f16round.h"

namespace kd_topk {

constexpr int kThreads = KD_TOPK_THREADS;
constexpr int kWarps = kThreads / 32;
constexpr int kCandCap = KD_TOPK_CAND_CAP;
constexpr unsigned kFullMask = 0xFFFFFFFFu;

static_assert(kWarps == 32, "block_scan assumes 32 warps of 32 threads");
static_assert(KD_TOPK_BINS == 2048 && KD_TOPK_BINS % kThreads == 0,
              "the widest digit has 11 bits and each thread owns whole bins");

/* Digits of the 32-bit key, most significant first: bits [21, 32), [10, 21),
 * [0, 10). */
constexpr int kShift0 = 21, kBits0 = 11;
constexpr int kShift1 = 10, kBits1 = 11;
constexpr int kShift2 = 0, kBits2 = 10;

struct Shared {
    uint32_t hist[KD_TOPK_BINS];
    uint32_t cand[kCandCap];  /* keys whose first digit is the threshold bin */
    uint32_t warp_sums[kWarps];
    uint32_t cand_count;
    uint32_t sel_bin;    /* threshold bin of the current digit */
    uint32_t sel_above;  /* keys in bins above it (matching the prefix) */
    uint32_t sel_count;  /* keys in the threshold bin */
};

/* key32: the order-preserving map from f32 bits to u32 (docs/contracts/topk_transform.md). */
__device__ __forceinline__ uint32_t key32(uint32_t bits)
{
    const uint32_t flip = static_cast<uint32_t>(static_cast<int32_t>(bits) >> 31) | 0x80000000u;
    return bits ^ flip;
}

/* select_key is the key the select ranks row value bits by: key32 itself
 * in a normal build. */
__device__ __forceinline__ uint32_t select_key(uint32_t bits)
{
#ifdef KD_FAULT_TOPK_COARSE_ONLY
    /* Fault: ranks by the binary16 rounding of the value alone, the key of a
     * coarse first pass, with no exact refinement: values that round to the
     * same fp16 tie, and the lowest positions fill the ties. */
    return key32(__float_as_uint(kd_round_through_f16(__uint_as_float(bits))));
#else
    return key32(bits);
#endif
}

/* widen_f16 returns the f32 bits of the exact value of binary16 bits h
 * (subnormals become normal f32 values; inf and NaN keep sign and
 * payload), so key32 of it ranks f16 scores in the Key16 order
 * (docs/contracts/topk_transform.md, "16-bit scores"). */
__device__ __forceinline__ uint32_t widen_f16(uint32_t h)
{
    const uint32_t sign = (h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t frac = h & 0x3FFu;
    if (exp == 0x1Fu) return sign | 0x7F800000u | (frac << 13);
    if (exp != 0u) return sign | ((exp + 112u) << 23) | (frac << 13);
    if (frac == 0u) return sign;
    int e = 113; /* subnormal: frac * 2^-24, normalise */
    while ((frac & 0x400u) == 0u) {
        frac <<= 1;
        --e;
    }
    return sign | (static_cast<uint32_t>(e) << 23) | ((frac & 0x3FFu) << 13);
}

/* key16 is Key16 of 16-bit bits h; unkey32 inverts key32. The fault
 * builds below use them to hand the select the key of a faulty 16-bit
 * ranking, as f32 bits whose key32 it is. */
__device__ __forceinline__ uint32_t key16(uint32_t h)
{
    return (h & 0x8000u) ? (~h & 0xFFFFu) : (h ^ 0x8000u);
}
__device__ __forceinline__ uint32_t unkey32(uint32_t k)
{
    return (k & 0x80000000u) ? (k ^ 0x80000000u) : ~k;
}

/* widen16 returns the f32 bits a 16-bit score is ranked by: its exact
 * widening (bf16: h << 16; f16: widen_f16). */
__device__ __forceinline__ uint32_t widen16(uint32_t h, int32_t dtype)
{
#if defined(KD_FAULT_TOPK16_RAW_BITS)
    /* Fault: ranks by the raw 16-bit pattern, no sign flip. */
    (void)dtype;
    return unkey32(h << 16);
#elif defined(KD_FAULT_TOPK16_ONE_PASS)
    /* Fault: one 8-bit pass, the high Key16 digit alone; ties by position. */
    (void)dtype;
    return unkey32((key16(h) & 0xFF00u) << 16);
#elif defined(KD_FAULT_TOPK16_RAW_LOW_DIGIT)
    /* Fault: the second pass's digit is the raw low byte, not the key's. */
    (void)dtype;
    return unkey32(((key16(h) & 0xFF00u) | (h & 0xFFu)) << 16);
#elif defined(KD_FAULT_TOPK16_F16_BF16_KEY)
    /* Fault: f16 ranked at bf16 precision (the top half of key32). */
    if (dtype == KD_TOPK_SCORES_F16) return unkey32(key32(widen_f16(h)) & 0xFFFF0000u);
    return h << 16;
#else
    return dtype == KD_TOPK_SCORES_F16 ? widen_f16(h) : h << 16;
#endif
}

/* Row reads one row of scores as f32 bits: f32 scores as they are, bf16
 * and f16 scores (p.score_dtype) widened exactly, so the select below ranks
 * every dtype by key32 and 16-bit rows come out in the Key16 order. */
struct Row {
    const void *base;
    int32_t dtype;
    __device__ __forceinline__ uint32_t operator[](int64_t i) const
    {
        if (dtype == KD_TOPK_SCORES_F32) return static_cast<const uint32_t *>(base)[i];
        return widen16(static_cast<const uint16_t *>(base)[i], dtype);
    }
};

/* is_nan reports whether f32 bits are a NaN of either sign. */
__device__ __forceinline__ bool is_nan(uint32_t bits)
{
    return (bits & 0x7FFFFFFFu) > 0x7F800000u;
}

/* block_scan returns the inclusive prefix sum of v over the block in
 * thread order and stores the block total in *total. Every thread of the
 * block must call it; it ends with a barrier so warp_sums may be reused. */
__device__ __forceinline__ uint32_t block_scan(uint32_t v, uint32_t *warp_sums, uint32_t *total)
{
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const uint32_t n = __shfl_up_sync(kFullMask, v, o);
        if (lane >= o) v += n;
    }
    if (lane == 31) warp_sums[warp] = v;
#ifndef KD_FAULT_RACE_MISSING_BARRIER
    __syncthreads(); /* warp totals visible to warp 0 */
#endif
    if (warp == 0) {
        uint32_t w = warp_sums[lane];
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const uint32_t n = __shfl_up_sync(kFullMask, w, o);
            if (lane >= o) w += n;
        }
        warp_sums[lane] = w;
    }
    __syncthreads(); /* scanned warp totals visible to all */
    const uint32_t prefix = warp > 0 ? warp_sums[warp - 1] : 0u;
    *total = warp_sums[kWarps - 1];
    __syncthreads(); /* all reads done before the next call writes */
    return v + prefix;
}

/* select_bin finds, in s.hist[0, nbins), the bin holding the k_rem-th
 * largest key (counting from the top bin down): the unique bin b with
 * count(bins > b) < k_rem <= count(bins >= b). Requires 1 <= k_rem <=
 * count(all bins). Publishes b, count(bins > b) and count(b) in
 * s.sel_*, visible to the whole block on return. */
template <int kBins>
__device__ __forceinline__ void select_bin(Shared &s, uint32_t k_rem)
{
    constexpr int kPer = kBins / kThreads;
    static_assert(kPer >= 1 && kBins % kThreads == 0, "whole bins per thread");
    /* Thread t owns bins kBins-1-t*kPer-j, j in [0, kPer): descending, so a
     * scan in thread order counts keys from the top bin down. */
    uint32_t h[kPer];
    uint32_t local = 0;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
        h[j] = s.hist[kBins - 1 - threadIdx.x * kPer - j];
        local += h[j];
    }
    uint32_t total;
    uint32_t run = block_scan(local, s.warp_sums, &total) - local;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
        if (run < k_rem && run + h[j] >= k_rem) {
            s.sel_bin = kBins - 1 - threadIdx.x * kPer - j;
            s.sel_above = run;
            s.sel_count = h[j];
        }
        run += h[j];
    }
    __syncthreads();
}

__device__ __forceinline__ void clear_hist(Shared &s)
{
    for (int i = threadIdx.x; i < KD_TOPK_BINS; i += kThreads) s.hist[i] = 0;
    __syncthreads();
}

/* PageRow is the page table of one row: its entries, log2 of the page
 * size, the table's row stride (max_pages) and how many entries the table
 * holds from row's start to its end (only the page-translation fault
 * builds read past the row, and never past that). */
struct PageRow {
    const int32_t *row;
    int log2_page;
    int64_t max_pages;
    int64_t left;
};

/* slot_of maps row position i to its cache slot:
 * page_table_row[i >> log2_page] * P + (i & (P-1)), in 64-bit. */
__device__ __forceinline__ int32_t slot_of(const PageRow &pr, int64_t i)
{
#if defined(KD_FAULT_TOPK_PAGE_SIZE_64)
    /* Fault: 64-token pages whatever P is; -1 past the row's entries. */
    if ((i >> 6) >= pr.max_pages) return -1;
    return static_cast<int32_t>(int64_t{pr.row[i >> 6]} * 64 + (i & 63));
#else
#if defined(KD_FAULT_TOPK_PAGE_OFF_BY_ONE)
    /* Fault: the entry after the position's page (the next row's first
     * past a row's last); -1 past the whole table. */
    const int64_t at = (i >> pr.log2_page) + 1;
    if (at >= pr.left) return -1;
    const int64_t page = pr.row[at];
#else
    const int64_t page = pr.row[i >> pr.log2_page];
#endif
#ifdef KD_FAULT_TOPK_NO_OFFSET
    const int64_t in_page = 0; /* Fault: the offset within the page dropped. */
#else
    const int64_t in_page = i & ((int64_t{1} << pr.log2_page) - 1);
#endif
    return static_cast<int32_t>(page * (int64_t{1} << pr.log2_page) + in_page);
#endif
}

/* histogram_digit counts, into s.hist, digit (key >> shift) & (2^bits - 1)
 * of every key whose bits above the digit equal those of prefix. Keys
 * come from the candidate buffer (n_cand keys) when from_cand, else from
 * row[0, n). */
__device__ __forceinline__ void histogram_digit(Shared &s, const Row &row, int64_t n,
                                                bool from_cand, uint32_t n_cand, uint32_t prefix,
                                                int shift, int bits)
{
    const int top = shift + bits; /* first bit above the digit */
    const uint32_t high_mask = top >= 32 ? 0u : ~((uint32_t{1} << top) - 1u);
    const uint32_t digit_mask = (uint32_t{1} << bits) - 1u;
    clear_hist(s);
    if (from_cand) {
        for (uint32_t i = threadIdx.x; i < n_cand; i += kThreads) {
            const uint32_t k = s.cand[i];
            if ((k & high_mask) == prefix) atomicAdd(&s.hist[(k >> shift) & digit_mask], 1u);
        }
    } else {
        for (int64_t i = threadIdx.x; i < n; i += kThreads) {
            const uint32_t k = select_key(row[i]);
            if ((k & high_mask) == prefix) atomicAdd(&s.hist[(k >> shift) & digit_mask], 1u);
        }
    }
    __syncthreads();
}

/* gather_candidates copies into s.cand every key of row[0, n) whose first
 * digit is bin0 and returns how many there were (which may exceed the
 * buffer; keys past kCandCap are not stored). Warp-aggregated atomics: the
 * buffer order varies between runs, its contents do not. */
__device__ __forceinline__ uint32_t gather_candidates(Shared &s, const Row &row, int64_t n,
                                                      uint32_t bin0)
{
    const int lane = threadIdx.x & 31;
    if (threadIdx.x == 0) s.cand_count = 0;
    __syncthreads();
    for (int64_t i0 = 0; i0 < n; i0 += kThreads) {
        const int64_t i = i0 + threadIdx.x;
        uint32_t k = 0;
        bool take = false;
        if (i < n) {
            k = select_key(row[i]);
            take = (k >> kShift0) == bin0;
        }
        const unsigned m = __ballot_sync(kFullMask, take);
        if (m != 0) {
            const int leader = __ffs(m) - 1;
            uint32_t base = 0;
            if (lane == leader) base = atomicAdd(&s.cand_count, static_cast<uint32_t>(__popc(m)));
            base = __shfl_sync(kFullMask, base, leader);
            if (take) {
                const uint32_t idx = base + static_cast<uint32_t>(__popc(m & ((1u << lane) - 1u)));
                if (idx < static_cast<uint32_t>(kCandCap)) s.cand[idx] = k;
            }
        }
    }
    __syncthreads();
    return s.cand_count;
}

/* emit writes selected position i, whose value has f32 bits `bits`, to
 * output slot r. */
__device__ __forceinline__ void emit(int32_t *out_page, int32_t *out_raw, const PageRow &pr, uint32_t r,
                                     int64_t i, uint32_t bits)
{
#ifdef KD_FAULT_TOPK_FLT_MAX_SENTINEL
    /* Fault: rows are padded with -FLT_MAX, so -inf (and -NaN) picks lose to
     * the padding and come back as -1. key32(-inf) = 0x007FFFFF. */
    if (key32(bits) <= 0x007FFFFFu) {
        out_page[r] = -1;
        if (out_raw != nullptr) out_raw[r] = -1;
        return;
    }
#endif
#ifdef KD_FAULT_TOPK_NAN_GARBAGE
    /* Fault: a NaN pick comes back as INT_MIN in both outputs, as an x86
     * float-to-int conversion of the NaN would make it. */
    if (is_nan(bits)) {
        out_page[r] = INT32_MIN;
        if (out_raw != nullptr) out_raw[r] = INT32_MIN;
        return;
    }
#else
    (void)bits;
#endif
    out_page[r] = slot_of(pr, i);
    if (out_raw != nullptr) out_raw[r] = static_cast<int32_t>(i);
}

/* topk_row selects the top K of one row (blockIdx.x); see topk.h. */
template <int K>
__device__ __forceinline__ void topk_row(const kd_topk_params &p, Shared &s)
{
    static_assert(K > 0 && K < 65536, "K fits the 16-bit fields of the emission scan");
    const int64_t b = blockIdx.x;
    if (b >= p.batch) return; /* whole block */
    const int32_t len = p.seq_lens[b];
    if (p.k != K || len < 0 || static_cast<int64_t>(len) > p.stride || p.log2_page < 0 ||
        p.log2_page > 30 || p.score_dtype < KD_TOPK_SCORES_F32 || p.score_dtype > KD_TOPK_SCORES_F16) {
        __trap();
    }
    const int64_t elem = p.score_dtype == KD_TOPK_SCORES_F32 ? 4 : 2;
    const Row row{static_cast<const unsigned char *>(p.scores) + b * p.stride * elem, p.score_dtype};
#ifdef KD_FAULT_TOPK_PAGE_ROW0
    const int32_t *page_row = p.page_table; /* Fault: row 0's page table for every row. */
#else
    const int32_t *page_row = p.page_table + b * p.max_pages;
#endif
    const PageRow pr{page_row, p.log2_page, p.max_pages, int64_t{p.batch} * p.max_pages - (page_row - p.page_table)};
    int32_t *out_page = p.page_indices + b * K;
    int32_t *out_raw = p.raw_indices != nullptr ? p.raw_indices + b * K : nullptr;

#ifdef KD_FAULT_MEM_OOB_READ
    /* Fault: thread 0 of block 0 reads a u32 256 bytes past the end of
     * scores (batch * stride values), outside its allocation. The value is
     * unused, so the results stay right: only a memory checker sees it
     * (compute-sanitizer memcheck; the emulated driver's guard page). */
    if (b == 0 && threadIdx.x == 0) {
        const volatile uint32_t *past = reinterpret_cast<const volatile uint32_t *>(
            static_cast<const unsigned char *>(p.scores) + p.batch * p.stride * elem) + 64;
        const uint32_t v = *past;
        (void)v;
    }
#endif

    /* Short rows: every position, in order, then -1. */
    if (len <= K) {
        for (int j = threadIdx.x; j < K; j += kThreads) {
#ifdef KD_FAULT_TOPK_SHORT_ROW_ORDER
            const int32_t raw = j < len ? len - 1 - j : -1; /* Fault: reversed. */
#else
            const int32_t raw = j < len ? j : -1;
#endif
#ifdef KD_FAULT_TOPK_NAN_GARBAGE
            if (raw >= 0 && is_nan(row[raw])) { /* Fault: a NaN pick becomes INT_MIN. */
                out_page[j] = INT32_MIN;
                if (out_raw != nullptr) out_raw[j] = INT32_MIN;
                continue;
            }
#endif
            out_page[j] = raw >= 0 ? slot_of(pr, raw) : -1;
            if (out_raw != nullptr) out_raw[j] = raw;
        }
        return;
    }

#if defined(KD_FAULT_TOPK_PAST_LENGTH)
    const int64_t n = p.stride; /* Fault: scans the whole row stride. */
#elif defined(KD_FAULT_TOPK_LENGTH_MINUS_ONE)
    const int64_t n = static_cast<int64_t>(len) - 1; /* Fault: drops position L-1. */
#else
    const int64_t n = len;
#endif

    /* Digit 0, over the row in global memory. */
    uint32_t k_rem = K; /* ranks still to fill at or below the prefix */
    histogram_digit(s, row, n, false, 0, 0u, kShift0, kBits0);
    select_bin<1 << kBits0>(s, k_rem);
    uint32_t prefix = s.sel_bin << kShift0;
    k_rem -= s.sel_above;
    const uint32_t bin0 = s.sel_bin;

    /* Fast path when the threshold bin fits the candidate buffer; the
     * decision is block-uniform (sel_count is shared). */
#ifdef KD_FAULT_TOPK_CAPACITY_4096
    const bool from_cand = true; /* Fault: overflow past the buffer is dropped. */
#else
    const bool from_cand = s.sel_count <= static_cast<uint32_t>(kCandCap);
#endif
    uint32_t n_cand = 0;
    if (from_cand) {
        n_cand = gather_candidates(s, row, n, bin0);
        if (n_cand > static_cast<uint32_t>(kCandCap)) n_cand = kCandCap;
    }

    /* Digits 1 and 2, over the buffer or again over the row. */
    histogram_digit(s, row, n, from_cand, n_cand, prefix, kShift1, kBits1);
    select_bin<1 << kBits1>(s, k_rem);
    prefix |= s.sel_bin << kShift1;
    k_rem -= s.sel_above;

    histogram_digit(s, row, n, from_cand, n_cand, prefix, kShift2, kBits2);
    select_bin<1 << kBits2>(s, k_rem);
    prefix |= s.sel_bin << kShift2;
    k_rem -= s.sel_above;
    const uint32_t ties_in_row = s.sel_count; /* keys equal to the threshold */

    /* prefix is now the threshold key T: exactly K - k_rem keys lie above
     * it, and at least k_rem keys equal it. */
    const uint32_t thresh = prefix;
    const uint32_t n_above = K - k_rem;
    const uint32_t n_ties = k_rem;
    (void)ties_in_row;

#ifdef KD_FAULT_TOPK_TIE_HOLE
    /* Fault: when ties straddle the K-th value, the tie slots stay -1. */
    const bool fill_ties = ties_in_row <= n_ties;
    if (!fill_ties) {
        for (uint32_t j = n_above + threadIdx.x; j < static_cast<uint32_t>(K); j += kThreads) {
            out_page[j] = -1;
            if (out_raw != nullptr) out_raw[j] = -1;
        }
    }
#else
    const bool fill_ties = true;
#endif
#ifdef KD_FAULT_TOPK_DUP_ON_PLATEAU
    /* Fault: on a plateau (ties straddle the K-th value) the first tie is
     * written twice and the second is lost. */
    const bool dup_plateau = ties_in_row > n_ties && n_ties >= 2;
#endif

    /* Emission: tiles of kThreads positions; one scan per tile ranks the
     * keys above T (low 16 bits) and the ties (high 16 bits) in position
     * order. A tile holds at most kThreads of each, so the fields never
     * carry into each other. The "< K" tests are redundant in a correct
     * build (exactly n_above keys lie above T); they keep the fault builds
     * inside the output rows. */
    uint32_t base_above = 0, base_tie = 0;
    for (int64_t i0 = 0; i0 < n; i0 += kThreads) {
        const int64_t i = i0 + threadIdx.x;
        uint32_t bits = 0, k = 0, above = 0, tie = 0;
        if (i < n) {
            bits = row[i];
            k = select_key(bits);
            above = k > thresh;
            tie = k == thresh;
        }
        const uint32_t packed = above | (tie << 16);
        uint32_t total;
        const uint32_t excl = block_scan(packed, s.warp_sums, &total) - packed;
        if (above) {
            const uint32_t r = base_above + (excl & 0xFFFFu);
            if (r < n_above && r < static_cast<uint32_t>(K)) emit(out_page, out_raw, pr, r, i, bits);
        }
        if (tie && fill_ties) {
            const uint32_t r = base_tie + (excl >> 16);
#ifdef KD_FAULT_TOPK_DUP_ON_PLATEAU
            if (dup_plateau && r == 0 && n_above + 1 < static_cast<uint32_t>(K)) emit(out_page, out_raw, pr, n_above + 1, i, bits);
            if (!(dup_plateau && r == 1) && r < n_ties && n_above + r < static_cast<uint32_t>(K))
                emit(out_page, out_raw, pr, n_above + r, i, bits);
#else
            if (r < n_ties && n_above + r < static_cast<uint32_t>(K))
                emit(out_page, out_raw, pr, n_above + r, i, bits);
#endif
        }
        base_above += total & 0xFFFFu;
        base_tie += total >> 16;
        if (base_above >= n_above && base_tie >= n_ties) break; /* uniform: totals are shared */
    }
}

} /* namespace kd_topk */

#define KD_TOPK_ENTRY(K)                                                                        \
    extern "C" __global__ void __launch_bounds__(KD_TOPK_THREADS, 1)                            \
        kd_topk_transform_##K(kd_topk_params p)                                                 \
    {                                                                                           \
        __shared__ kd_topk::Shared s;                                                           \
        kd_topk::topk_row<K>(p, s);                                                             \
    }

KD_TOPK_ENTRY(512)
KD_TOPK_ENTRY(1024)
KD_TOPK_ENTRY(2048)

#undef KD_TOPK_ENTRY
