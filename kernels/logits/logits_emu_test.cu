/* logits_emu_test: runs kd_indexer_logits (logits.cu) on the CPU through
 * kernels/emu/host_emu.h and checks it against docs/contracts/indexer_logits.md.
 *
 * Built and run by scripts/test-kernels-emu (g++ -x c++ -std=c++20
 * -ffp-contract=off). Exit 0 when every check passes, 1 otherwise;
 * --failfast stops after the first failing part (fault builds).
 *
 * Part 1, exact: e4m3_to_bf16 against the e4m3fn definition (OCP OFP8:
 * bias 7, subnormals m * 2^-9, 0x7F/0xFF NaN) for all 256 codes.
 *
 * Part 2, end to end: cases drawn here (an LCG; random e4m3 codes with a
 * random f32 scale per slot, random bf16 keys, or random e2m1 codes with
 * four random ue8m0 block scales per slot and per FP4 query head; random
 * page tables; pages padded past their tight size with poison bytes)
 * through the kernel vs a float64 reference of docs/contracts/indexer_logits.md written here, with the
 * bound of kernels/logits/bound.go restated: per head e = γ_130·Σ|q k|,
 * then E = (|s|·(Σ|w|e + γ_(H+2)·Σ|w|(r + e))·(1 + u) + u·|logit|)·(1 +
 * 2^-10) + 2^-140, and for bf16 logits E + 2^-8 (|logit| + E) + 2^-134.
 * Clean rows must hold -inf past L, others their sentinel. Cases: the
 * three stores, P = 64, 32 and 16, H = 1, 5, 7 and 64, lengths 0, 1,
 * P − 1, P, P + 1 and 300, padded pages (FP8 by 4 bytes, FP4 to a multiple
 * of 512), next_n = 3 and 6 with a length per row, bf16 logits, a row of
 * 2049 pages (the grid past 2048 pages), and an FP8 cache beyond 2 GiB
 * whose used pages sit
 * past the 2^31-byte mark (mapped lazily; an offset that wraps below the
 * cache lands in a reserved inaccessible region and is reported, not a
 * crash).
 *
 * Part 3, preconditions: a bad store, a page id past num_pages, a seq_len
 * above the stride, 65 heads, wrong tiles, next_n 0, logits_bf16 2 and a
 * page_stride below the tight page or not a multiple of 4 trap. */

#include "../emu/host_emu.h"

#include "logits.cu"

#include "../emu/contract_test.h"

#include <sys/mman.h>

#include <csignal>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using namespace kd_contract_test;

/* e2m1 value of a code (low nibble; OCP MX: bit 3 sign, magnitudes 0,
 * 0.5, 1, 1.5, 2, 3, 4, 6) times the ue8m0 scale 2^(e - 127); NaN for 0xFF. */
double fp4_value(uint8_t c, uint8_t e)
{
    static const double mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    if (e == 0xFF) return NAN;
    const double v = std::ldexp(mag[c & 7], e - 127);
    return (c & 8) ? -v : v;
}

void test_decode()
{
    for (int c = 0; c < 256; ++c) {
        const uint32_t b = kd_logits::e4m3_to_bf16(static_cast<uint32_t>(c));
        const double got = f_of(b << 16), want = e4m3_value(static_cast<uint8_t>(c));
        if (std::isnan(want)) {
            expect(std::isnan(got) && ((b >> 15) & 1) == ((c >> 7) & 1u), "e4m3 0x%02x: bf16 0x%04x, want NaN of its sign", c, b);
        } else {
            expect(got == want && std::signbit(got) == std::signbit(want), "e4m3 0x%02x: bf16 0x%04x = %g, want %g", c, b, got, want);
        }
    }
    for (int e = 0; e < 256; ++e) {
        for (int c = 0; c < 16; ++c) {
            const uint32_t b = kd_logits::fp4_to_bf16(static_cast<uint32_t>(c), static_cast<uint32_t>(e));
            const double got = f_of(b << 16), want = fp4_value(static_cast<uint8_t>(c), static_cast<uint8_t>(e));
            if (std::isnan(want)) {
                expect(std::isnan(got), "fp4 0x%x scale 0x%02x: bf16 0x%04x, want NaN", c, e, b);
            } else if (std::fabs(want) > 3.4028234663852886e38) {
                expect(std::isinf(got) && std::signbit(got) == std::signbit(want), "fp4 0x%x scale 0x%02x: bf16 0x%04x, want inf", c, e, b);
            } else {
                expect(got == want && std::signbit(got) == std::signbit(want), "fp4 0x%x scale 0x%02x: bf16 0x%04x = %g, want %g", c, e, b, got, want);
            }
        }
    }
}

struct Rng {
    uint64_t s;
    uint32_t next()
    {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<uint32_t>(s >> 33);
    }
    int below(int n) { return static_cast<int>(next() % static_cast<uint32_t>(n)); }
    double uniform() { return (next() + 0.5) / 2147483648.0; }
    double normal() { return std::sqrt(-2 * std::log(uniform())) * std::cos(6.283185307179586 * uniform()); }
};

/* The cache: a mapping whose first `guard` bytes are inaccessible, so a
 * read below the cache faults; the bytes are zero until written. */
struct Cache {
    uint8_t *base = nullptr;
    size_t guard = 0, size = 0;
    void *map = nullptr;
    size_t map_len = 0;
    Cache(size_t n, size_t g) : guard(g), size(n)
    {
        map_len = g + n;
        map = mmap(nullptr, map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (map == MAP_FAILED) {
            std::perror("mmap");
            std::exit(1);
        }
        base = static_cast<uint8_t *>(map) + g;
        if (mprotect(base, n, PROT_READ | PROT_WRITE) != 0) {
            std::perror("mprotect");
            std::exit(1);
        }
    }
    ~Cache() { munmap(map, map_len); }
};

const char *g_case = "";

void on_segv(int)
{
    /* async-signal-safe: write(2) and _exit(2) only */
    const char a[] = "FAIL case ";
    const char b[] = ": the kernel read outside the cache (SIGSEGV: an offset below it, e.g. a 32-bit offset that wrapped)\n";
    ssize_t r = write(1, a, sizeof a - 1);
    r = write(1, g_case, std::strlen(g_case));
    r = write(1, b, sizeof b - 1);
    (void)r;
    _exit(1);
}

struct Config {
    const char *name;
    int store, P, H, clean;
    std::vector<int> lengths; /* per request; row r of next_n sees max(0, L - (next_n - 1 - r)) */
    int64_t num_pages = 0;    /* 0: exactly the pages used */
    int64_t high = 0;         /* first page id of the used pages */
    size_t guard = 1 << 20;
    int64_t pad = 0;          /* page_stride - tight page bytes */
    int next_n = 1;
    int bf16_out = 0;
};

constexpr double kU = 0x1p-24;
double gamma_n(int n) { return n * kU / (1 - n * kU); }

/* run_case draws the case of cfg, runs the kernel and checks it. */
void run_case(const Config &cfg, uint64_t seed)
{
    g_case = cfg.name;
    Rng rng{seed};
    const int B = static_cast<int>(cfg.lengths.size()), H = cfg.H, P = cfg.P, N = cfg.next_n, R = B * N;
    int stride = 1;
    std::vector<int> pages(B);
    int64_t used = 0;
    for (int b = 0; b < B; ++b) {
        stride = std::max(stride, cfg.lengths[b]);
        pages[b] = (cfg.lengths[b] + P - 1) / P;
        used += pages[b];
    }
    const int max_pages = (stride + P - 1) / P;
    const int64_t num_pages = cfg.num_pages ? cfg.num_pages : std::max<int64_t>(used, 1);
    const bool fp8 = cfg.store == KD_LOGITS_STORE_FP8, fp4 = cfg.store == KD_LOGITS_STORE_FP4;
    const int64_t tight = (fp8 ? 132 : (fp4 ? 68 : 256)) * int64_t{P};
    const int64_t page_bytes = tight + cfg.pad;
    Cache cache(static_cast<size_t>(num_pages * page_bytes), cfg.guard);
    /* Page ids: the used pages shuffled over [high, high + used). */
    std::vector<int64_t> ids(used);
    for (int64_t i = 0; i < used; ++i) ids[i] = cfg.high + i;
    for (int64_t i = used - 1; i > 0; --i) std::swap(ids[i], ids[rng.below(static_cast<int>(i + 1))]);
    std::vector<int32_t> table(static_cast<size_t>(B) * max_pages, -1), lens(R);
    int64_t next = 0;
    for (int b = 0; b < B; ++b) {
        for (int r = 0; r < N; ++r) lens[b * N + r] = std::max(0, cfg.lengths[b] - (N - 1 - r));
        for (int j = 0; j < pages[b]; ++j) table[static_cast<size_t>(b) * max_pages + j] = static_cast<int32_t>(ids[next++]);
    }
    /* Keys in every slot of every used page; scales vary per slot (and
     * per block for FP4); the padding holds poison (0x7F: FP8 NaN codes,
     * bf16 NaN pairs, and a huge scale; FP4 codes +6 and scale 2^0). */
    for (int64_t i = 0; i < used; ++i) {
        uint8_t *page = cache.base + ids[i] * page_bytes;
        std::memset(page + tight, 0x7F, static_cast<size_t>(cfg.pad));
        for (int o = 0; o < P; ++o) {
            if (fp8) {
                for (int d = 0; d < 128; ++d) {
                    uint8_t c = static_cast<uint8_t>(rng.next());
                    if ((c & 0x7F) == 0x7F) c ^= 1;
                    page[o * 128 + d] = c;
                }
                const float s = static_cast<float>(std::ldexp(1 + rng.uniform(), -rng.below(12)));
                std::memcpy(page + 128 * P + 4 * o, &s, 4);
            } else if (fp4) {
                for (int d = 0; d < 64; ++d) page[o * 64 + d] = static_cast<uint8_t>(rng.next());
                for (int k = 0; k < 4; ++k) page[64 * P + 4 * o + k] = static_cast<uint8_t>(120 + rng.below(10));
            } else {
                for (int d = 0; d < 128; ++d) {
                    const uint32_t f = u_of(static_cast<float>(rng.normal()));
                    const uint16_t h = static_cast<uint16_t>(f >> 16);
                    std::memcpy(page + o * 256 + 2 * d, &h, 2);
                }
            }
        }
    }
    const size_t qhead = fp8 ? 128 : (fp4 ? 68 : 256);
    std::vector<uint8_t> q(static_cast<size_t>(R) * H * qhead);
    for (size_t i = 0; i < q.size(); ++i) {
        if (fp8) {
            uint8_t c = static_cast<uint8_t>(rng.next());
            if ((c & 0x7F) == 0x7F) c ^= 1;
            q[i] = c;
        } else if (fp4) {
            q[i] = i % 68 < 64 ? static_cast<uint8_t>(rng.next()) : static_cast<uint8_t>(122 + rng.below(8));
        } else if (i % 2 == 0) {
            const uint16_t h = static_cast<uint16_t>(u_of(static_cast<float>(rng.normal())) >> 16);
            std::memcpy(&q[i], &h, 2);
        }
    }
    std::vector<float> w(static_cast<size_t>(R) * H);
    for (float &x : w) x = rng.below(8) == 0 ? 0.0f : static_cast<float>(rng.normal() / std::sqrt(H));
    const uint32_t sentinel = 0x7B7B7B7Bu;
    std::vector<uint32_t> out(static_cast<size_t>(R) * stride, sentinel); /* bf16: the first half used */

    kd_logits_params p{};
    p.q = q.data();
    p.weights = w.data();
    p.cache = cache.base;
    p.seq_lens = lens.data();
    p.page_table = table.data();
    p.logits = out.data();
    p.stride = stride;
    p.max_pages = max_pages;
    p.num_pages = num_pages;
    p.batch = B;
    p.heads = H;
    p.log2_page = __builtin_ctz(static_cast<unsigned>(P));
    p.store = cfg.store;
    p.clean = cfg.clean;
    p.tiles = (stride + KD_LOGITS_TILE - 1) / KD_LOGITS_TILE;
    p.page_stride = page_bytes;
    p.next_n = N;
    p.logits_bf16 = cfg.bf16_out;
    const int traps = emu::launch(static_cast<unsigned>(R * p.tiles), KD_LOGITS_THREADS, [&] { kd_indexer_logits(p); });
    expect(traps == 0, "%s: %d threads trapped", cfg.name, traps);

    auto qv = [&](int row, int h, int d) {
        const size_t head = static_cast<size_t>(row) * H + h;
        if (fp8) return e4m3_value(q[head * 128 + d]);
        if (fp4) {
            const uint8_t *rec = &q[head * 68];
            return fp4_value(static_cast<uint8_t>(rec[d / 2] >> (4 * (d & 1))), rec[64 + d / 32]);
        }
        uint16_t x;
        std::memcpy(&x, &q[2 * (head * 128 + d)], 2);
        return static_cast<double>(f_of(static_cast<uint32_t>(x) << 16));
    };
    const uint16_t *out16 = reinterpret_cast<const uint16_t *>(out.data());
    const uint16_t sentinel16 = 0x7B7B;
    int bad = 0;
    for (int row = 0; row < R; ++row) {
        const int b = row / N;
        for (int s = 0; s < stride; ++s) {
            const size_t at = static_cast<size_t>(row) * stride + s;
            const uint32_t gbits = cfg.bf16_out ? out16[at] : out[at];
            const double got = cfg.bf16_out ? f_of(static_cast<uint32_t>(out16[at]) << 16) : f_of(out[at]);
            if (s >= lens[row]) {
                const uint32_t ninf = cfg.bf16_out ? 0xFF80u : 0xFF800000u, sent = cfg.bf16_out ? sentinel16 : sentinel;
                const bool ok = cfg.clean ? gbits == ninf : gbits == sent;
                if (!ok && bad++ < 3)
                    expect(false, "%s: row %d position %d past L = %d: got 0x%08x, want %s", cfg.name, row, s, lens[row], gbits,
                           cfg.clean ? "-inf" : "untouched");
                continue;
            }
            const int64_t id = table[static_cast<size_t>(b) * max_pages + s / P];
            const uint8_t *page = cache.base + id * page_bytes;
            const int o = s % P;
            double scale = 1, S = 0, carried = 0, mag = 0;
            if (fp8) {
                float sf;
                std::memcpy(&sf, page + 128 * P + 4 * o, 4);
                scale = sf;
            }
            for (int h = 0; h < H; ++h) {
                double d = 0, A = 0;
                for (int k = 0; k < 128; ++k) {
                    double kv;
                    if (fp8) {
                        kv = e4m3_value(page[o * 128 + k]);
                    } else if (fp4) {
                        kv = fp4_value(static_cast<uint8_t>(page[o * 64 + k / 2] >> (4 * (k & 1))), page[64 * P + 4 * o + k / 32]);
                    } else {
                        uint16_t x;
                        std::memcpy(&x, page + o * 256 + 2 * k, 2);
                        kv = f_of(static_cast<uint32_t>(x) << 16);
                    }
                    const double t = qv(row, h, k) * kv;
                    d += t;
                    A += std::fabs(t);
                }
                const double r = d > 0 ? d : 0, e = gamma_n(130) * A + 0x1p-140;
                const double wv = w[static_cast<size_t>(row) * H + h], aw = std::fabs(wv);
                S += wv * r;
                carried += aw * e;
                mag += aw * (r + e);
            }
            const double x = scale * S;
            double E = (std::fabs(scale) * (carried + gamma_n(H + 2) * mag) * (1 + kU) + kU * std::fabs(x) + 0x1p-149) * (1 + 0x1p-10);
            if (cfg.bf16_out) E = E + 0x1p-8 * (std::fabs(x) + E) + 0x1p-134;
            if (!(std::fabs(got - x) <= E) && bad++ < 3)
                expect(false, "%s: row %d position %d: got %.9g, want %.12g ± %.3g", cfg.name, row, s, got, x, E);
        }
    }
    if (bad > 3) expect(false, "%s: %d positions wrong in all", cfg.name, bad);
    std::printf("%s: %s\n", bad ? "FAIL" : "ok  ", cfg.name);
}

void test_traps()
{
    int32_t len = 5, bad_len = 100, table[1] = {0}, bad_table[1] = {7};
    std::vector<uint8_t> cache(132 * 64, 0), q(128, 0x38);
    float w = 1, out[64];
    kd_logits_params p{};
    p.q = q.data();
    p.weights = &w;
    p.cache = cache.data();
    p.seq_lens = &len;
    p.page_table = table;
    p.logits = out;
    p.stride = 64;
    p.max_pages = 1;
    p.num_pages = 1;
    p.batch = 1;
    p.heads = 1;
    p.log2_page = 6;
    p.store = KD_LOGITS_STORE_FP8;
    p.clean = 1;
    p.tiles = 1;
    p.page_stride = 132 * 64;
    p.next_n = 1;
    p.logits_bf16 = 0;
    auto traps = [&](kd_logits_params x) { return emu::launch(1, KD_LOGITS_THREADS, [&] { kd_indexer_logits(x); }); };
    expect(traps(p) == 0, "traps: the valid launch trapped");
    /* expect_trap: the valid launch with one field broken must trap. */
    auto expect_trap = [&](const char *what, auto change) {
        kd_logits_params x = p;
        change(x);
        expect(traps(x) > 0, "traps: %s did not trap", what);
    };
    expect_trap("store 7", [](kd_logits_params &x) { x.store = 7; });
    expect_trap("page id 7 of 1 pages", [&](kd_logits_params &x) { x.page_table = bad_table; });
    expect_trap("seq_len 100 above stride 64", [&](kd_logits_params &x) { x.seq_lens = &bad_len; });
    expect_trap("65 heads", [](kd_logits_params &x) { x.heads = 65; });
    expect_trap("tiles 2 for stride 64", [](kd_logits_params &x) { x.tiles = 2; });
    expect_trap("next_n 0", [](kd_logits_params &x) { x.next_n = 0; });
    expect_trap("logits_bf16 2", [](kd_logits_params &x) { x.logits_bf16 = 2; });
    expect_trap("page_stride below 132P", [](kd_logits_params &x) { x.page_stride = 132 * 64 - 4; });
    expect_trap("page_stride not a multiple of 4", [](kd_logits_params &x) { x.page_stride = 132 * 64 + 2; });
    std::printf("%s: preconditions trap\n", g_failed ? "FAIL" : "ok  ");
}

} /* namespace */

int main(int argc, char **argv)
{
    const bool failfast = argc > 1 && std::strcmp(argv[1], "--failfast") == 0;
    std::signal(SIGSEGV, on_segv);
    auto part = [&](const char *name, auto f) {
        if (failfast && g_failed) return;
        f();
        (void)name;
    };
    part("decode", [] {
        test_decode();
        std::printf("%s: e4m3 -> bf16 decode of all 256 codes, e2m1 x ue8m0 -> bf16 of all 4096 pairs\n", g_failed ? "FAIL" : "ok  ");
    });
    const std::vector<Config> cases = {
        {"fp8 P=64 H=5 clean", KD_LOGITS_STORE_FP8, 64, 5, 1, {0, 1, 63, 64, 65, 300}},
        {"bf16 P=16 H=7 not clean", KD_LOGITS_STORE_BF16, 16, 7, 0, {0, 1, 15, 16, 17, 300}},
        {"fp8 P=64 H=64 clean", KD_LOGITS_STORE_FP8, 64, 64, 1, {130, 1000}},
        {"bf16 P=64 H=1 clean", KD_LOGITS_STORE_BF16, 64, 1, 1, {2, 129}},
        {"fp8 P=64 H=1 2049 pages", KD_LOGITS_STORE_FP8, 64, 1, 1, {2049 * 64 - 5}},
        {"fp4 P=64 H=5 clean page_stride 4608", KD_LOGITS_STORE_FP4, 64, 5, 1, {0, 1, 63, 64, 65, 300}, 0, 0, 1 << 20, 4608 - 68 * 64},
        {"fp4 P=32 H=64 not clean tight", KD_LOGITS_STORE_FP4, 32, 64, 0, {31, 33, 500}},
        {"fp8 P=16 H=7 next_n 3 page_stride +4", KD_LOGITS_STORE_FP8, 16, 7, 1, {1, 2, 17, 200}, 0, 0, 1 << 20, 4, 3},
        {"bf16 P=16 H=4 next_n 6 bf16 logits", KD_LOGITS_STORE_BF16, 16, 4, 1, {5, 300}, 0, 0, 1 << 20, 0, 6, 1},
        {"fp4 P=64 H=8 next_n 2 bf16 logits page_stride 4608", KD_LOGITS_STORE_FP4, 64, 8, 1, {64, 700}, 0, 0, 1 << 20, 4608 - 68 * 64, 2, 1},
        {"fp8 P=64 H=3 bf16 logits not clean", KD_LOGITS_STORE_FP8, 64, 3, 0, {1, 65, 300}, 0, 0, 1 << 20, 0, 1, 1},
        /* 260,000 pages of 8448 bytes (2.2 GB, mapped lazily); the used
         * ones at ids ≥ 255,000, past 2^31 bytes; 2 GiB inaccessible below. */
        {"fp8 P=64 H=2 cache beyond 2 GiB", KD_LOGITS_STORE_FP8, 64, 2, 1, {70, 200}, 260000, 255000, size_t{1} << 31},
    };
    uint64_t seed = 1;
    for (const Config &c : cases) part(c.name, [&] { run_case(c, seed++); });
    part("traps", test_traps);
    if (g_failed) {
        std::printf("logits_emu_test: %d check(s) failed\n", g_failed);
        return 1;
    }
    std::printf("logits_emu_test: all checks passed\n");
    return 0;
}
