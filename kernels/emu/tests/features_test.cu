/* features_test: one small kernel per feature of the emulated CUDA subset
 * (kernels/emu/host_emu.h), each checked against a hand-worked answer.
 *
 * Built by scripts/test-kernels-emu with kernels/emu/emu_cxx.py (the CUDA
 * 13.0 headers of the pinned wheels on the include path, PTX asm
 * translated, extern __shared__ linked). Exit 0 when every check passes,
 * 1 otherwise; one line per check. */

#include "../host_emu.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(const char *name, bool ok, const std::string &detail = "")
{
    std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", name, detail.empty() ? "" : ": ", detail.c_str());
    if (!ok) ++failures;
}

std::string hex(uint64_t v)
{
    char b[32];
    std::snprintf(b, sizeof b, "0x%" PRIx64, v);
    return b;
}

/* ---- geometry: 3-D grids and blocks, blockDim, gridDim ---- */

__global__ void k_dims(unsigned *out, unsigned *dims)
{
    const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    out[block * (blockDim.x * blockDim.y * blockDim.z) + thread] = blockIdx.z * 100000 + blockIdx.y * 10000 +
                                                                   blockIdx.x * 1000 + threadIdx.z * 100 +
                                                                   threadIdx.y * 10 + threadIdx.x;
    if (block == 0 && thread == 0) {
        dims[0] = gridDim.x, dims[1] = gridDim.y, dims[2] = gridDim.z;
        dims[3] = blockDim.x, dims[4] = blockDim.y, dims[5] = blockDim.z;
    }
}

void test_dims()
{
    /* grid (2, 3, 2), block (4, 2, 3): 12 blocks of 24 threads. Block
     * (1, 2, 1) is block 1 + 2*2 + 1*2*3 = 11; its thread (3, 1, 2) is
     * 3 + 1*4 + 2*8 = 23: element 11*24 + 23 = 287 holds 121213. */
    std::vector<unsigned> out(12 * 24, 0), dims(6, 0);
    emu::launch(dim3(2, 3, 2), dim3(4, 2, 3), 0, [&] { k_dims(out.data(), dims.data()); });
    check("3-D grid and block: element 287", out[287] == 121213, std::to_string(out[287]));
    check("3-D grid and block: element 0 and the last", out[0] == 0 && out[287 - 23 + 23] == 121213 && out[12 * 24 - 1] == 121213,
          std::to_string(out[12 * 24 - 1]));
    check("gridDim and blockDim", dims == std::vector<unsigned>{2, 3, 2, 4, 2, 3});
}

/* ---- one __shared__ object per block, blocks on several workers ---- */

__global__ void k_shared_per_block(int *out)
{
    __shared__ int s;
    if (threadIdx.x == 0) s = static_cast<int>(blockIdx.x) * 10;
    __syncthreads();
    atomicAdd(&s, 1);
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

void test_shared_per_block()
{
    /* 64 blocks of 64 threads: block b ends with 10 b + 64. */
    std::vector<int> out(64, -1);
    emu::launch(64, 64, [&] { k_shared_per_block(out.data()); });
    bool ok = true;
    for (int b = 0; b < 64; ++b) ok = ok && out[b] == 10 * b + 64;
    check("one __shared__ object per block (64 blocks)", ok, "block 3: " + std::to_string(out[3]) + ", want 94");
}

/* ---- a block that is not a multiple of 32 ---- */

__global__ void k_partial_block(int *out)
{
    __shared__ int sum;
    if (threadIdx.x == 0) sum = 0;
    __syncthreads();
    atomicAdd(&sum, static_cast<int>(threadIdx.x));
    __syncthreads();
    if (threadIdx.x == 0) out[0] = sum;
    if (threadIdx.x >= 32) {
        const unsigned r = __reduce_add_sync(0xffu, threadIdx.x & 31); /* lanes 0..7 of warp 1 */
        if (threadIdx.x == 32) out[1] = static_cast<int>(r);
    }
}

void test_partial_block()
{
    /* 40 threads: 0 + ... + 39 = 780; warp 1 holds lanes 0..7: 28. */
    std::vector<int> out(2, -1);
    emu::launch(1, 40, [&] { k_partial_block(out.data()); });
    check("block of 40 threads: __syncthreads and atomicAdd", out[0] == 780, std::to_string(out[0]));
    check("block of 40 threads: the partial warp's reduction", out[1] == 28, std::to_string(out[1]));
}

/* ---- dynamic shared memory ---- */

__global__ void k_dynamic_smem(const int *in, int *out, int *same)
{
    extern __shared__ int dyn[];
    extern __shared__ float dynf[];
    const unsigned n = blockDim.x, t = threadIdx.x;
    dyn[t] = in[blockIdx.x * n + t];
    __syncthreads();
    out[blockIdx.x * n + t] = dyn[n - 1 - t];
    if (t == 0) same[blockIdx.x] = static_cast<void *>(dyn) == static_cast<void *>(dynf) ? 1 : 0;
}

void test_dynamic_smem()
{
    /* Two blocks of 48 reverse in[i] = i*i within each block: out[0] =
     * in[47] = 2209, out[48] = in[95] = 9025. */
    std::vector<int> in(96), out(96, -1), same(2, -1);
    for (int i = 0; i < 96; ++i) in[i] = i * i;
    emu::launch(dim3(2), dim3(48), 48 * sizeof(int), [&] { k_dynamic_smem(in.data(), out.data(), same.data()); });
    check("extern __shared__ sized at launch", out[0] == 2209 && out[47] == 0 && out[48] == 9025 && out[95] == 48 * 48,
          std::to_string(out[0]) + " " + std::to_string(out[48]));
    check("every extern __shared__ array at one address", same[0] == 1 && same[1] == 1);
}

/* ---- atomics ---- */

__global__ void k_atomics(int *i, unsigned *u, unsigned long long *ull, float *f)
{
    const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    atomicAdd(&i[0], 1);
    atomicSub(&i[1], 2);
    atomicMax(&i[2], t - 500);
    atomicMin(&i[3], 7 - t);
    if (atomicCAS(&i[4], -1, t) == -1) atomicAdd(&i[5], 1); /* exactly one winner */
    atomicOr(&u[0], 1u << (t % 32));
    atomicAnd(&u[1], ~(1u << (t % 8)));
    atomicXor(&u[2], 1u << (t % 3));
    atomicMax(&u[3], static_cast<unsigned>(t));
    if (t < 23) atomicInc(&u[4], 9u);
    atomicAdd(&ull[0], static_cast<unsigned long long>(t));
    atomicCAS(&ull[1], 0ull, 0x100000000ull);
    if (t < 64) atomicAdd(&f[0], 0.5f);
}

void test_atomics()
{
    /* 4 blocks of 256: t in [0, 1024). */
    std::vector<int> i = {0, 0, -1000000, 1000000, -1, 0};
    std::vector<unsigned> u = {0, 0xffffffffu, 0, 0, 0};
    std::vector<unsigned long long> ull = {0, 0};
    std::vector<float> f = {0.0f};
    emu::launch(4, 256, [&] { k_atomics(i.data(), u.data(), ull.data(), f.data()); });
    check("int atomicAdd over 4 blocks", i[0] == 1024, std::to_string(i[0]));
    check("int atomicSub", i[1] == -2048, std::to_string(i[1]));
    check("int atomicMax (1023 - 500)", i[2] == 523, std::to_string(i[2]));
    check("int atomicMin (7 - 1023)", i[3] == -1016, std::to_string(i[3]));
    check("int atomicCAS: one winner, its value kept", i[5] == 1 && i[4] >= 0 && i[4] < 1024, std::to_string(i[5]));
    check("unsigned atomicOr", u[0] == 0xffffffffu, hex(u[0]));
    check("unsigned atomicAnd", u[1] == 0xffffff00u, hex(u[1]));
    /* t % 3 = 0, 1, 2 for 342, 341, 341 of the 1024: bits 0 even, 1 and 2 odd. */
    check("unsigned atomicXor", u[2] == 0x6u, hex(u[2]));
    check("unsigned atomicMax", u[3] == 1023u, std::to_string(u[3]));
    check("atomicInc wraps after 9 (23 increments: 3)", u[4] == 3u, std::to_string(u[4]));
    check("unsigned long long atomicAdd (0 + ... + 1023 = 523776)", ull[0] == 523776ull, std::to_string(ull[0]));
    check("unsigned long long atomicCAS", ull[1] == 0x100000000ull, hex(ull[1]));
    check("float atomicAdd (64 x 0.5)", f[0] == 32.0f, std::to_string(f[0]));
}

/* ---- warp shuffles with a width, reductions, votes, __syncwarp ---- */

__global__ void k_warp(int *out)
{
    const int lane = static_cast<int>(threadIdx.x & 31);
    int *o = out + lane * 16;
    o[0] = __shfl_sync(0xffffffffu, lane * 10, 1, 8);
    o[1] = __shfl_xor_sync(0xffffffffu, lane, 4, 8);
    o[2] = __shfl_up_sync(0xffffffffu, lane, 3, 8);
    o[3] = __shfl_down_sync(0xffffffffu, lane, 3, 8);
    int v = lane;
    for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
    o[4] = v;
    o[5] = static_cast<int>(__reduce_add_sync(0xffffffffu, static_cast<unsigned>(lane)));
    o[6] = static_cast<int>(__reduce_min_sync(0xffffffffu, static_cast<unsigned>(lane ^ 5)));
    o[7] = __reduce_max_sync(0xffffffffu, lane - 20);
    o[8] = static_cast<int>(__reduce_and_sync(0xffffffffu, 0xffff0000u | static_cast<unsigned>(lane)));
    o[9] = static_cast<int>(__reduce_or_sync(0xffffffffu, 1u << lane));
    o[10] = static_cast<int>(__reduce_xor_sync(0xffffffffu, static_cast<unsigned>(lane + 1)));
    o[11] = static_cast<int>(__ballot_sync(0xffffffffu, lane % 3 == 0));
    o[12] = __all_sync(0xffffffffu, lane < 32) * 10 + __any_sync(0xffffffffu, lane == 17);
    __shared__ int s[32];
    s[lane] = lane * 2;
    __syncwarp();
    o[13] = s[31 - lane];
}

void test_warp()
{
    std::vector<int> out(32 * 16, -1);
    emu::launch(1, 32, [&] { k_warp(out.data()); });
    const int *l13 = &out[13 * 16], *l9 = &out[9 * 16], *l10 = &out[10 * 16];
    /* Lane 13 is in segment 8..15 of width 8. */
    check("__shfl_sync width 8: lane 13 reads lane 8 + 1", l13[0] == 90, std::to_string(l13[0]));
    check("__shfl_xor_sync width 8: lane 13 ^ 4", l13[1] == 9, std::to_string(l13[1]));
    check("__shfl_up_sync width 8: lane 13 - 3, lane 9 keeps its own", l13[2] == 10 && l9[2] == 9,
          std::to_string(l13[2]) + " " + std::to_string(l9[2]));
    check("__shfl_down_sync width 8: lane 10 + 3, lane 13 keeps its own", l10[3] == 13 && l13[3] == 13,
          std::to_string(l10[3]) + " " + std::to_string(l13[3]));
    check("butterfly sum of lanes (496)", out[0 * 16 + 4] == 496 && out[31 * 16 + 4] == 496, std::to_string(out[4]));
    check("__reduce_add_sync (496)", l9[5] == 496, std::to_string(l9[5]));
    check("__reduce_min_sync of lane ^ 5 (0)", l9[6] == 0, std::to_string(l9[6]));
    check("__reduce_max_sync int of lane - 20 (11)", l9[7] == 11, std::to_string(l9[7]));
    check("__reduce_and_sync (0xffff0000)", static_cast<unsigned>(l9[8]) == 0xffff0000u, hex(static_cast<unsigned>(l9[8])));
    check("__reduce_or_sync (0xffffffff)", static_cast<unsigned>(l9[9]) == 0xffffffffu, hex(static_cast<unsigned>(l9[9])));
    check("__reduce_xor_sync of 1..32 (32)", l9[10] == 32, std::to_string(l9[10]));
    check("__ballot_sync of lane % 3 == 0 (0x49249249)", static_cast<unsigned>(l9[11]) == 0x49249249u,
          hex(static_cast<unsigned>(l9[11])));
    check("__all_sync and __any_sync", l9[12] == 11, std::to_string(l9[12]));
    check("__syncwarp orders shared memory within the warp", l9[13] == 44, std::to_string(l9[13]));
}

/* ---- ::min, ::max, bit casts, rsqrtf, expf ---- */

__global__ void k_math(unsigned long long *o, float *f)
{
    o[0] = ::min(3, 7u);
    o[1] = static_cast<unsigned long long>(static_cast<long long>(::max(-1, 2)));
    o[2] = ::min(-1, 1u); /* int with unsigned compares as unsigned, as CUDA's overload: 1 */
    o[3] = static_cast<unsigned>(__float_as_int(1.0f));
    o[4] = __float_as_uint(-0.0f);
    o[5] = static_cast<unsigned long long>(__double_as_longlong(1.0));
    f[0] = __int_as_float(0x40490fdb);
    f[1] = __uint_as_float(0x3f800000u);
    f[2] = ::min(1.5f, __uint_as_float(0x7fc00000u)); /* NaN gives the other operand */
    f[3] = rsqrtf(4.0f);
    f[4] = rsqrtf(2.0f);
    f[5] = expf(0.0f);
    f[6] = expf(1.0f);
    f[7] = static_cast<float>(__longlong_as_double(0x4008000000000000ll));
}

uint32_t ulp_distance(float a, float b)
{
    uint32_t x, y;
    std::memcpy(&x, &a, 4);
    std::memcpy(&y, &b, 4);
    return x > y ? x - y : y - x;
}

void test_math()
{
    std::vector<unsigned long long> o(6, 0);
    std::vector<float> f(8, 0.0f);
    emu::launch(1, 1, [&] { k_math(o.data(), f.data()); });
    check("::min(3, 7u)", o[0] == 3, std::to_string(o[0]));
    check("::max(-1, 2)", o[1] == 2, std::to_string(o[1]));
    check("::min(-1, 1u) is unsigned", o[2] == 1, std::to_string(o[2]));
    check("__float_as_int(1.0f)", o[3] == 0x3f800000u, hex(o[3]));
    check("__float_as_uint(-0.0f)", o[4] == 0x80000000u, hex(o[4]));
    check("__double_as_longlong(1.0)", o[5] == 0x3ff0000000000000ull, hex(o[5]));
    check("__int_as_float(0x40490fdb) (pi)", f[0] == 3.14159274f);
    check("__uint_as_float(0x3f800000)", f[1] == 1.0f);
    check("::min(1.5f, NaN)", f[2] == 1.5f);
    check("rsqrtf(4) exact", f[3] == 0.5f);
    /* 1/sqrt(2) = 0.70710678..., correctly rounded 0x3f3504f3; the device
     * may be 2 ULP away, the host here is exact. */
    check("rsqrtf(2) within 2 ULP of 0x3f3504f3", ulp_distance(f[4], __uint_as_float(0x3f3504f3u)) <= 2,
          hex(__float_as_uint(f[4])));
    check("expf(0) exact", f[5] == 1.0f);
    /* e = 2.71828182..., correctly rounded 0x402df854. */
    check("expf(1) within 2 ULP of 0x402df854", ulp_distance(f[6], __uint_as_float(0x402df854u)) <= 2,
          hex(__float_as_uint(f[6])));
    check("__longlong_as_double(0x4008...) (3.0)", f[7] == 3.0f);
}

/* ---- __half, __nv_bfloat16, fp8 from the CUDA headers ---- */

__global__ void k_lowp(unsigned *o)
{
    o[0] = __half_as_ushort(__float2half_rn(1.0f / 3.0f));
    o[1] = __half_as_ushort(__float2half_rn(65520.0f));
    o[2] = __half_as_ushort(__hadd(__float2half_rn(1.0f), __float2half_rn(2.0f)));
    o[3] = __bfloat16_as_ushort(__float2bfloat16_rn(1.0f / 3.0f));
    o[4] = __nv_fp8_e4m3(448.0f).__x;
    o[5] = __nv_fp8_e4m3(500.0f).__x;
    o[6] = __nv_fp8_e4m3(0.1f).__x;
    o[7] = __nv_fp8_e5m2(0.1f).__x;
    o[8] = __float_as_uint(static_cast<float>(__nv_fp8_e4m3(0.1f)));
    o[9] = __float_as_uint(__bfloat162float(__ushort_as_bfloat16(0x3f80)));
}

void test_lowp()
{
    std::vector<unsigned> o(10, 0);
    emu::launch(1, 1, [&] { k_lowp(o.data()); });
    /* 1/3 in f16: 0x3555 (1.0101010101b x 2^-2, rounded down). */
    check("__float2half_rn(1/3)", o[0] == 0x3555, hex(o[0]));
    /* 65520 is the midpoint between 65504 and 2^16: ties to even, inf. */
    check("__float2half_rn(65520) is inf", o[1] == 0x7c00, hex(o[1]));
    check("__hadd(1, 2) = 3 (0x4200)", o[2] == 0x4200, hex(o[2]));
    /* 1/3 = 0x3eaaaaab: the low half 0xaaab is above 0x8000, round up. */
    check("__float2bfloat16_rn(1/3)", o[3] == 0x3eab, hex(o[3]));
    check("e4m3(448) is the largest finite, 0x7e", o[4] == 0x7e, hex(o[4]));
    check("e4m3(500) saturates to 0x7e", o[5] == 0x7e, hex(o[5]));
    /* 0.1 = 1.6 x 2^-4: e4m3 exponent field 3, mantissa 4.8 -> 5: 0x1d; e5m2
     * exponent field 11, mantissa 2.4 -> 2: 0x2e. */
    check("e4m3(0.1) = 0x1d", o[6] == 0x1d, hex(o[6]));
    check("e5m2(0.1) = 0x2e", o[7] == 0x2e, hex(o[7]));
    check("float(e4m3 0x1d) = 0.1015625", o[8] == __float_as_uint(0.1015625f), hex(o[8]));
    check("bf16 0x3f80 is 1.0", o[9] == 0x3f800000u, hex(o[9]));
}

/* ---- PTX asm through emu_cxx.py's table ---- */

__global__ void k_ptx(unsigned *o, unsigned *elected)
{
    unsigned lane_id, lt;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane_id));
    asm volatile("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
    asm volatile("griddepcontrol.wait;" ::: "memory");
    unsigned pred;
    asm volatile(
        "{\n"
        "  .reg .pred p;\n"
        "  .reg .b32  r;\n"
        "  elect.sync r|p, 0xFFFFFFFF;\n"
        "  selp.b32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(pred));
    if (pred) atomicAdd(&elected[0], 1u + threadIdx.x);
    unsigned leader = 0, is_leader = 0;
    asm volatile(
        "{\n"
        ".reg .b32 %%rx;\n"
        ".reg .pred %%px;\n"
        "     elect.sync %%rx|%%px, %2;\n"
        "@%%px mov.s32 %1, 1;\n"
        "     mov.s32 %0, %%rx;\n"
        "}\n"
        : "+r"(leader), "+r"(is_leader)
        : "r"(0xFFFFFFFFu));
    if (is_leader) atomicAdd(&elected[1], 1u + threadIdx.x);
    unsigned sum, mx;
    asm volatile("redux.sync.add.u32 %0, %1, %2;" : "=r"(sum) : "r"(lane_id), "r"(0xffffffffu));
    int neg = -static_cast<int>(lane_id), mn;
    asm volatile("redux.sync.min.s32 %0, %1, %2;" : "=r"(mn) : "r"(neg), "r"(0xffffffffu));
    asm volatile("redux.sync.max.u32 %0, %1, %2;" : "=r"(mx) : "r"(lane_id * 3), "r"(0xffffffffu));
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    unsigned *p = o + threadIdx.x * 8;
    p[0] = lane_id, p[1] = lt, p[2] = sum, p[3] = static_cast<unsigned>(mn), p[4] = mx, p[5] = leader;
}

void test_ptx()
{
    /* Two warps: lane 5 of warp 1 is thread 37. */
    std::vector<unsigned> o(64 * 8, 0), elected(2, 0);
    emu::launch(1, 64, [&] { k_ptx(o.data(), elected.data()); });
    const unsigned *t37 = &o[37 * 8];
    check("mov.u32 %laneid", t37[0] == 5, std::to_string(t37[0]));
    check("mov.u32 %lanemask_lt", t37[1] == 0x1f, hex(t37[1]));
    /* elected: lane 0 of each warp, threads 0 and 32: (1 + 0) + (1 + 32). */
    check("elect.sync (SGLang form): lane 0 of each warp", elected[0] == 34, std::to_string(elected[0]));
    check("elect.sync (CUTLASS form): lane 0 of each warp, leader id 0", elected[1] == 34 && t37[5] == 0,
          std::to_string(elected[1]));
    check("redux.sync.add.u32 (496)", t37[2] == 496, std::to_string(t37[2]));
    check("redux.sync.min.s32 (-31)", static_cast<int>(t37[3]) == -31, std::to_string(static_cast<int>(t37[3])));
    check("redux.sync.max.u32 (93)", t37[4] == 93, std::to_string(t37[4]));
}

/* ---- cudaLaunchKernelEx, cudaFuncSetAttribute ---- */

__global__ void k_stage(const int *in, long long *out, int n)
{
    extern __shared__ int stage[];
    for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x)) stage[i] = in[i];
    __syncthreads();
    if (threadIdx.x == 0) {
        long long s = 0;
        for (int i = 0; i < n; ++i) s += stage[n - 1 - i];
        out[blockIdx.x] = s;
    }
}

void test_runtime()
{
    /* 16384 ints (64 KiB) of i: the sum is 16383 * 16384 / 2 = 134209536. */
    const int n = 16384;
    std::vector<int> in(n);
    for (int i = 0; i < n; ++i) in[i] = i;
    std::vector<long long> out(2, -1);
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(2);
    cfg.blockDim = dim3(256);
    cfg.dynamicSmemBytes = n * sizeof(int);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    const int *cin = in.data();
    cudaError_t e = cudaLaunchKernelEx(&cfg, k_stage, cin, out.data(), n);
    check("64 KiB of dynamic shared memory without the opt-in: cudaErrorInvalidValue",
          e == cudaErrorInvalidValue && cudaGetLastError() == cudaErrorInvalidValue && cudaGetLastError() == cudaSuccess,
          cudaGetErrorName(e));
    check("cudaFuncSetAttribute(MaxDynamicSharedMemorySize, 64 KiB)",
          cudaFuncSetAttribute(k_stage, cudaFuncAttributeMaxDynamicSharedMemorySize, n * 4) == cudaSuccess);
    e = cudaLaunchKernelEx(&cfg, k_stage, cin, out.data(), n);
    check("cudaLaunchKernelEx with the opt-in and the PDL attribute", e == cudaSuccess && out[0] == 134209536 && out[1] == 134209536,
          std::string(cudaGetErrorName(e)) + " " + std::to_string(out[0]));
    int optin = 0;
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
    check("cudaDevAttrMaxSharedMemoryPerBlockOptin (227 KiB)", optin == 232448, std::to_string(optin));
}

/* ---- <<<>>> launches (emu_cxx.py rewrites them) and device memory ---- */

template <int Scale>
__global__ void k_scaled(int *out, int add)
{
    extern __shared__ int tile[];
    tile[threadIdx.x] = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x) * Scale;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x] + add;
}

namespace inner {
__global__ void k_fill(int *out, int v) { out[blockIdx.y * gridDim.x * blockDim.x + blockIdx.x * blockDim.x + threadIdx.x] = v; }
}

void test_chevron()
{
    /* 2 blocks of 32, 128 B of dynamic shared memory: element 33 (block 1,
     * thread 1) reads tile[30] = (32 + 30) * 3 = 186, plus 5. */
    int *out = nullptr;
    check("cudaMalloc (256-byte aligned)", cudaMalloc(&out, 64 * sizeof(int)) == cudaSuccess && reinterpret_cast<uintptr_t>(out) % 256 == 0);
    check("cudaMemset", cudaMemset(out, 0xff, 64 * sizeof(int)) == cudaSuccess && out[63] == -1);
    cudaStream_t stream = nullptr;
    k_scaled<3><<<2, 32, 32 * sizeof(int), stream>>>(out, 5);
    check("k<3><<<2, 32, 128, stream>>>: element 33", cudaGetLastError() == cudaSuccess && out[33] == 191 && out[0] == 98,
          std::to_string(out[33]) + " " + std::to_string(out[0]));
    ::inner::k_fill<<<dim3(2, 2),
                      dim3(16)>>>(out, 7);
    check("::inner::k_fill<<<dim3(2, 2), dim3(16)>>> over two lines", cudaGetLastError() == cudaSuccess && out[0] == 7 && out[63] == 7,
          std::to_string(out[63]));
    std::vector<int> host(64, 0);
    check("cudaMemcpy device to host", cudaMemcpy(host.data(), out, 64 * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess && host[40] == 7);
    k_scaled<1><<<1, 2048, 0>>>(out, 0);
    check("<<<1, 2048>>>: cudaErrorInvalidConfiguration from cudaGetLastError, then cleared",
          cudaGetLastError() == cudaErrorInvalidConfiguration && cudaGetLastError() == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess);
    check("cudaFree", cudaFree(out) == cudaSuccess);
}

/* ---- __trap ---- */

__global__ void k_trap(int *out)
{
    if (threadIdx.x == 3 || threadIdx.x == 40) __trap();
    out[threadIdx.x] = 1;
}

void test_trap()
{
    std::vector<int> out(64, 0);
    const int traps = emu::launch(1, 64, [&] { k_trap(out.data()); });
    check("__trap: 2 threads counted, the others ran", traps == 2 && out[3] == 0 && out[4] == 1 && out[63] == 1,
          std::to_string(traps));
}

/* A trap in a <<<>>> launch is a sticky device exception: the last check,
 * as every later call reports it. */
void test_trap_sticky()
{
    std::vector<int> out(64, 0);
    k_trap<<<1, 64>>>(out.data());
    const cudaError_t first = cudaGetLastError();
    check("__trap in <<<>>>: cudaErrorLaunchFailure, sticky", first == cudaErrorLaunchFailure && cudaGetLastError() == cudaErrorLaunchFailure &&
          cudaDeviceSynchronize() == cudaErrorLaunchFailure && cudaStreamSynchronize(nullptr) == cudaErrorLaunchFailure,
          cudaGetErrorName(first));
}

} /* namespace */

/* Type punning as CUDA kernels spell it (SGLang's AlignedVector: integer
 * storage loaded in one vector access, its elements read back through a
 * pointer to the element type). nvcc keeps such code working; g++ at -O2
 * with strict aliasing may not (it read zeros here before emu_cxx passed
 * -fno-strict-aliasing). Lane l loads bf16 dims 4l..4l+3 holding l + 1 and
 * sums them: 4(l + 1). */
struct PunStorage {
    uint16_t data[4];
};
struct alignas(8) PunVector {
    PunStorage s;
    __device__ void load(const void *p, int off) { s = reinterpret_cast<const PunStorage *>(p)[off]; }
    __device__ __nv_bfloat16 &operator[](int i) { return reinterpret_cast<__nv_bfloat16 *>(&s)[i]; }
};

__global__ void pun_kernel(const __nv_bfloat16 *in, float *out)
{
    PunVector v;
    v.load(in, threadIdx.x);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) sum += __bfloat162float(v[i]);
    out[threadIdx.x] = sum;
}

void test_type_punning()
{
    std::vector<__nv_bfloat16> in(128);
    for (int i = 0; i < 128; ++i) in[i] = __float2bfloat16(static_cast<float>(i / 4 + 1));
    std::vector<float> out(32, -1.0f);
    emu::launch(1, 32, [&] { pun_kernel(in.data(), out.data()); });
    bool ok = true;
    for (int l = 0; l < 32; ++l) ok = ok && out[l] == 4.0f * (l + 1);
    check("type punning through reinterpret_cast (vector load, element reads)", ok,
          "lane 1: " + std::to_string(out[1]) + ", want 8");
}

int main()
{
    test_dims();
    test_shared_per_block();
    test_partial_block();
    test_dynamic_smem();
    test_atomics();
    test_warp();
    test_math();
    test_lowp();
    test_ptx();
    test_runtime();
    test_chevron();
    test_trap();
    test_trap_sticky();
    test_type_punning();
    if (failures) {
        std::printf("FAIL: %d checks failed\n", failures);
        return 1;
    }
    std::printf("PASS: all emulator feature checks\n");
    return 0;
}
