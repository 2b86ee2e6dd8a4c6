/* topk_emu_test: runs kd_topk_transform_<K> (topk.cu) on the CPU through
 * kernels/emu/host_emu.h and checks every row against docs/contracts/topk_transform.md.
 *
 * Built and run by scripts/test-kernels-emu (g++ -x c++ -std=c++20
 * -ffp-contract=off). Exit 0 when every case passes, 1 otherwise;
 * one line per case. Each row is checked twice: (1) the contract's
 * tie-aware validity rule, independent of the kernel's choices; (2) the
 * exact bytes topk.h documents: positions above the threshold ascending,
 * then the lowest-positioned ties ascending, page slots in 64-bit. Each
 * launch runs twice, with different output poison, and must give the same
 * bytes. Positions past L hold +NaN, which would rank first if read.
 * 16-bit cases (score_dtype bf16, f16) hand the kernel the 16-bit
 * patterns and check it against key32 of their exact widening, computed
 * here independently of topk.cu (widen16): the Key16 order of
 * docs/contracts/topk_transform.md, "16-bit scores".
 * Flags: --big adds rows of 65537 and 262144 positions; --failfast stops at the first failing case (fault builds). */

#include "../emu/host_emu.h"

#include "topk.cu"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace {

/* SplitMix64 (Steele, Lea, Flood 2014), for test data only. */
struct Rng {
    uint64_t s;
    uint64_t next()
    {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double uniform() { return (next() >> 11) * 0x1.0p-53; }
    double normal()
    {
        const double u1 = 1.0 - uniform(), u2 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }
};

uint32_t bits_of(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float float_of(uint32_t u)
{
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
/* key32 written out from docs/contracts/topk_transform.md, independently of topk.cu. */
uint32_t ref_key(float f)
{
    const uint32_t b = bits_of(f);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

struct Row {
    std::vector<float> x; /* length L; for 16-bit cases the exact widening of h */
    std::vector<int32_t> pages;
    std::vector<uint16_t> h; /* 16-bit cases: the scores as the kernel reads them */
};

struct Case {
    std::string name;
    int k;
    int log2_page;
    bool raw;
    std::vector<Row> rows;
    int dtype = KD_TOPK_SCORES_F32;
};

/* widen16 returns the exact value of bf16 or f16 bits as a float: bf16
 * is the top half of binary32; f16 is computed with ldexp from its fields
 * (inf and NaN by bits, keeping sign and payload). */
float widen16(int dtype, uint16_t h)
{
    if (dtype == KD_TOPK_SCORES_BF16) return float_of(static_cast<uint32_t>(h) << 16);
    const uint32_t sign = h >> 15, exp = (h >> 10) & 0x1Fu, frac = h & 0x3FFu;
    if (exp == 0x1Fu) return float_of(sign << 31 | 0x7F800000u | frac << 13);
    const double mag = exp ? std::ldexp(1024.0 + frac, static_cast<int>(exp) - 25) : std::ldexp(static_cast<double>(frac), -24);
    return static_cast<float>(sign ? -mag : mag);
}

int64_t slot(const std::vector<int32_t> &pages, int64_t i, int lg)
{
    return static_cast<int64_t>(pages[i >> lg]) * (int64_t{1} << lg) + (i & ((int64_t{1} << lg) - 1));
}

/* check_valid applies the contract's validity rule (docs/contracts/topk_transform.md). */
std::string check_valid(const Row &r, int k, int lg, const int32_t *page, const int32_t *raw)
{
    const int64_t L = static_cast<int64_t>(r.x.size());
    char buf[256];
    if (L <= k) {
        for (int j = 0; j < k; ++j) {
            const int32_t want_raw = j < L ? j : -1;
            const int32_t want_page = j < L ? static_cast<int32_t>(slot(r.pages, j, lg)) : -1;
            if ((raw && raw[j] != want_raw) || page[j] != want_page) {
                std::snprintf(buf, sizeof buf, "short row: slot %d got raw %d page %d, want %d %d", j,
                              raw ? raw[j] : 0, page[j], want_raw, want_page);
                return buf;
            }
        }
        return "";
    }
    if (!raw) return ""; /* the exact-bytes check covers page-only output */
    std::vector<char> seen(L, 0);
    std::vector<uint32_t> chosen;
    for (int j = 0; j < k; ++j) {
        if (raw[j] < 0 || raw[j] >= L) {
            std::snprintf(buf, sizeof buf, "raw[%d] = %d outside [0, %" PRId64 ")", j, raw[j], L);
            return buf;
        }
        if (seen[raw[j]]++) {
            std::snprintf(buf, sizeof buf, "raw[%d] = %d repeated", j, raw[j]);
            return buf;
        }
        if (page[j] != slot(r.pages, raw[j], lg)) {
            std::snprintf(buf, sizeof buf, "page[%d] = %d, slot(%d) = %" PRId64, j, page[j], raw[j],
                          slot(r.pages, raw[j], lg));
            return buf;
        }
        chosen.push_back(ref_key(r.x[raw[j]]));
    }
    std::vector<uint32_t> keys(L);
    for (int64_t i = 0; i < L; ++i) keys[i] = ref_key(r.x[i]);
    std::vector<uint32_t> sorted = keys;
    std::sort(sorted.begin(), sorted.end(), std::greater<uint32_t>());
    const uint32_t kth = sorted[k - 1];
    for (int64_t i = 0; i < L; ++i) {
        if (keys[i] > kth && !seen[i]) {
            std::snprintf(buf, sizeof buf, "position %" PRId64 " ranks above the K-th and is missing", i);
            return buf;
        }
    }
    std::sort(chosen.begin(), chosen.end(), std::greater<uint32_t>());
    for (int j = 0; j < k; ++j) {
        if (chosen[j] != sorted[j]) {
            std::snprintf(buf, sizeof buf, "sorted chosen key %d is 0x%08X, want 0x%08X", j, chosen[j], sorted[j]);
            return buf;
        }
    }
    return "";
}

/* check_exact compares with the order topk.h documents. */
std::string check_exact(const Row &r, int k, int lg, const int32_t *page, const int32_t *raw)
{
    const int64_t L = static_cast<int64_t>(r.x.size());
    if (L <= k) return "";
    std::vector<uint32_t> keys(L);
    for (int64_t i = 0; i < L; ++i) keys[i] = ref_key(r.x[i]);
    std::vector<uint32_t> sorted = keys;
    std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(), std::greater<uint32_t>());
    const uint32_t t = sorted[k - 1];
    std::vector<int64_t> want;
    for (int64_t i = 0; i < L; ++i)
        if (keys[i] > t) want.push_back(i);
    for (int64_t i = 0; i < L && static_cast<int>(want.size()) < k; ++i)
        if (keys[i] == t) want.push_back(i);
    char buf[200];
    for (int j = 0; j < k; ++j) {
        const int32_t wp = static_cast<int32_t>(slot(r.pages, want[j], lg));
        if ((raw && raw[j] != want[j]) || page[j] != wp) {
            std::snprintf(buf, sizeof buf, "slot %d: got raw %d page %d, want raw %" PRId64 " page %d", j,
                          raw ? raw[j] : 0, page[j], want[j], wp);
            return buf;
        }
    }
    return "";
}

template <int K>
void launch_k(const kd_topk_params &p, int *traps)
{
    *traps = emu::launch(p.batch, KD_TOPK_THREADS, [&] {
        if constexpr (K == 512) kd_topk_transform_512(p);
        if constexpr (K == 1024) kd_topk_transform_1024(p);
        if constexpr (K == 2048) kd_topk_transform_2048(p);
    });
}

void launch(const kd_topk_params &p, int *traps)
{
    switch (p.k) {
    case 512: launch_k<512>(p, traps); break;
    case 1024: launch_k<1024>(p, traps); break;
    default: launch_k<2048>(p, traps); break;
    }
}

/* run_case launches the case twice and checks both results. */
bool run_case(const Case &c)
{
    const int B = static_cast<int>(c.rows.size());
    int64_t stride = 1, max_pages = 1;
    for (const Row &r : c.rows) {
        stride = std::max<int64_t>(stride, static_cast<int64_t>(r.x.size()) + 3);
        max_pages = std::max<int64_t>(max_pages, static_cast<int64_t>(r.pages.size()));
    }
    std::vector<float> scores(B * stride, float_of(0x7FC00000u)); /* +NaN past L */
    const uint16_t nan16 = c.dtype == KD_TOPK_SCORES_F16 ? 0x7E00u : 0x7FC0u;
    std::vector<uint16_t> scores16(c.dtype == KD_TOPK_SCORES_F32 ? 0 : B * stride, nan16); /* +NaN past L */
    std::vector<int32_t> lens(B), table(B * max_pages, 0x7FFFFFFF);
    for (int b = 0; b < B; ++b) {
        if (c.dtype == KD_TOPK_SCORES_F32)
            std::copy(c.rows[b].x.begin(), c.rows[b].x.end(), scores.begin() + b * stride);
        else
            std::copy(c.rows[b].h.begin(), c.rows[b].h.end(), scores16.begin() + b * stride);
        std::copy(c.rows[b].pages.begin(), c.rows[b].pages.end(), table.begin() + b * max_pages);
        lens[b] = static_cast<int32_t>(c.rows[b].x.size());
    }
    std::vector<int32_t> out[2][2];
    for (int run = 0; run < 2; ++run) {
        const int32_t poison = run == 0 ? 0x5A5A5A5A : -0x2B2B2B2B;
        out[run][0].assign(B * c.k, poison);
        out[run][1].assign(B * c.k, poison);
        kd_topk_params p{};
        p.scores = c.dtype == KD_TOPK_SCORES_F32 ? static_cast<const void *>(scores.data()) : scores16.data();
        p.score_dtype = c.dtype;
        p.seq_lens = lens.data();
        p.page_table = table.data();
        p.page_indices = out[run][0].data();
        p.raw_indices = c.raw ? out[run][1].data() : nullptr;
        p.stride = stride;
        p.max_pages = max_pages;
        p.batch = B;
        p.log2_page = c.log2_page;
        p.k = c.k;
        int traps = 0;
        launch(p, &traps);
        if (traps) {
            std::printf("FAIL %-28s %d threads trapped\n", c.name.c_str(), traps);
            return false;
        }
    }
    if (out[0][0] != out[1][0] || (c.raw && out[0][1] != out[1][1])) {
        std::printf("FAIL %-28s two runs differ\n", c.name.c_str());
        return false;
    }
    for (int b = 0; b < B; ++b) {
        const int32_t *page = out[0][0].data() + b * c.k;
        const int32_t *raw = c.raw ? out[0][1].data() + b * c.k : nullptr;
        std::string why = check_valid(c.rows[b], c.k, c.log2_page, page, raw);
        if (why.empty()) why = check_exact(c.rows[b], c.k, c.log2_page, page, raw);
        if (!why.empty()) {
            std::printf("FAIL %-28s row %d (L=%zu): %s\n", c.name.c_str(), b, c.rows[b].x.size(), why.c_str());
            return false;
        }
    }
    std::printf("ok   %-28s B=%d K=%d P=%d\n", c.name.c_str(), B, c.k, 1 << c.log2_page);
    return true;
}

enum PageKind { kIdentity, kPermutation, kDistinctPerRow, kLargeIds };

Row make_row(Rng &g, int64_t L, int lg, PageKind pk, int row_index, float (*value)(Rng &, int64_t, int64_t))
{
    Row r;
    r.x.resize(L);
    for (int64_t i = 0; i < L; ++i) r.x[i] = value(g, i, L);
    const int64_t np = (L + (int64_t{1} << lg) - 1) >> lg;
    r.pages.resize(std::max<int64_t>(np, 1));
    for (int64_t i = 0; i < static_cast<int64_t>(r.pages.size()); ++i) {
        switch (pk) {
        case kIdentity: r.pages[i] = static_cast<int32_t>(i); break;
        case kPermutation: r.pages[i] = static_cast<int32_t>(i); break;
        case kDistinctPerRow: r.pages[i] = static_cast<int32_t>(row_index * np + i); break;
        case kLargeIds: r.pages[i] = static_cast<int32_t>(((int64_t{1} << 31) - 1 - i * 3) >> lg); break;
        }
    }
    if (pk == kPermutation)
        for (int64_t i = static_cast<int64_t>(r.pages.size()) - 1; i > 0; --i)
            std::swap(r.pages[i], r.pages[g.next() % (i + 1)]);
    return r;
}

/* 16-bit patterns (the row's sign is drawn by the caller for h_one_exp). */
uint16_t h_uniform(Rng &g, int, int64_t) { return static_cast<uint16_t>(g.next()); } /* NaNs, infs, subnormals of both signs */
uint16_t h_gauss(Rng &g, int dtype, int64_t)
{
    if (dtype == KD_TOPK_SCORES_BF16) return static_cast<uint16_t>(bits_of(static_cast<float>(g.normal())) >> 16);
    const uint64_t u = g.next(); /* sign, exponent 10..18, mantissa: |x| in [2^-5, 2^4) */
    return static_cast<uint16_t>((u & 1) << 15 | (10 + (u >> 8) % 9) << 10 | ((u >> 20) & 0x3FF));
}
uint16_t h_one_exp(Rng &g, int dtype, int64_t)
{
    return dtype == KD_TOPK_SCORES_BF16 ? static_cast<uint16_t>(0x3F80u | (g.next() & 0x7Fu))
                                        : static_cast<uint16_t>(0x3C00u | (g.next() & 0x3FFu));
}
uint16_t h_tiny(Rng &g, int dtype, int64_t) /* ±0 and subnormals only: the K-th among them */
{
    return static_cast<uint16_t>(g.next() & (dtype == KD_TOPK_SCORES_BF16 ? 0x807Fu : 0x83FFu));
}
uint16_t h_ties(Rng &g, int, int64_t) { return static_cast<uint16_t>(0x3FFEu + g.next() % 5); } /* around 0x4000 */

/* make_row16 is make_row for a 16-bit row: h from value, x its widening;
 * negate flips every sign bit. */
Row make_row16(Rng &g, int dtype, int64_t L, int lg, int row_index, bool negate,
               uint16_t (*value)(Rng &, int, int64_t))
{
    Row r;
    r.h.resize(L);
    r.x.resize(L);
    for (int64_t i = 0; i < L; ++i) {
        r.h[i] = static_cast<uint16_t>(value(g, dtype, i) ^ (negate ? 0x8000u : 0u));
        r.x[i] = widen16(dtype, r.h[i]);
    }
    const int64_t np = (L + (int64_t{1} << lg) - 1) >> lg;
    r.pages.resize(std::max<int64_t>(np, 1));
    for (int64_t i = 0; i < static_cast<int64_t>(r.pages.size()); ++i)
        r.pages[i] = static_cast<int32_t>(row_index * std::max<int64_t>(np, 1) + i);
    return r;
}

float v_gauss(Rng &g, int64_t, int64_t) { return static_cast<float>(g.normal()); }
float v_needle(Rng &g, int64_t i, int64_t L) { return i == L / 3 ? 100.0f : static_cast<float>(g.normal()); }
float v_equal(Rng &, int64_t, int64_t) { return 1.5f; }
float v_small_ints(Rng &g, int64_t, int64_t) { return static_cast<float>(g.next() % 10); }
float v_relu(Rng &g, int64_t i, int64_t) { return i % 83 == 5 ? static_cast<float>(1.0 + g.uniform()) : 0.0f; }
float v_low_contrast(Rng &, int64_t i, int64_t L)
{
    return 1.0f + 0.25f * static_cast<float>(static_cast<double>(i * 7919 % L) / static_cast<double>(L));
}
float v_near_f16_max(Rng &, int64_t i, int64_t L)
{
    return 65520.0f + 16.0f * static_cast<float>(static_cast<double>(i * 104729 % L) / static_cast<double>(L));
}
float v_tiny(Rng &g, int64_t, int64_t) { return static_cast<float>(1.5e-5 * g.uniform()); }
float v_neg_inf_masked(Rng &g, int64_t i, int64_t)
{
    return i % 7 == 3 ? static_cast<float>(g.normal()) : -std::numeric_limits<float>::infinity();
}
float v_specials(Rng &g, int64_t, int64_t)
{
    static const uint32_t pats[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007FFFFFu,
                                    0x807FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u,
                                    0x7F800001u, 0xFFFFFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu};
    const uint64_t u = g.next();
    if (u % 3 == 0) return float_of(pats[(u >> 8) % (sizeof pats / sizeof pats[0])]);
    return static_cast<float>(g.normal());
}

} /* namespace */

int main(int argc, char **argv)
{
    bool big = false, failfast = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--big") == 0) {
            big = true;
        } else if (std::strcmp(argv[i], "--failfast") == 0) {
            failfast = true;
        } else {
            std::fprintf(stderr, "usage: %s [--big] [--failfast]\n", argv[0]);
            return 2;
        }
    }
    Rng g{12345};
    std::vector<Case> cases;
    auto add = [&](std::string name, int k, int lg, bool raw, PageKind pk, std::vector<int64_t> lens,
                   float (*value)(Rng &, int64_t, int64_t)) {
        Case c{name, k, lg, raw, {}};
        for (size_t b = 0; b < lens.size(); ++b) c.rows.push_back(make_row(g, lens[b], lg, pk, static_cast<int>(b), value));
        cases.push_back(std::move(c));
    };
    /* lengths around K, P and the short-row boundary, mixed in one launch */
    add("gauss_lengths_k512", 512, 0, true, kIdentity, {0, 1, 511, 512, 513, 1024, 3000}, v_gauss);
    add("gauss_lengths_k1024_p64", 1024, 6, true, kPermutation, {1023, 1024, 1025, 2048, 63, 64, 65}, v_gauss);
    add("gauss_k2048_p2_large_ids", 2048, 1, true, kLargeIds, {2047, 2049, 8193}, v_gauss);
    add("needle_22000", 2048, 6, true, kPermutation, {22000}, v_needle);
    /* exact ties */
    add("all_equal_p256", 512, 8, true, kDistinctPerRow, {5000, 513}, v_equal);
    add("ties_straddle_kth", 512, 0, true, kPermutation, {3000, 1000}, v_small_ints);
    add("relu_8320_k2048", 2048, 1, true, kIdentity, {8320}, v_relu);
    /* low contrast: the threshold bin overflows the candidate buffer */
    add("low_contrast_16384", 2048, 6, true, kPermutation, {16384}, v_low_contrast);
    add("near_f16_max_9000", 1024, 0, true, kIdentity, {9000}, v_near_f16_max);
    add("tiny_below_1p5e-5", 512, 0, true, kIdentity, {12000}, v_tiny);
    /* special values */
    add("neg_inf_masked", 512, 2, true, kPermutation, {2000}, v_neg_inf_masked);
    add("specials", 512, 0, true, kIdentity, {1500, 700}, v_specials);
    add("page_indices_only", 1024, 6, false, kPermutation, {5000, 100}, v_gauss);
    /* 16-bit scores, pages of 8, rows up to 16384 */
    auto add16 = [&](std::string name, int k, int dtype, std::vector<int64_t> lens,
                     uint16_t (*value)(Rng &, int, int64_t)) {
        Case c{name, k, 3, true, {}, dtype};
        for (size_t b = 0; b < lens.size(); ++b)
            c.rows.push_back(make_row16(g, dtype, lens[b], 3, static_cast<int>(b), b % 2 == 1, value));
        cases.push_back(std::move(c));
    };
    for (int dt : {KD_TOPK_SCORES_BF16, KD_TOPK_SCORES_F16}) {
        const std::string f = dt == KD_TOPK_SCORES_BF16 ? "bf16_" : "f16_";
        add16(f + "gauss_lengths_k512", 512, dt, {0, 1, 7, 8, 9, 511, 512, 513, 3000, 16384}, h_gauss);
        add16(f + "uniform_bits_k1024", 1024, dt, {16384, 5000, 1025}, h_uniform);
        add16(f + "one_exp_k2048", 2048, dt, {16384, 16384, 4000}, h_one_exp);
        add16(f + "ties_k512", 512, dt, {16384, 700}, h_ties);
        add16(f + "subnormals_k512", 512, dt, {16384, 3000}, h_tiny);
    }
    if (big) {
        add("length_65537", 2048, 0, true, kIdentity, {65537}, v_gauss);
        add("length_262144", 2048, 6, true, kPermutation, {262144}, v_gauss);
    }

    int failed = 0;
    for (const Case &c : cases) {
        if (!run_case(c)) {
            ++failed;
            if (failfast) break;
        }
    }
    if (failfast && failed) {
        std::printf("FAIL: stopped at the first failure\n");
        return 1;
    }

    /* Preconditions the kernel enforces with a trap. */
    {
        std::vector<float> s(8, 1.0f);
        std::vector<int32_t> lens{9}, table{0, 1, 2, 3, 4, 5, 6, 7, 8}, page(512), raw(512);
        kd_topk_params p{s.data(), lens.data(), table.data(), page.data(), raw.data(), 8, 9, 1, 0, 512, KD_TOPK_SCORES_F32};
        int traps = 0;
        launch(p, &traps); /* seq_len 9 > stride 8 */
        std::printf("%s trap on seq_len > stride (%d threads)\n", traps ? "ok  " : "FAIL", traps);
        failed += traps == 0;
        lens[0] = 4;
        p.k = 1024; /* entry K = 512 */
        traps = 0;
        launch_k<512>(p, &traps);
        std::printf("%s trap on k != K (%d threads)\n", traps ? "ok  " : "FAIL", traps);
        failed += traps == 0;
        p.k = 512;
        p.score_dtype = 3; /* unknown dtype */
        traps = 0;
        launch_k<512>(p, &traps);
        std::printf("%s trap on score_dtype 3 (%d threads)\n", traps ? "ok  " : "FAIL", traps);
        failed += traps == 0;
    }
    std::printf("%s: %d failed\n", failed ? "FAIL" : "PASS", failed);
    return failed ? 1 : 0;
}
