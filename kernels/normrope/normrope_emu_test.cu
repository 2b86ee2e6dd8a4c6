/* normrope_emu_test: runs kd_norm_rope_store (normrope.cu) on the CPU
 * through kernels/emu/host_emu.h and checks it against docs/contracts/norm_rope_store.md.
 *
 * Built and run by scripts/test-kernels-emu (g++ -x c++ -std=c++20
 * -ffp-contract=off). Exit 0 when every check passes, 1 otherwise;
 * --failfast stops after the first failing part (fault builds).
 *
 * Part 1, exact: the kernel's number-format helpers against brute-force
 * encoders written here from the formats' definitions: e4m3fn (OCP OFP8:
 * nearest of the 253 finite codes by exact distance, ties to the even code,
 * saturation past 448, NaN -> 0x7F) over every code, every midpoint and its
 * f32 neighbours, the saturation edges and 2^20 random f32 values; bf16
 * round-to-nearest-even likewise; ue8m0 against 2^ceil(log2 s) via frexp;
 * e2m1 (OCP MX: nearest of the 15 values by exact distance, ties to the
 * even code, saturation past 6) and the FP4 store's ue8m0 byte (frexp,
 * clamped to [1, 254]) over the grid, every midpoint and its f32
 * neighbours and 2^20 random f32 values.
 *
 * Part 2, end to end: tokens through the kernel vs a float64 reference of
 * docs/contracts/norm_rope_store.md written here (direct O(128^2) Hadamard sum, not a butterfly). Bounds:
 * the kernel rounds every f32 operation, about 30 in sequence per output
 * plus 7 butterfly levels; errors stay below 2^-16 of the token's largest
 * output magnitude M, so: BF16 within 1 bf16 ULP of the reference plus
 * 2^-16 M; FP8 plain scale within 2^-16 relative; ue8m0 scale exact unless
 * amax/448 is within 2^-16 of a power of two; codes within one e4m3 step of
 * the reference value re-quantized with the kernel's scale; FP4: per
 * 32-value block the two stages of docs/contracts/norm_rope_store.md
 * ("FP4 keys") in float64, scale byte and codes equal, except blocks
 * where a1/6 lies within 2^-16 M of a power of two or some z/s1 within
 * 2^-16 M / s1 of an e2m1 midpoint (counted, not compared). Every byte
 * outside the written slots keeps its canary. */

#include "../emu/host_emu.h"

#include "normrope.cu"

#include "../emu/contract_test.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace kd_contract_test;

uint8_t ref_e4m3(float q)
{
    if (std::isnan(q)) return 0x7F;
    const uint8_t sign = std::signbit(q) ? 0x80 : 0;
    const double a = std::fabs(static_cast<double>(q));
    if (a > 448.0) return sign | 0x7E;
    int best = 0;
    double bd = std::numeric_limits<double>::infinity();
    for (int c = 0; c <= 0x7E; ++c) {
        const double d = std::fabs(e4m3_value(static_cast<uint8_t>(c)) - a);
        if (d < bd || (d == bd && (c & 1) == 0)) {
            bd = d;
            best = c;
        }
    }
    return static_cast<uint8_t>(sign | best);
}

uint16_t ref_bf16(float f)
{
    const uint32_t u = u_of(f);
    if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
    const uint32_t lo = u >> 16;
    const uint32_t hi = lo + 1; /* next magnitude up; 0x7F80 (inf) past the largest */
    const double a = std::fabs(static_cast<double>(f));
    auto mag = [](uint32_t h) {
        if ((h & 0x7FFF) == 0x7F80) return std::ldexp(1.0, 128);
        float v;
        const uint32_t w = (h & 0x7FFF) << 16;
        std::memcpy(&v, &w, 4);
        return static_cast<double>(v);
    };
    if ((u & 0xFFFF) == 0) return static_cast<uint16_t>(lo);
    const double dl = a - mag(lo), dh = mag(hi) - a;
    if (dl < dh || (dl == dh && (lo & 1) == 0)) return static_cast<uint16_t>(lo);
    return static_cast<uint16_t>(hi);
}

float ref_ue8m0(float s)
{
    int e;
    const double m = std::frexp(static_cast<double>(s), &e); /* s = m 2^e, m in [0.5, 1) */
    return static_cast<float>(m == 0.5 ? s : std::ldexp(1.0, e));
}

/* e2m1 value of a code (OCP MX FP4 E2M1). */
double e2m1_ref_value(uint32_t c)
{
    static const double mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    return (c & 8u) ? -mag[c & 7u] : mag[c & 7u];
}

/* ref_e2m1: the nearest of the 15 values by exact distance, ties to the
 * even code, sign kept; NaN -> 0x7 (the kernel's choice). */
uint32_t ref_e2m1(float q)
{
    if (std::isnan(q)) return 0x7u;
    if (std::fabs(q) > 6.0f) return (std::signbit(q) ? 8u : 0u) | 7u; /* saturation */
    uint32_t best = 0;
    double bd = 1e300;
    for (uint32_t i = 0; i < 8; ++i) {
        const double d = std::fabs(std::fabs(static_cast<double>(q)) - e2m1_ref_value(i));
        if (d < bd || (d == bd && (i & 1u) == 0)) best = i, bd = d;
    }
    return (std::signbit(q) ? 8u : 0u) | best;
}

/* ref_ue8m0_byte: 127 + ceil(log2 s) by frexp, clamped to [1, 254]. */
uint32_t ref_ue8m0_byte(float s)
{
    if (!(s > 0)) return 1;
    if (std::isinf(s) || std::isnan(s)) return 254;
    int e;
    const double m = std::frexp(static_cast<double>(s), &e);
    const int ce = m == 0.5 ? e - 1 : e;
    return static_cast<uint32_t>(std::min(std::max(127 + ce, 1), 254));
}

/* push_lcg_samples appends 2^20 f32 values drawn by a 64-bit LCG from
 * seed s: every odd one any bit pattern, every even one any sign and
 * mantissa with a biased exponent in [exp0, exp0 + span), around a
 * format's range. */
void push_lcg_samples(std::vector<float> &qs, uint64_t s, uint32_t exp0, uint32_t span)
{
    for (int i = 0; i < (1 << 20); ++i) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const uint32_t u = static_cast<uint32_t>(s >> 32);
        qs.push_back(i & 1 ? f_of(u) : f_of((u & 0x807FFFFFu) | ((exp0 + (u >> 23) % span) << 23)));
    }
}

void test_fp4_formats()
{
    std::vector<float> qs;
    const float grid[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
    for (int i = 0; i < 8; ++i) {
        for (float v : {grid[i], i < 7 ? (grid[i] + grid[i + 1]) / 2 : 7.0f}) {
            for (float w : {v, std::nextafter(v, 0.0f), std::nextafter(v, 100.0f)}) {
                qs.push_back(w);
                qs.push_back(-w);
            }
        }
    }
    for (float v : {1e30f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(), 0x1p-126f, 1e-4f})
        qs.push_back(v), qs.push_back(-v);
    push_lcg_samples(qs, 4242, 120, 12);
    int bad = 0;
    for (float q : qs) {
        const uint32_t got = kd_normrope::f32_to_e2m1(q), want = ref_e2m1(q);
        if (got != want && ++bad <= 5) expect(false, "e2m1(%a = 0x%08X) = 0x%X, want 0x%X", q, u_of(q), got, want);
        if (!std::isnan(q) && kd_normrope::e2m1_value(got) != static_cast<float>(e2m1_ref_value(got)) && ++bad <= 5)
            expect(false, "e2m1_value(0x%X) = %g", got, kd_normrope::e2m1_value(got));
        if (q >= 0) {
            const uint32_t bg = kd_normrope::ue8m0_byte(q), bw = ref_ue8m0_byte(q);
            if (bg != bw && ++bad <= 5) expect(false, "ue8m0_byte(%a) = %u, want %u", q, bg, bw);
        }
    }
    if (bad > 5) expect(false, "%d FP4 format mismatches in all", bad);
    std::printf("%s FP4 formats: %zu f32 values through e2m1 and the ue8m0 byte\n", bad ? "FAIL" : "ok  ", qs.size());
}

void test_formats()
{
    std::vector<float> qs;
    for (int c = 0; c < 256; ++c) {
        const double v = e4m3_value(static_cast<uint8_t>(c));
        if ((c & 0x7F) == 0x7F) continue;
        qs.push_back(static_cast<float>(v));
        const double next = (c & 0x7F) < 0x7E ? e4m3_value(static_cast<uint8_t>(c + 1)) : 480.0 * (v < 0 ? -1 : 1);
        const float mid = static_cast<float>((v + next) / 2); /* exact in f32 */
        qs.push_back(mid);
        qs.push_back(std::nextafter(mid, 0.0f));
        qs.push_back(std::nextafter(mid, mid * 2));
    }
    for (float v : {448.0f, 448.00003f, 463.99997f, 464.0f, 465.0f, 1e30f, 0x1p-10f, 0x1p-11f, 0x1.8p-10f,
                    std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min()}) {
        qs.push_back(v);
        qs.push_back(-v);
    }
    qs.push_back(f_of(0x7FC00000u));
    qs.push_back(f_of(0xFFC00000u));
    qs.push_back(f_of(0x7F800001u));
    push_lcg_samples(qs, 99, 110, 30); /* exponents around the e4m3 range, plus some of everything */
    int bad = 0;
    for (float q : qs) {
        const uint8_t got = kd_normrope::f32_to_e4m3fn(q), want = ref_e4m3(q);
        if (got != want && ++bad <= 5) expect(false, "e4m3fn(%a = 0x%08X) = 0x%02X, want 0x%02X", q, u_of(q), got, want);
        const uint16_t bg = kd_normrope::f32_to_bf16(q), bw = ref_bf16(q);
        if (bg != bw && ++bad <= 5) expect(false, "bf16(%a = 0x%08X) = 0x%04X, want 0x%04X", q, u_of(q), bg, bw);
        if (q > 0 && std::isfinite(q) && std::isnormal(q)) {
            const float ug = kd_normrope::ue8m0(q), uw = ref_ue8m0(q);
            if (u_of(ug) != u_of(uw) && ++bad <= 5) expect(false, "ue8m0(%a) = %a, want %a", q, ug, uw);
        }
    }
    if (bad > 5) expect(false, "%d format mismatches in all", bad);
    std::printf("%s formats: %zu f32 values through e4m3fn, bf16 and ue8m0\n", bad ? "FAIL" : "ok  ", qs.size());
}

struct Config {
    std::string name;
    int norm, off, style, had, store, scale_fmt, lg;
};

float bf16_round(double v) /* a bf16 input value near v */
{
    const float f = static_cast<float>(v);
    return f_of(static_cast<uint32_t>(ref_bf16(f)) << 16);
}

/* reference computes docs/contracts/norm_rope_store.md steps 1-3 in float64 for one token. */
void reference(const Config &c, const float *x, const float *w, const float *bias, const float *fr, float eps,
               double z[128])
{
    double y[128];
    if (c.norm == KD_NORM_RMS) {
        double ss = 0;
        for (int i = 0; i < 128; ++i) ss += static_cast<double>(x[i]) * x[i];
        const double r = 1.0 / std::sqrt(ss / 128 + eps);
        for (int i = 0; i < 128; ++i) y[i] = x[i] * r * w[i];
    } else {
        double s = 0;
        for (int i = 0; i < 128; ++i) s += x[i];
        const double mean = s / 128;
        double var = 0;
        for (int i = 0; i < 128; ++i) var += (x[i] - mean) * (x[i] - mean);
        const double r = 1.0 / std::sqrt(var / 128 + eps);
        for (int i = 0; i < 128; ++i) y[i] = (x[i] - mean) * r * w[i] + bias[i];
    }
    double t[128];
    std::copy(y, y + 128, t);
    for (int j = 0; j < 32; ++j) {
        const int ia = c.style == KD_ROPE_INTERLEAVED ? c.off + 2 * j : c.off + j;
        const int ib = c.style == KD_ROPE_INTERLEAVED ? c.off + 2 * j + 1 : c.off + j + 32;
        const double cs = fr[2 * j], sn = fr[2 * j + 1];
        t[ia] = y[ia] * cs - y[ib] * sn;
        t[ib] = y[ia] * sn + y[ib] * cs;
    }
    for (int k = 0; k < 128; ++k) {
        if (!c.had) {
            z[k] = t[k];
            continue;
        }
        double acc = 0;
        for (int j = 0; j < 128; ++j) acc += (__builtin_popcount(j & k) & 1) ? -t[j] : t[j];
        z[k] = acc / std::sqrt(128.0);
    }
}

enum Family { kGauss, kZero, kConst, kOutlier, kExact448, kFloor };

/* check_fp4_block compares one stored FP4 block (32 codes in 16 bytes,
 * scale byte) with the two-stage rule in float64; returns false when the
 * block lies within tol of a stage-1 scale or code boundary (not
 * compared). */
bool check_fp4_block(const char *name, long t, int b, const double *z, const uint8_t *codes, uint8_t scale, double tol)
{
    double a1 = 0;
    for (int k = 0; k < 32; ++k) a1 = std::max(a1, std::fabs(z[k]));
    const double t1 = std::max(a1, 6 * 0x1p-126) / 6;
    int e;
    const double m = std::frexp(t1, &e);
    const double s1 = m == 0.5 ? t1 : std::ldexp(1.0, e);
    if (std::fabs(t1 - s1 / 2) < tol / 6 || std::fabs(t1 - s1) < tol / 6) return false;
    double g[32], a2 = 0;
    for (int k = 0; k < 32; ++k) {
        const double q = z[k] / s1;
        for (double mid : {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0})
            if (std::fabs(std::fabs(q) - mid) < tol / s1) return false;
        g[k] = e2m1_ref_value(ref_e2m1(static_cast<float>(q))) * s1;
        a2 = std::max(a2, std::fabs(g[k]));
    }
    const uint32_t e2 = ref_ue8m0_byte(static_cast<float>(std::max(a2 / 6, static_cast<double>(1e-4f))));
    const double s2 = std::ldexp(1.0, static_cast<int>(e2) - 127);
    expect(scale == e2, "%s: token %ld block %d scale byte %u, reference %u", name, t, b, scale, e2);
    for (int k = 0; k < 32; ++k) {
        uint32_t want = ref_e2m1(static_cast<float>(g[k] / s2));
        if ((want & 7u) == 0) want = 0;
        const uint32_t got = (k & 1) ? codes[k / 2] >> 4 : codes[k / 2] & 0xFu;
        expect(got == want, "%s: token %ld dim %d code 0x%X, reference 0x%X (z/s1 %.9g)", name, t, 32 * b + k, got, want, z[k] / s1);
    }
    return true;
}

void run_config(const Config &c, int64_t n, Family fam, int64_t x_stride, size_t cache_misalign, uint64_t seed)
{
    const int64_t P = int64_t{1} << c.lg;
    const int64_t max_pos = 5000;
    const int64_t num_pages = (n + 3 + P - 1) / P + 1;
    const int64_t page_bytes = c.store == KD_STORE_FP8 ? 132 * P : c.store == KD_STORE_FP4 ? 68 * P : 256 * P;
    uint64_t s = seed;
    auto rnd = [&] {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return s >> 11;
    };
    auto gauss = [&] {
        const double u1 = 1.0 - (rnd() * 0x1.0p-53), u2 = rnd() * 0x1.0p-53;
        return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    };
    std::vector<uint16_t> x(n * x_stride, 0xFFFF);
    std::vector<float> xf(n * 128);
    for (int64_t t = 0; t < n; ++t) {
        for (int i = 0; i < 128; ++i) {
            double v = 0;
            switch (fam) {
            case kGauss: v = gauss(); break;
            case kZero: v = 0; break;
            case kConst: v = 0.75; break;
            case kOutlier: v = i == 17 ? 3000.0 : 0.01 * gauss(); break;
            case kExact448: v = i < 64 ? 2.0 : -2.0; break;
            case kFloor: v = gauss(); break;
            }
            const float b = bf16_round(v);
            xf[t * 128 + i] = b;
            x[t * x_stride + i] = static_cast<uint16_t>(u_of(b) >> 16);
        }
    }
    std::vector<float> w(128), bias(128);
    for (int i = 0; i < 128; ++i) {
        w[i] = fam == kExact448 ? 1.0f : static_cast<float>(0.5 + (rnd() % 1000) / 1000.0);
        if (fam == kFloor) w[i] *= 0x1p-14f; /* FP4: block amax below 6 * 2^-13, the packer's floor */
        bias[i] = fam == kExact448 ? 0.0f : static_cast<float>((static_cast<double>(rnd() % 1000) - 500) / 5000.0);
    }
    std::vector<float> freqs(max_pos * 64);
    for (int64_t p = 0; p < max_pos; ++p)
        for (int j = 0; j < 32; ++j) {
            const double ang = p * std::pow(10000.0, -2.0 * j / 64);
            freqs[p * 64 + 2 * j] = static_cast<float>(std::cos(ang));
            freqs[p * 64 + 2 * j + 1] = static_cast<float>(std::sin(ang));
        }
    std::vector<int64_t> pos(n), loc(n);
    std::vector<int64_t> slots(num_pages * P);
    for (int64_t i = 0; i < num_pages * P; ++i) slots[i] = i;
    for (int64_t i = num_pages * P - 1; i > 0; --i) std::swap(slots[i], slots[rnd() % (i + 1)]);
    for (int64_t t = 0; t < n; ++t) {
        pos[t] = t == 0 ? 0 : t == 1 ? max_pos - 1 : static_cast<int64_t>(rnd() % max_pos);
        loc[t] = (t % 5 == 2) ? -1 : slots[t];
    }
    if (n > 1) loc[n - 1] = slots[n - 1]; /* the tail token is written */
    const uint8_t canary = 0xA5;
    /* Guard bands of two pages on both sides (plus the misalignment in
     * front): a write outside the cache lands in canary bytes. */
    const size_t front = static_cast<size_t>(2 * page_bytes) + cache_misalign;
    std::vector<uint8_t> cache_mem(front + num_pages * page_bytes + 2 * page_bytes, canary);
    uint8_t *cache = cache_mem.data() + front;

    kd_normrope_params p{};
    p.x = x.data();
    p.weight = w.data();
    p.bias = c.norm == KD_NORM_LAYER ? bias.data() : nullptr;
    p.freqs = freqs.data();
    p.positions = pos.data();
    p.out_loc = loc.data();
    p.cache = cache;
    p.x_stride = x_stride;
    p.num_tokens = n;
    p.max_pos = max_pos;
    p.num_pages = num_pages;
    p.eps = 1e-6f;
    p.log2_page = c.lg;
    p.norm = c.norm;
    p.rope_offset = c.off;
    p.rope_style = c.style;
    p.hadamard = c.had;
    p.store = c.store;
    p.scale_fmt = c.scale_fmt;
    const unsigned grid = static_cast<unsigned>((n + KD_NORMROPE_TOKENS_PER_BLOCK - 1) / KD_NORMROPE_TOKENS_PER_BLOCK);
    const int traps = emu::launch(grid, KD_NORMROPE_THREADS, [&] { kd_norm_rope_store(p); });
    const int before = g_failed;
    expect(traps == 0, "%s: %d threads trapped", c.name.c_str(), traps);

    std::vector<char> owned(cache_mem.size(), 0);
    double worst_bf16 = 0, worst_scale = 0;
    int code_steps = 0, fp4_near = 0;
    for (int64_t t = 0; t < n && g_failed == before; ++t) {
        if (loc[t] < 0) continue;
        const int64_t page = loc[t] >> c.lg, off = loc[t] & (P - 1);
        double z[128];
        reference(c, &xf[t * 128], w.data(), bias.data(), &freqs[pos[t] * 64], p.eps, z);
        double m = 0;
        for (double v : z) m = std::max(m, std::fabs(v));
        const double floor_abs = std::ldexp(m, -16);
        if (c.store == KD_STORE_BF16) {
            const int64_t base = page * page_bytes + off * 256;
            for (int k = 0; k < 128; ++k) {
                uint16_t h;
                std::memcpy(&h, cache + base + 2 * k, 2);
                const double got = f_of(static_cast<uint32_t>(h) << 16);
                const double ulp = std::ldexp(1.0, std::ilogb(z[k] == 0 ? 1e-30 : z[k]) - 7);
                const double allowed = ulp + floor_abs;
                worst_bf16 = std::max(worst_bf16, std::fabs(got - z[k]) / allowed);
                expect(std::fabs(got - z[k]) <= allowed, "%s: token %ld dim %d bf16 %.9g, reference %.9g",
                       c.name.c_str(), static_cast<long>(t), k, got, z[k]);
            }
            std::fill(owned.begin() + front + base, owned.begin() + front + base + 256, 1);
            continue;
        }
        if (c.store == KD_STORE_FP4) {
            const int64_t cbase = page * page_bytes + off * 64, sbase = page * page_bytes + 64 * P + off * 4;
            for (int b = 0; b < 4; ++b)
                if (!check_fp4_block(c.name.c_str(), static_cast<long>(t), b, z + 32 * b, cache + cbase + 16 * b, cache[sbase + b], floor_abs))
                    ++fp4_near;
            std::fill(owned.begin() + front + cbase, owned.begin() + front + cbase + 64, 1);
            std::fill(owned.begin() + front + sbase, owned.begin() + front + sbase + 4, 1);
            continue;
        }
        const int64_t cbase = page * page_bytes + off * 128, sbase = page * page_bytes + 128 * P + off * 4;
        float ks;
        std::memcpy(&ks, cache + sbase, 4);
        const double ref_scale = std::max(m, 1e-4) / 448;
        if (c.scale_fmt == KD_SCALE_PLAIN) {
            const double rel = std::fabs(ks - ref_scale) / ref_scale;
            worst_scale = std::max(worst_scale, rel / 0x1p-16);
            expect(rel <= 0x1p-16, "%s: token %ld scale %.9g, reference %.9g", c.name.c_str(),
                   static_cast<long>(t), ks, ref_scale);
        } else {
            const double up = std::ldexp(1.0, static_cast<int>(std::ceil(std::log2(ref_scale))));
            const bool near_pow2 = std::fabs(ref_scale - up / 2) <= up * 0x1p-17 || std::fabs(ref_scale - up) <= up * 0x1p-16;
            expect(ks == up || (near_pow2 && (ks == up * 2 || ks == up / 2)), "%s: token %ld ue8m0 scale %g, reference %g",
                   c.name.c_str(), static_cast<long>(t), ks, up);
        }
        for (int k = 0; k < 128; ++k) {
            const uint8_t got = cache[cbase + k];
            const uint8_t want = ref_e4m3(static_cast<float>(z[k] / ks));
            const int gi = (got & 0x80) ? -(got & 0x7F) : (got & 0x7F);
            const int wi = (want & 0x80) ? -(want & 0x7F) : (want & 0x7F);
            code_steps += gi != wi;
            expect(std::abs(gi - wi) <= 1 || (gi == 0 && wi == 0), "%s: token %ld dim %d code 0x%02X, reference 0x%02X (q %.9g)",
                   c.name.c_str(), static_cast<long>(t), k, got, want, z[k] / ks);
        }
        std::fill(owned.begin() + front + cbase, owned.begin() + front + cbase + 128, 1);
        std::fill(owned.begin() + front + sbase, owned.begin() + front + sbase + 4, 1);
    }
    int64_t touched = 0;
    for (size_t i = 0; i < cache_mem.size(); ++i)
        if (!owned[i] && cache_mem[i] != canary) ++touched;
    expect(touched == 0, "%s: %ld canary bytes overwritten", c.name.c_str(), static_cast<long>(touched));
    if (fam == kExact448 && c.store == KD_STORE_FP8 && !c.had) {
        /* every |z| equal: every code saturates to +-448 */
        for (int64_t t = 0; t < n; ++t) {
            if (loc[t] < 0 || pos[t] != 0) continue; /* position 0: RoPE is the identity */
            const int64_t cbase = (loc[t] >> c.lg) * page_bytes + (loc[t] & (P - 1)) * 128;
            for (int k = 0; k < 128; ++k)
                expect((cache[cbase + k] & 0x7F) == 0x7E, "%s: token %ld dim %d code 0x%02X, want +-448",
                       c.name.c_str(), static_cast<long>(t), k, cache[cbase + k]);
        }
    }
    std::printf("%s %-34s N=%-4ld P=%-3ld stride=%ld misalign=%zu worst bf16 %.3f scale %.3f of bound, %d codes one step off, %d FP4 blocks at a boundary\n",
                g_failed == before ? "ok  " : "FAIL", c.name.c_str(), static_cast<long>(n), static_cast<long>(P),
                static_cast<long>(x_stride), cache_misalign, worst_bf16, worst_scale, code_steps, fp4_near);
}

} /* namespace */

int main(int argc, char **argv)
{
    bool failfast = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--failfast") == 0) {
            failfast = true;
        } else {
            std::fprintf(stderr, "usage: %s [--failfast]\n", argv[0]);
            return 2;
        }
    }
    test_formats();
    test_fp4_formats();
    if (failfast && g_failed) return 1;
    const Config v32{"v32", KD_NORM_LAYER, 0, KD_ROPE_NEOX, 1, KD_STORE_FP8, KD_SCALE_PLAIN, 0};
    const Config v4{"v4", KD_NORM_RMS, 64, KD_ROPE_INTERLEAVED, 1, KD_STORE_FP8, KD_SCALE_PLAIN, 6};
    const Config v4bf{"v4-bf16", KD_NORM_RMS, 64, KD_ROPE_INTERLEAVED, 1, KD_STORE_BF16, KD_SCALE_PLAIN, 6};
    struct Run {
        Config c;
        int64_t n;
        Family fam;
        int64_t stride;
        size_t misalign;
    };
    const std::vector<Run> runs = {
        {v32, 96, kGauss, 128, 0},
        {v4, 9, kGauss, 128, 0},
        {v4bf, 96, kGauss, 128, 0},
        {{"v4-ue8m0", KD_NORM_RMS, 64, KD_ROPE_INTERLEAVED, 1, KD_STORE_FP8, KD_SCALE_UE8M0, 6}, 7, kGauss, 128, 0},
        {{"layer-neox-off64-p1", KD_NORM_LAYER, 64, KD_ROPE_NEOX, 1, KD_STORE_FP8, KD_SCALE_UE8M0, 0}, 8, kGauss, 130, 0},
        {{"rms-interleaved-off0-bf16", KD_NORM_RMS, 0, KD_ROPE_INTERLEAVED, 1, KD_STORE_BF16, KD_SCALE_PLAIN, 0}, 9, kGauss, 131, 1},
        {{"v32-no-hadamard", KD_NORM_LAYER, 0, KD_ROPE_NEOX, 0, KD_STORE_FP8, KD_SCALE_PLAIN, 6}, 9, kGauss, 128, 3},
        {{"v4-no-hadamard-bf16", KD_NORM_RMS, 64, KD_ROPE_INTERLEAVED, 0, KD_STORE_BF16, KD_SCALE_PLAIN, 0}, 1, kGauss, 128, 0},
        {{"v4-zero-token", KD_NORM_RMS, 64, KD_ROPE_INTERLEAVED, 1, KD_STORE_FP8, KD_SCALE_PLAIN, 0}, 8, kZero, 128, 0},
        {{"v32-constant-token", KD_NORM_LAYER, 0, KD_ROPE_NEOX, 1, KD_STORE_FP8, KD_SCALE_UE8M0, 0}, 8, kConst, 128, 0},
        {{"v4-outlier", KD_NORM_RMS, 64, KD_ROPE_INTERLEAVED, 1, KD_STORE_FP8, KD_SCALE_PLAIN, 6}, 9, kOutlier, 128, 0},
        {{"v4-outlier-bf16", KD_NORM_RMS, 64, KD_ROPE_INTERLEAVED, 1, KD_STORE_BF16, KD_SCALE_PLAIN, 6}, 9, kOutlier, 128, 0},
        {{"rms-plain-no-rope-effect-448", KD_NORM_RMS, 64, KD_ROPE_NEOX, 0, KD_STORE_FP8, KD_SCALE_PLAIN, 0}, 3, kExact448, 128, 0},
        {{"v4-fp4", KD_NORM_RMS, 64, KD_ROPE_INTERLEAVED, 0, KD_STORE_FP4, KD_SCALE_UE8M0, 6}, 96, kGauss, 128, 0},
        {{"v4-fp4-p1-misaligned", KD_NORM_RMS, 64, KD_ROPE_INTERLEAVED, 0, KD_STORE_FP4, KD_SCALE_UE8M0, 0}, 9, kGauss, 131, 1},
        {{"layer-neox-had-fp4", KD_NORM_LAYER, 0, KD_ROPE_NEOX, 1, KD_STORE_FP4, KD_SCALE_UE8M0, 2}, 33, kGauss, 128, 0},
        {{"v4-fp4-zero-token", KD_NORM_RMS, 64, KD_ROPE_INTERLEAVED, 0, KD_STORE_FP4, KD_SCALE_UE8M0, 0}, 8, kZero, 128, 0},
        {{"v4-fp4-outlier", KD_NORM_RMS, 64, KD_ROPE_INTERLEAVED, 0, KD_STORE_FP4, KD_SCALE_UE8M0, 6}, 9, kOutlier, 128, 0},
        {{"v4-fp4-amax-floor", KD_NORM_RMS, 64, KD_ROPE_INTERLEAVED, 0, KD_STORE_FP4, KD_SCALE_UE8M0, 6}, 17, kFloor, 128, 0},
    };
    uint64_t seed = 7;
    for (const Run &r : runs) {
        run_config(r.c, r.n, r.fam, r.stride, r.misalign, seed++);
        if (failfast && g_failed) return 1;
    }

    /* Preconditions the kernel enforces with a trap. */
    {
        std::vector<uint16_t> x(128, 0x3F80);
        std::vector<float> w(128, 1.0f), fr(64, 0.0f);
        std::vector<int64_t> pos{1}, loc{0};
        std::vector<uint8_t> cache(132, 0);
        kd_normrope_params p{x.data(), w.data(), nullptr, fr.data(), pos.data(), loc.data(), cache.data(),
                             128, 1, 1, 1, 1e-6f, 0, KD_NORM_RMS, 0, KD_ROPE_NEOX, 1, KD_STORE_FP8, KD_SCALE_PLAIN, KD_STAGES_ALL};
        int traps = emu::launch(1, KD_NORMROPE_THREADS, [&] { kd_norm_rope_store(p); });
        expect(traps > 0, "no trap on position 1 >= max_pos 1");
        std::printf("%s trap on position >= max_pos\n", traps ? "ok  " : "FAIL");
        pos[0] = 0;
        p.norm = KD_NORM_LAYER; /* bias NULL */
        traps = emu::launch(1, KD_NORMROPE_THREADS, [&] { kd_norm_rope_store(p); });
        expect(traps > 0, "no trap on LayerNorm without bias");
        std::printf("%s trap on LayerNorm without bias\n", traps ? "ok  " : "FAIL");
        p.norm = KD_NORM_RMS;
        loc[0] = 1; /* one page of P = 1 */
        traps = emu::launch(1, KD_NORMROPE_THREADS, [&] { kd_norm_rope_store(p); });
        expect(traps > 0, "no trap on out_loc past the cache");
        std::printf("%s trap on out_loc >= num_pages * P\n", traps ? "ok  " : "FAIL");
        /* stages store: the key is x (448, 1, -0.5, 2^-9, 3.125, zeros);
         * RMSNorm, neox RoPE and the Hadamard are skipped. amax 448, scale
         * 1.0; codes e4m3fn(x): 0x7E 0x38 0xB0 0x01, and 0x44 for the
         * midpoint 3.125 (ties to the even code of 3.0). */
        loc[0] = 0;
        p.stages = KD_STAGES_STORE;
        const uint16_t keys[5] = {0x43E0, 0x3F80, 0xBF00, 0x3B00, 0x4048};
        const uint8_t codes[5] = {0x7E, 0x38, 0xB0, 0x01, 0x44};
        std::fill(x.begin(), x.end(), uint16_t{0});
        std::copy(keys, keys + 5, x.begin());
        traps = emu::launch(1, KD_NORMROPE_THREADS, [&] { kd_norm_rope_store(p); });
        int wrong = traps;
        for (int k = 0; k < 128; ++k) wrong += cache[k] != (k < 5 ? codes[k] : 0);
        uint32_t scale_bits;
        std::memcpy(&scale_bits, &cache[128], 4);
        wrong += scale_bits != 0x3F800000u;
        expect(wrong == 0, "stages store: %d traps and wrong bytes (scale bits 0x%08X, codes %02X %02X %02X %02X %02X)", wrong,
               scale_bits, cache[0], cache[1], cache[2], cache[3], cache[4]);
        std::printf("%s stages store: x stored as given\n", wrong ? "FAIL" : "ok  ");
        p.stages = 2;
        traps = emu::launch(1, KD_NORMROPE_THREADS, [&] { kd_norm_rope_store(p); });
        expect(traps > 0, "no trap on stages 2");
        std::printf("%s trap on stages outside KD_STAGES_*\n", traps ? "ok  " : "FAIL");
    }
    std::printf("%s: %d failed\n", g_failed ? "FAIL" : "PASS", g_failed);
    return g_failed ? 1 : 0;
}
