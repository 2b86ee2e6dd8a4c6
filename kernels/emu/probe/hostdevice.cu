/* hostdevice: where the CPU emulator's arithmetic may differ from a GPU's,
 * settled on a GPU (`difftest gpu-check`, step hostdevice; built by
 * scripts/gpu-bundle with nvcc into tests/hostdevice).
 *
 * The emulator runs a kernel's conversions through the CUDA 13 headers'
 * host code and computes rsqrtf correctly rounded (kernels/emu/host_emu.h,
 * "Host versus device arithmetic"); a GPU runs cvt instructions and its
 * rsqrt approximation. This program computes each operation both ways in
 * one binary, the host side through the same header code the emulator
 * compiles, over the special values where the paths differ most (NaNs of
 * both signs and with payloads, infinities, overflow to f16/e4m3,
 * subnormals, midpoints), and prints one line per value that differs:
 *
 *   f16   __float2half_rn: the coarse key of SGLang's legacy radix top-k
 *         (its -NaN verdict on the emulator rests on the host giving
 *         0x7FFF for every NaN)
 *   bf16  __float2bfloat16 (round to nearest)
 *   e4m3  __nv_cvt_float2_to_fp8x2(..., __NV_SATFINITE, __NV_E4M3), as
 *         SGLang's pack_fp8 and this project's checks of it
 *   rsqrt rsqrtf against 1/sqrt rounded once: the device's distance in
 *         ULP, which the norm_rope_store bound takes to be at most 2
 *
 * then a summary line "hostdevice: N compared, M differ, rsqrt max U ULP".
 * Exit status: 0 every conversion agrees and rsqrt is within 2 ULP; 1 a
 * difference (each printed); 125 no GPU. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

const uint32_t kSpecials[] = {
    0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007FFFFFu, 0x3F800000u, 0xBF800000u,
    0x477FE000u, 0x477FF000u, 0x477FEFFFu, 0x47800000u, 0xC77FF000u, 0x33000000u, 0x33000001u,
    0x43E00000u, 0x43E80000u, 0x43F00000u, 0xC3F00000u, 0x4E6E6B28u, 0x3B800000u, 0x3A800000u,
    0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7FA00000u,
    0xFFA00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7FC12345u, 0xFFD00001u,
};
constexpr int kN = sizeof(kSpecials) / sizeof(kSpecials[0]);
constexpr int kRsqrtN = 1 << 16;

float f_of(uint32_t u)
{
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

__host__ __device__ void convert(float x, uint16_t *f16, uint16_t *bf16, uint16_t *e4m3)
{
    *f16 = __half_as_ushort(__float2half_rn(x));
    *bf16 = __bfloat16_as_ushort(__float2bfloat16(x));
    *e4m3 = __nv_cvt_float2_to_fp8x2(make_float2(x, -x), __NV_SATFINITE, __NV_E4M3);
}

__global__ void device_convert(const float *x, uint16_t *f16, uint16_t *bf16, uint16_t *e4m3, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) convert(x[i], &f16[i], &bf16[i], &e4m3[i]);
}

__global__ void device_rsqrt(const float *x, float *r, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) r[i] = rsqrtf(x[i]);
}

/* The rsqrt inputs: 2^16 values spread over [2^-20, 2^20), and 1, 2, 4. */
float rsqrt_input(int i)
{
    return std::ldexp(1.0f + static_cast<float>(i & 0xFFF) / 4096.0f, (i >> 12) * 2 - 16);
}

int ulp_distance(float a, float b)
{
    int32_t ia, ib;
    std::memcpy(&ia, &a, 4);
    std::memcpy(&ib, &b, 4);
    return ia > ib ? ia - ib : ib - ia;
}

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        const cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                                     \
            std::printf("hostdevice: %s: %s\n", #call, cudaGetErrorString(e_));                      \
            return e_ == cudaErrorNoDevice || e_ == cudaErrorInsufficientDriver ? 125 : 1;           \
        }                                                                                            \
    } while (0)

} /* namespace */

int main()
{
    std::vector<float> x(kN);
    for (int i = 0; i < kN; ++i) x[i] = f_of(kSpecials[i]);
    std::vector<float> rx(kRsqrtN), rr(kRsqrtN);
    for (int i = 0; i < kRsqrtN; ++i) rx[i] = rsqrt_input(i);

    float *dx = nullptr, *drx = nullptr, *drr = nullptr;
    uint16_t *d16 = nullptr, *db16 = nullptr, *d8 = nullptr;
    CHECK(cudaMalloc(&dx, kN * sizeof(float)));
    CHECK(cudaMalloc(&d16, kN * 2));
    CHECK(cudaMalloc(&db16, kN * 2));
    CHECK(cudaMalloc(&d8, kN * 2));
    CHECK(cudaMalloc(&drx, kRsqrtN * sizeof(float)));
    CHECK(cudaMalloc(&drr, kRsqrtN * sizeof(float)));
    CHECK(cudaMemcpy(dx, x.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(drx, rx.data(), kRsqrtN * sizeof(float), cudaMemcpyHostToDevice));
    device_convert<<<1, 64>>>(dx, d16, db16, d8, kN);
    CHECK(cudaGetLastError());
    device_rsqrt<<<kRsqrtN / 256, 256>>>(drx, drr, kRsqrtN);
    CHECK(cudaGetLastError());
    std::vector<uint16_t> g16(kN), gb16(kN), g8(kN);
    CHECK(cudaMemcpy(g16.data(), d16, kN * 2, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(gb16.data(), db16, kN * 2, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(g8.data(), d8, kN * 2, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(rr.data(), drr, kRsqrtN * sizeof(float), cudaMemcpyDeviceToHost));

    int compared = 0, differ = 0;
    for (int i = 0; i < kN; ++i) {
        uint16_t h16, hb16, h8;
        convert(x[i], &h16, &hb16, &h8);
        const struct {
            const char *op;
            uint16_t host, device;
        } rows[] = {{"f16", h16, g16[i]}, {"bf16", hb16, gb16[i]}, {"e4m3x2", h8, g8[i]}};
        for (const auto &r : rows) {
            ++compared;
            if (r.host != r.device) {
                ++differ;
                std::printf("%-6s 0x%08X: host 0x%04X device 0x%04X\n", r.op, kSpecials[i], r.host, r.device);
            }
        }
    }
    /* SGLang's coarse key of -NaN, the value its top-k verdict rests on. */
    const uint16_t neg_nan_host = __half_as_ushort(__float2half_rn(f_of(0xFFC00000u)));
    int neg_nan_device = -1;
    for (int i = 0; i < kN; ++i)
        if (kSpecials[i] == 0xFFC00000u) neg_nan_device = g16[i];
    std::printf("f16 of -NaN (0xFFC00000): host 0x%04X device 0x%04X\n", neg_nan_host, neg_nan_device);

    int worst = 0;
    for (int i = 0; i < kRsqrtN; ++i) {
        const float exact = static_cast<float>(1.0 / std::sqrt(static_cast<double>(rx[i])));
        const int d = ulp_distance(rr[i], exact);
        if (d > worst) worst = d;
    }
    std::printf("hostdevice: %d compared, %d differ, rsqrt max %d ULP over %d values\n", compared, differ, worst,
                kRsqrtN);
    return differ == 0 && worst <= 2 ? 0 : 1;
}
