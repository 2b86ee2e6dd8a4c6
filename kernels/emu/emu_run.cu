/* emu_run: runs one launch of a kernel of kernels/kernels.cu on the CPU
 * (host_emu.h) from raw little-endian tensor files, for
 * kernels/emu/exec_emu.py, which speaks the harness's exec protocol
 * (docs/interfaces.md) so that `difftest run --impl exec:...` checks the CUDA
 * source itself, without a GPU.
 *
 * Usage: emu_run topk DIR | emu_run normrope DIR | emu_run logits DIR
 * DIR holds params.txt ("name value" lines, integers except eps) and one
 * NAME.bin per tensor of the contract (docs/contracts/topk_transform.md and docs/contracts/norm_rope_store.md):
 *   topk:     in scores, seq_lens, page_table; out page_indices,
 *             raw_indices (when return_raw is 1)
 *   normrope: in x, weight, bias, freqs, positions, out_loc, cache;
 *             out cache (rewritten in place)
 *   logits:   in q, weights, cache, seq_lens, page_table; out logits (f32,
 *             or bf16 with logits_bf16; params page_stride, next_n)
 *             (positions the kernel leaves alone keep 0x7B7B7B7B)
 * Exit 0 on success; 1 with a message on a bad file or a trapped launch.
 *
 * Built with -DKD_EMU_ADAPTER and linked with a bring-your-own adapter
 * (kernels/kd_adapter.h), the topk and normrope runs call the adapter's
 * kd_adapter_topk_transform / kd_adapter_norm_rope_store with the same
 * struct instead of this project's kernels (scripts/sglang-emu: the
 * SGLang adapters of adapters/sglang through the exec protocol); a
 * declined configuration (KD_ADAPTER_UNSUPPORTED) exits 125, which the
 * exec protocol reports as not tested, and any other non-zero return is
 * an error naming it. */

#include "host_emu.h"

#include "../kernels.cu"

#ifdef KD_EMU_ADAPTER
#include <kd_adapter.h> /* kernels/, on the include path */
/* An adapter defines the functions of the kernels it implements; the
 * others resolve to null, and their cases are not tested. */
#pragma weak kd_adapter_topk_transform
#pragma weak kd_adapter_norm_rope_store
#endif

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

std::string g_dir;

[[noreturn]] void die(const std::string &msg)
{
    std::fprintf(stderr, "emu_run: %s\n", msg.c_str());
    std::exit(1);
}

template <class T>
std::vector<T> load(const std::string &name)
{
    const std::string path = g_dir + "/" + name + ".bin";
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) die("cannot open " + path);
    std::fseek(f, 0, SEEK_END);
    const long n = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    if (n < 0 || n % static_cast<long>(sizeof(T)) != 0) die(path + ": size not a multiple of the element size");
    std::vector<T> v(static_cast<size_t>(n) / sizeof(T) + 1); /* +1: never empty */
    if (n > 0 && std::fread(v.data(), 1, static_cast<size_t>(n), f) != static_cast<size_t>(n)) die("short read of " + path);
    std::fclose(f);
    v.resize(static_cast<size_t>(n) / sizeof(T));
    return v;
}

template <class T>
void save(const std::string &name, const std::vector<T> &v)
{
    const std::string path = g_dir + "/" + name + ".bin";
    FILE *f = std::fopen(path.c_str(), "wb");
    if (!f) die("cannot create " + path);
    if (!v.empty() && std::fwrite(v.data(), sizeof(T), v.size(), f) != v.size()) die("short write of " + path);
    std::fclose(f);
}

std::map<std::string, std::string> params()
{
    std::map<std::string, std::string> m;
    FILE *f = std::fopen((g_dir + "/params.txt").c_str(), "r");
    if (!f) die("cannot open params.txt");
    char k[64], v[64];
    while (std::fscanf(f, "%63s %63s", k, v) == 2) m[k] = v;
    std::fclose(f);
    return m;
}

#ifdef KD_EMU_ADAPTER
/* adapter_done handles an adapter's return: 0 goes on, a decline exits
 * 125, an error exits 1 naming it. */
void adapter_done(const char *fn, int rc);

template <class P>
void adapter_call(const char *fn, int (*adapter)(const P *, cudaStream_t), const P &p)
{
    if (adapter == nullptr) {
        std::fprintf(stderr, "emu_run: the adapter does not define %s\n", fn);
        std::exit(125);
    }
    adapter_done(fn, adapter(&p, nullptr));
}

void adapter_done(const char *fn, int rc)
{
    if (rc == KD_ADAPTER_UNSUPPORTED) {
        std::fprintf(stderr, "emu_run: %s declines this configuration (KD_ADAPTER_UNSUPPORTED)\n", fn);
        std::exit(125);
    }
    if (rc != 0) die(std::string(fn) + " returned " + std::to_string(rc) + " (" + cudaGetErrorName(static_cast<cudaError_t>(rc)) + ")");
}
#endif

long long geti(std::map<std::string, std::string> &m, const char *k)
{
    auto it = m.find(k);
    if (it == m.end()) die(std::string("params.txt lacks ") + k);
    return std::stoll(it->second);
}

int run_topk()
{
    auto m = params();
    /* scores as bytes: f32, bf16 or f16 per score_dtype (KD_TOPK_SCORES_*) */
    std::vector<unsigned char> scores = load<unsigned char>("scores");
    std::vector<int32_t> lens = load<int32_t>("seq_lens"), table = load<int32_t>("page_table");
    const int k = static_cast<int>(geti(m, "K"));
    const int batch = static_cast<int>(geti(m, "batch"));
    const bool raw = geti(m, "return_raw") != 0;
    std::vector<int32_t> page(static_cast<size_t>(batch) * k, 0x7B7B7B7B), rawv(page.size(), 0x7B7B7B7B);
    kd_topk_params p{};
    p.scores = scores.data();
    p.seq_lens = lens.data();
    p.page_table = table.data();
    p.page_indices = page.data();
    p.raw_indices = raw ? rawv.data() : nullptr;
    p.stride = geti(m, "stride");
    p.max_pages = geti(m, "max_pages");
    p.batch = batch;
    p.log2_page = static_cast<int>(geti(m, "log2_page"));
    p.k = k;
    p.score_dtype = static_cast<int32_t>(geti(m, "score_dtype"));
    if (batch == 0) {
        save("page_indices", page);
        if (raw) save("raw_indices", rawv);
        return 0;
    }
#ifdef KD_EMU_ADAPTER
    adapter_call("kd_adapter_topk_transform", kd_adapter_topk_transform, p);
    save("page_indices", page);
    if (raw) save("raw_indices", rawv);
    return 0;
#endif
    int traps = 0;
    switch (k) {
    case 512: traps = emu::launch(batch, KD_TOPK_THREADS, [&] { kd_topk_transform_512(p); }); break;
    case 1024: traps = emu::launch(batch, KD_TOPK_THREADS, [&] { kd_topk_transform_1024(p); }); break;
    case 2048: traps = emu::launch(batch, KD_TOPK_THREADS, [&] { kd_topk_transform_2048(p); }); break;
    default: die("K must be 512, 1024 or 2048 (the instantiated entry points), got " + std::to_string(k));
    }
    if (traps) die(std::to_string(traps) + " threads trapped");
    save("page_indices", page);
    if (raw) save("raw_indices", rawv);
    return 0;
}

int run_normrope()
{
    auto m = params();
    std::vector<uint16_t> x = load<uint16_t>("x");
    std::vector<float> w = load<float>("weight"), b = load<float>("bias"), fr = load<float>("freqs");
    std::vector<int64_t> pos = load<int64_t>("positions"), loc = load<int64_t>("out_loc");
    std::vector<uint8_t> cache = load<uint8_t>("cache");
    kd_normrope_params p{};
    p.x = x.data();
    p.weight = w.data();
    p.bias = b.empty() ? nullptr : b.data();
    p.freqs = fr.data();
    p.positions = pos.data();
    p.out_loc = loc.data();
    p.cache = cache.data();
    p.x_stride = geti(m, "x_stride");
    p.num_tokens = geti(m, "num_tokens");
    p.max_pos = geti(m, "max_pos");
    p.num_pages = geti(m, "num_pages");
    p.eps = std::stof(m["eps"]);
    p.log2_page = static_cast<int32_t>(geti(m, "log2_page"));
    p.norm = static_cast<int32_t>(geti(m, "norm"));
    p.rope_offset = static_cast<int32_t>(geti(m, "rope_offset"));
    p.rope_style = static_cast<int32_t>(geti(m, "rope_style"));
    p.hadamard = static_cast<int32_t>(geti(m, "hadamard"));
    p.store = static_cast<int32_t>(geti(m, "store"));
    p.scale_fmt = static_cast<int32_t>(geti(m, "scale_fmt"));
    p.stages = static_cast<int32_t>(geti(m, "stages"));
#ifdef KD_EMU_ADAPTER
    adapter_call("kd_adapter_norm_rope_store", kd_adapter_norm_rope_store, p);
    save("cache", cache);
    return 0;
#endif
    const long long grid = (p.num_tokens + KD_NORMROPE_TOKENS_PER_BLOCK - 1) / KD_NORMROPE_TOKENS_PER_BLOCK;
    if (grid > 0) {
        const int traps = emu::launch(static_cast<unsigned>(grid), KD_NORMROPE_THREADS, [&] { kd_norm_rope_store(p); });
        if (traps) die(std::to_string(traps) + " threads trapped");
    }
    save("cache", cache);
    return 0;
}

int run_logits()
{
    auto m = params();
    std::vector<uint8_t> q = load<uint8_t>("q"), cache = load<uint8_t>("cache");
    std::vector<float> w = load<float>("weights");
    std::vector<int32_t> lens = load<int32_t>("seq_lens"), table = load<int32_t>("page_table");
    kd_logits_params p{};
    p.batch = static_cast<int32_t>(geti(m, "batch"));
    p.heads = static_cast<int32_t>(geti(m, "heads"));
    p.stride = geti(m, "stride");
    p.max_pages = geti(m, "max_pages");
    p.num_pages = geti(m, "num_pages");
    p.log2_page = static_cast<int32_t>(geti(m, "log2_page"));
    p.store = static_cast<int32_t>(geti(m, "store"));
    p.clean = static_cast<int32_t>(geti(m, "clean"));
    p.tiles = static_cast<int32_t>((p.stride + KD_LOGITS_TILE - 1) / KD_LOGITS_TILE);
    p.page_stride = geti(m, "page_stride");
    p.next_n = static_cast<int32_t>(geti(m, "next_n"));
    p.logits_bf16 = static_cast<int32_t>(geti(m, "logits_bf16"));
    const size_t rows = static_cast<size_t>(p.batch) * static_cast<size_t>(p.next_n);
    /* bf16 logits use the first half of the buffer; save writes that half. */
    std::vector<uint32_t> out(rows * static_cast<size_t>(p.stride), 0x7B7B7B7Bu);
    p.q = q.data();
    p.weights = w.data();
    p.cache = cache.data();
    p.seq_lens = lens.data();
    p.page_table = table.data();
    p.logits = out.data();
    const long long grid = static_cast<long long>(rows) * p.tiles;
    if (grid > 0) {
        const int traps = emu::launch(static_cast<unsigned>(grid), KD_LOGITS_THREADS, [&] { kd_indexer_logits(p); });
        if (traps) die(std::to_string(traps) + " threads trapped");
    }
    if (p.logits_bf16) { /* the bf16 elements, packed two per word from the start */
        std::vector<uint16_t> half(rows * static_cast<size_t>(p.stride));
        std::memcpy(half.data(), out.data(), half.size() * 2);
        save("logits", half);
        return 0;
    }
    save("logits", out);
    return 0;
}

} /* namespace */

int main(int argc, char **argv)
{
    if (argc != 3) die("usage: emu_run topk|normrope|logits DIR");
    g_dir = argv[2];
    const std::string k = argv[1];
    if (k == "topk") return run_topk();
    if (k == "normrope") return run_normrope();
    if (k == "logits") return run_logits();
    die("unknown kernel " + k);
}
