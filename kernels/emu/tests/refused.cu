/* refused: kernels outside the emulated CUDA subset, one per -DREFUSE_<NAME>;
 * each must fail to build or to launch with a message naming what it
 * uses (scripts/test-kernels-emu checks the message against
 * kernels/emu/tests/refused.txt). Built with kernels/emu/emu_cxx.py. A
 * build that runs to the end prints "NOT REFUSED" and exits 0. */

#include "../host_emu.h"

#include <cstdio>

namespace refused {

#if defined(REFUSE_CLUSTER_DIMS)
/* A cluster of two blocks: refused at build. */
__global__ void __cluster_dims__(2, 1, 1) k(int *out) { out[threadIdx.x] = 1; }
#else
__global__ void k(int *out) { out[threadIdx.x] = static_cast<int>(threadIdx.x); }
#endif

__global__ void k_unknown_ptx(int *out)
{
    unsigned v;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(v));
    out[threadIdx.x] = static_cast<int>(v);
}

__global__ void k_partial_mask(int *out)
{
    /* Lanes 0..15 exchange among themselves while 16..31 are live. */
    if (threadIdx.x < 16) out[threadIdx.x] = __shfl_sync(0xffffu, static_cast<int>(threadIdx.x), 0);
}

__global__ void k_width(int *out) { out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1, 12); }

} /* namespace refused */

int main()
{
    int out[64] = {};
#if defined(REFUSE_CLUSTER_LAUNCH)
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(2);
    cfg.blockDim = dim3(32);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 2;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    if (cudaLaunchKernelEx(&cfg, refused::k, out) != cudaSuccess) return 1;
#elif defined(REFUSE_LAUNCH_C)
    void *args[] = {out};
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(1);
    cfg.blockDim = dim3(32);
    if (cudaLaunchKernelExC(&cfg, reinterpret_cast<const void *>(refused::k), args) != cudaSuccess) return 1;
#elif defined(REFUSE_UNKNOWN_PTX)
    emu::launch(1, 32, [&] { refused::k_unknown_ptx(out); });
#elif defined(REFUSE_PARTIAL_MASK)
    emu::launch(1, 32, [&] { refused::k_partial_mask(out); });
#elif defined(REFUSE_SHFL_WIDTH)
    emu::launch(1, 32, [&] { refused::k_width(out); });
#elif defined(REFUSE_BIG_BLOCK)
    emu::launch(1, 1056, [&] { refused::k(out); });
#elif defined(REFUSE_SMEM)
    emu::launch(dim3(1), dim3(32), 228 * 1024, [&] { refused::k(out); });
#elif defined(REFUSE_CHEVRON_CALLEE)
    /* A launch through a function pointer: emu_cxx.py reads only a
     * kernel's name before <<<. */
    void (*fp)(int *) = refused::k;
    (*fp)<<<1, 32>>>(out);
#else
    emu::launch(1, 32, [&] { refused::k(out); });
#endif
    std::printf("NOT REFUSED\n");
    return 0;
}
