/* host_emu.h: run this project's CUDA kernels on the CPU, one OS thread per
 * CUDA thread, to test their logic on machines without a GPU.
 *
 * Scope: exactly the CUDA subset kernels/topk/topk.cu and
 * kernels/normrope/normrope.cu use: threadIdx/blockIdx (x only),
 * __syncthreads, full-warp __shfl_sync/__shfl_up_sync/__shfl_xor_sync/
 * __ballot_sync, atomicAdd on u32, __popc/__ffs, the IEEE round-to-nearest
 * f32 intrinsics (__fadd_rn, __fsub_rn, __fmul_rn, __fdiv_rn, __fsqrt_rn,
 * __float2uint_rn), __trap, static __shared__ variables. Blocks run one
 * after another; the threads of a block run concurrently, so barriers and
 * warp exchanges really synchronise (std::barrier), and a missing barrier
 * can show up as a wrong or varying result, as on a GPU.
 *
 * Host f32 arithmetic is IEEE binary32 with round-to-nearest-even; compile
 * with -ffp-contract=off (no FMA contraction) so the explicit rounding
 * points of the kernels are kept and results match the device bit for bit.
 * Warp shuffles with a partial mask, y/z dimensions, dynamic shared memory
 * and PTX asm are not emulated.
 *
 * Usage: #include this header, then the kernel's .cu file, then
 *   emu::launch(grid_x, block_x, [&] { kernel(params); });
 * It returns the number of threads that executed __trap (0 when none). */
#ifndef KD_HOST_EMU_H
#define KD_HOST_EMU_H

#include <pthread.h>

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

struct uint2 {
    uint32_t x, y;
};
inline uint2 make_uint2(uint32_t x, uint32_t y) { return uint2{x, y}; }

struct emu_dim3 {
    unsigned x, y, z;
};
inline thread_local emu_dim3 threadIdx;
inline thread_local emu_dim3 blockIdx;

namespace emu {

struct Trap {};

struct Block {
    std::unique_ptr<std::barrier<>> block_bar;
    std::vector<std::unique_ptr<std::barrier<>>> warp_bar;
    std::vector<uint64_t> xchg; /* [warps * 32] */
    std::atomic<int> traps{0};
};

inline thread_local Block *cur = nullptr;

template <class T>
inline T exchange(T v, int src_lane)
{
    static_assert(sizeof(T) <= 8, "shuffle of at most 64 bits");
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    cur->xchg[warp * 32 + lane] = bits;
    cur->warp_bar[warp]->arrive_and_wait();
    const uint64_t got = cur->xchg[warp * 32 + (src_lane & 31)];
    cur->warp_bar[warp]->arrive_and_wait();
    T out;
    std::memcpy(&out, &got, sizeof(T));
    return out;
}

struct ThreadArg {
    Block *block;
    unsigned tid, bid;
    const std::function<void()> *body;
};

inline void *thread_main(void *p)
{
    ThreadArg *a = static_cast<ThreadArg *>(p);
    cur = a->block;
    threadIdx = emu_dim3{a->tid, 0, 0};
    blockIdx = emu_dim3{a->bid, 0, 0};
    try {
        (*a->body)();
    } catch (const Trap &) {
        cur->traps.fetch_add(1);
    }
    /* An exited thread no longer takes part in barriers (as on a GPU). */
    cur->warp_bar[a->tid >> 5]->arrive_and_drop();
    cur->block_bar->arrive_and_drop();
    return nullptr;
}

/* launch runs body as grid_x blocks of block_x threads (block_x a multiple
 * of 32) and returns how many threads trapped. */
inline int launch(unsigned grid_x, unsigned block_x, const std::function<void()> &body)
{
    if (block_x == 0 || block_x % 32 != 0 || block_x > 1024) {
        std::fprintf(stderr, "emu::launch: block of %u threads\n", block_x);
        std::abort();
    }
    int traps = 0;
    for (unsigned b = 0; b < grid_x; ++b) {
        Block block;
        block.block_bar = std::make_unique<std::barrier<>>(block_x);
        for (unsigned w = 0; w < block_x / 32; ++w)
            block.warp_bar.push_back(std::make_unique<std::barrier<>>(32));
        block.xchg.assign(block_x, 0);
        std::vector<ThreadArg> args(block_x);
        std::vector<pthread_t> th(block_x);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        for (unsigned t = 0; t < block_x; ++t) {
            args[t] = ThreadArg{&block, t, b, &body};
            if (pthread_create(&th[t], &attr, thread_main, &args[t]) != 0) {
                std::fprintf(stderr, "emu::launch: pthread_create failed at thread %u\n", t);
                std::abort();
            }
        }
        pthread_attr_destroy(&attr);
        for (unsigned t = 0; t < block_x; ++t) pthread_join(th[t], nullptr);
        traps += block.traps.load();
    }
    return traps;
}

} /* namespace emu */

inline void __syncthreads() { emu::cur->block_bar->arrive_and_wait(); }
[[noreturn]] inline void __trap() { throw emu::Trap{}; }

template <class T>
inline T __shfl_sync(unsigned, T v, int src) { return emu::exchange(v, src); }
template <class T>
inline T __shfl_xor_sync(unsigned, T v, int m) { return emu::exchange(v, (threadIdx.x & 31) ^ m); }
template <class T>
inline T __shfl_up_sync(unsigned, T v, unsigned o)
{
    const int lane = threadIdx.x & 31;
    const int src = lane - static_cast<int>(o);
    return emu::exchange(v, src >= 0 ? src : lane);
}
inline unsigned __ballot_sync(unsigned, int pred)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    emu::cur->xchg[warp * 32 + lane] = pred ? 1u : 0u;
    emu::cur->warp_bar[warp]->arrive_and_wait();
    unsigned m = 0;
    for (int l = 0; l < 32; ++l)
        if (emu::cur->xchg[warp * 32 + l]) m |= 1u << l;
    emu::cur->warp_bar[warp]->arrive_and_wait();
    return m;
}

inline unsigned atomicAdd(unsigned *p, unsigned v) { return std::atomic_ref<unsigned>(*p).fetch_add(v); }
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __ffs(unsigned v) { return __builtin_ffs(static_cast<int>(v)); }

inline unsigned __float_as_uint(float f)
{
    unsigned u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float __uint_as_float(unsigned u)
{
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
/* Round to nearest even (the default rounding mode); inputs here are in
 * [0, 8], so the conversion cannot overflow. */
inline unsigned __float2uint_rn(float a) { return static_cast<unsigned>(std::nearbyint(a)); }

#endif /* KD_HOST_EMU_H */
