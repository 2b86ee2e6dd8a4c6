// topk_rows.cuh: a top-k kernel written plainly, one block per row. It is
// the "kernel of your own" of the bring-your-own example (docs/byo.md):
// nothing in it knows kerneldiff; adapter.cu maps the topk_transform
// contract onto its arguments.
//
// Row b holds lens[b] scores (f32, or bf16/f16 when width is 2) ranked as
// unsigned keys: f32 bits ^ (negative ? 0xFFFFFFFF : 0x80000000), 16-bit
// bits ^ (negative ? 0xFFFF : 0x8000), the radix-select order. The block
// finds the k-th largest key t by bisection (32 block-wide counts), then
// thread 0 writes, in ascending position order, every position above t and
// the lowest-positioned ties at t until k are taken. A row of at most k
// scores gives 0 .. len-1, then -1. out[j] is the position's cache slot,
// page_table[b][pos / page] * page + pos % page; raw[j] the position (raw
// may be null).
#pragma once

#include <cstdint>

namespace mine {

__device__ __forceinline__ uint32_t order_key(const char *row, int64_t i, int width)
{
    if (width == 4) {
        const uint32_t bits = reinterpret_cast<const uint32_t *>(row)[i];
        return bits ^ ((bits >> 31) ? 0xFFFFFFFFu : 0x80000000u);
    }
    const uint32_t bits = reinterpret_cast<const uint16_t *>(row)[i];
    return bits ^ ((bits >> 15) ? 0xFFFFu : 0x8000u);
}

template <int Threads>
__global__ void __launch_bounds__(Threads)
    topk_rows(const void *scores, int64_t stride, int width, const int32_t *lens, const int32_t *page_table,
              int64_t max_pages, int page, int k, int32_t *out, int32_t *raw)
{
    __shared__ unsigned long long total;
    const int b = blockIdx.x;
    const int64_t len = lens[b];
    const char *row = static_cast<const char *>(scores) + b * stride * width;
    const int32_t *pages = page_table + b * max_pages;
    int32_t *o = out + static_cast<int64_t>(b) * k;
    int32_t *r = raw ? raw + static_cast<int64_t>(b) * k : nullptr;
    auto slot = [&](int64_t pos) { return static_cast<int32_t>(static_cast<int64_t>(pages[pos / page]) * page + pos % page); };

    if (len <= k) {
        for (int64_t j = threadIdx.x; j < k; j += Threads) {
            o[j] = j < len ? slot(j) : -1;
            if (r) r[j] = j < len ? static_cast<int32_t>(j) : -1;
        }
        return;
    }
    // count(t): how many of the row's keys are >= t, for the whole block.
    auto count = [&](uint64_t t) {
        if (threadIdx.x == 0) total = 0;
        __syncthreads();
        unsigned long long own = 0;
        for (int64_t i = threadIdx.x; i < len; i += Threads) own += order_key(row, i, width) >= t;
        atomicAdd(&total, own);
        __syncthreads();
        const unsigned long long c = total;
        __syncthreads();
        return c;
    };
    uint64_t lo = 0, hi = uint64_t{1} << 32; // count(lo) >= k > count(hi)
    while (hi - lo > 1) {
        const uint64_t mid = (lo + hi) / 2;
        if (count(mid) >= static_cast<unsigned long long>(k)) lo = mid;
        else hi = mid;
    }
    const uint32_t t = static_cast<uint32_t>(lo);
    const unsigned long long ties = k - count(lo + 1); // ties at t to take
    if (threadIdx.x == 0) {
        int n = 0;
        unsigned long long tied = 0;
        for (int64_t i = 0; i < len && n < k; ++i) {
            const uint32_t key = order_key(row, i, width);
            if (key > t || (key == t && tied++ < ties)) {
                o[n] = slot(i);
                if (r) r[n] = static_cast<int32_t>(i);
                ++n;
            }
        }
    }
}

} // namespace mine
