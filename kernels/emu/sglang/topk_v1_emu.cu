/* topk_v1_emu: SGLang 0.5.23's DSv4 top-k kernel (sglang/kernels/jit/csrc/
 * deepseek_v4/topk_v1.cuh, its radix select in sgl_kernel/dsa/
 * legacy_radix_topk.cuh), read in place from the pinned wheel and run on
 * the CPU emulator through its own host entry, TopKKernel<kUsePDL>::transform
 * (tvm-ffi TensorViews over DLTensors, its shape checks, its
 * cudaFuncSetAttribute opt-in and cudaLaunchKernelEx launch).
 *
 * The adapter: the topk_transform contract's tensors (kernels/topk/topk.h:
 * scores f32 [B, stride], seq_lens i32 [B], page_table i32 [B, max_pages],
 * page size P, K) become the kernel's arguments (scores, seq_lens,
 * page_table, page_indices i32 [B, K], page_size, raw_indices i32 [B, K]).
 * SGLang's kernel serves every K up to 1024 at run time (topk), so the
 * contract's K = 512 and 1024 map onto it; K = 2048 has no counterpart.
 *
 * Checks, each with an answer worked out here rather than by the kernel's
 * own logic: the contract's tie-aware validity rule (every position above
 * the K-th largest key32 taken, the rest ties, no position twice, slots
 * computed from the page table), the short-row rule (L <= K: 0..L-1 then
 * -1), and whether the order matches the contract's exact order (above the
 * threshold ascending, then ties ascending): reported, not required, as
 * the kernel fills its output through atomics.
 *
 * Built by scripts/sglang-emu with kernels/emu/emu_cxx.py; needs the
 * wheel's include folders, tvm-ffi's (apache-tvm-ffi 0.1.11) headers and
 * library, and adapters/sglang (tvm_view.h) on the include path. The
 * harness runs of the same kernel go through adapters/sglang/topk_v1.cu. Exit 0 when every check passes. */

#include "../host_emu.h"

#include <deepseek_v4/topk_v1.cuh>

#include "tvm_view.h" /* adapters/sglang: DLTensor views over host memory */

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

int failures = 0;

uint32_t key32(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

using kd_sglang::kF32;
using kd_sglang::kI32;
using kd_sglang::View;

struct Case {
    std::string name;
    int64_t B, stride, max_pages, P;
    int K;
    std::vector<int32_t> seq_lens;
    std::vector<float> scores;
    std::vector<int32_t> page_table;
};

void report(const std::string &name, bool ok, const std::string &detail)
{
    std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", name.c_str(), detail.empty() ? "" : ": ", detail.c_str());
    if (!ok) ++failures;
}

template <bool kUsePDL = false>
void run_case(Case &c)
{
    std::vector<int32_t> page(c.B * c.K, 0x7eadbeef), raw(c.B * c.K, 0x7eadbeef);
    View scores(c.scores.data(), kF32, {c.B, c.stride});
    View seq(c.seq_lens.data(), kI32, {c.B});
    View pt(c.page_table.data(), kI32, {c.B, c.max_pages});
    View out(page.data(), kI32, {c.B, c.K});
    View rawv(raw.data(), kI32, {c.B, c.K});
    sglang::TopKKernel<kUsePDL>::transform(&scores.t, &seq.t, &pt.t, &out.t, static_cast<uint32_t>(c.P),
                                         tvm::ffi::Optional<tvm::ffi::TensorView>(tvm::ffi::TensorView(&rawv.t)));
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        report(c.name, false, std::string("launch: ") + cudaGetErrorName(e));
        return;
    }
    int log2p = 0;
    while ((int64_t{1} << log2p) < c.P) ++log2p;
    for (int64_t b = 0; b < c.B; ++b) {
        const int32_t L = c.seq_lens[b];
        const int32_t *r = &raw[b * c.K], *pg = &page[b * c.K];
        const float *row = &c.scores[b * c.stride];
        std::string why;
        bool exact = true;
        auto slot = [&](int32_t pos) {
            return static_cast<int32_t>(int64_t{c.page_table[b * c.max_pages + (pos >> log2p)]} * c.P + (pos & (c.P - 1)));
        };
        if (L <= c.K) {
            for (int j = 0; j < c.K && why.empty(); ++j) {
                const int32_t want = j < L ? j : -1;
                if (r[j] != want || pg[j] != (j < L ? slot(j) : -1))
                    why = "slot " + std::to_string(j) + ": raw " + std::to_string(r[j]) + ", want " + std::to_string(want);
            }
        } else {
            std::vector<uint32_t> keys(L);
            for (int32_t i = 0; i < L; ++i) keys[i] = key32(row[i]);
            std::vector<uint32_t> sorted = keys;
            std::nth_element(sorted.begin(), sorted.begin() + (c.K - 1), sorted.end(), std::greater<uint32_t>());
            const uint32_t T = sorted[c.K - 1];
            int32_t above = 0;
            for (uint32_t k : keys) above += k > T;
            std::set<int32_t> seen;
            int32_t got_above = 0;
            std::vector<int32_t> want_order;
            for (int32_t i = 0; i < L; ++i)
                if (keys[i] > T) want_order.push_back(i);
            for (int32_t i = 0; i < L && static_cast<int>(want_order.size()) < c.K; ++i)
                if (keys[i] == T) want_order.push_back(i);
            for (int j = 0; j < c.K && why.empty(); ++j) {
                const int32_t p = r[j];
                if (p < 0 || p >= L) why = "slot " + std::to_string(j) + ": position " + std::to_string(p) + " outside [0, L)";
                else if (!seen.insert(p).second) why = "position " + std::to_string(p) + " twice";
                else if (keys[p] < T) why = "position " + std::to_string(p) + " below the threshold";
                else if (pg[j] != slot(p)) why = "slot " + std::to_string(j) + ": page index " + std::to_string(pg[j]) + ", want " + std::to_string(slot(p));
                got_above += keys[p] > T;
                exact = exact && p == want_order[j];
            }
            if (why.empty() && got_above != above) why = std::to_string(got_above) + " positions above the threshold, want " + std::to_string(above);
        }
        report(c.name + " row " + std::to_string(b) + " (L=" + std::to_string(L) + ")", why.empty(),
               why.empty() ? (L <= c.K ? "exact" : exact ? "valid, and in the contract's exact order" : "valid; not the contract's exact order (atomics)") : why);
    }
}

std::vector<int32_t> pages(int64_t B, int64_t max_pages)
{
    std::vector<int32_t> t(B * max_pages);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t p = 0; p < max_pages; ++p) t[b * max_pages + p] = static_cast<int32_t>((b * 7919 + p * 13 + 5) % 100003);
    return t;
}

} /* namespace */

int main()
{
    {
        /* Distinct scores (i * 37 mod 1000 of position i, a permutation of
         * 0..999): the top 512 are the values 488..999. Row 1 is short. */
        Case c{"distinct, K=512", 2, 1024, 16, 64, 512, {1000, 300}, {}, {}};
        c.scores.assign(c.B * c.stride, 0.0f);
        for (int64_t b = 0; b < c.B; ++b)
            for (int64_t i = 0; i < c.stride; ++i) c.scores[b * c.stride + i] = static_cast<float>((i * 37) % 1000);
        c.page_table = pages(c.B, c.max_pages);
        run_case(c);
        /* The same through the PDL variant: its launch attribute and its
         * griddepcontrol.wait / launch_dependents (translated PTX). */
        c.name += ", PDL";
        run_case<true>(c);
    }
    {
        /* Ties: 20000 equal scores (more than the kernel's stash of 8192)
         * with 100 larger ones at every 200th position; K = 1024. */
        Case c{"ties beyond the stash, K=1024", 1, 20000, 313, 64, 1024, {20000}, {}, {}};
        c.scores.assign(c.stride, 1.0f);
        for (int64_t i = 0; i < c.stride; i += 200) c.scores[i] = 2.0f;
        c.page_table = pages(c.B, c.max_pages);
        run_case(c);
    }
    {
        /* Mixed signs, a few ties, page size 1. */
        Case c{"signed, P=1, K=1024", 3, 4096, 4096, 1, 1024, {4096, 1025, 1024}, {}, {}};
        c.scores.assign(c.B * c.stride, 0.0f);
        for (int64_t b = 0; b < c.B; ++b)
            for (int64_t i = 0; i < c.stride; ++i) c.scores[b * c.stride + i] = static_cast<float>(((i * 7 + b) % 301) - 150) * 0.25f;
        c.page_table = pages(c.B, c.max_pages);
        run_case(c);
    }
    if (failures) {
        std::printf("FAIL: %d checks failed\n", failures);
        return 1;
    }
    std::printf("PASS: SGLang topk_v1 on the emulator\n");
    return 0;
}
