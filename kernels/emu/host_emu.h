/* host_emu.h: run this project's CUDA kernels on the CPU to test their
 * logic on machines without a GPU. Each CUDA thread is a fiber (ucontext)
 * with its own stack; one OS thread runs them cooperatively, switching only
 * at __syncthreads and warp collectives, so a test uses one core however
 * many CUDA threads it emulates, and runs are reproducible.
 *
 * Scope: exactly the CUDA subset kernels/topk/topk.cu,
 * kernels/normrope/normrope.cu and kernels/logits/logits.cu use:
 * threadIdx/blockIdx/gridDim (x only),
 * __syncthreads, full-warp __shfl_sync/__shfl_up_sync/__shfl_xor_sync/
 * __ballot_sync, atomicAdd on u32, __popc/__ffs, the IEEE round-to-nearest
 * f32 intrinsics (__fadd_rn, __fsub_rn, __fmul_rn, __fdiv_rn, __fsqrt_rn,
 * __fmaf_rn, __float2uint_rn), __trap, static __shared__ variables. Blocks run one
 * after another. Barriers really block: a fiber waits until every live
 * thread of its block (or warp) has arrived; a thread that returns leaves
 * the barriers, as on a GPU. A block that can never finish (a barrier some
 * threads skip) is reported and aborts the test. Scheduling is round-robin
 * in thread order, so a missing barrier shows up in the results only if
 * that order exposes it; compute-sanitizer racecheck on a GPU is the real
 * test.
 *
 * Race checking (built with -fsanitize=thread): ThreadSanitizer sees each
 * CUDA thread as a fiber and reports two accesses to the same memory, one
 * a write, that no happens-before edge orders, whatever order the fibers
 * ran in, within one block. The edges within a block are CUDA's:
 * __syncthreads (every thread's accesses before the barrier happen before
 * every thread's after it); warp shuffles and ballots exchange values only
 * and order no memory, as __syncwarp would (CUDA C++ Programming Guide,
 * warp shuffle functions vs. __syncwarp); atomicAdd is a relaxed atomic
 * (atomics never race with each other but order nothing). Two edges are
 * the emulator's, not CUDA's: a thread that returns has its accesses
 * happen before those of every thread leaving the barrier round then in
 * progress; and blocks run one after another, each ordered before the
 * next (thread t of every block is one checker fiber), so a race between
 * two blocks through global memory is NOT reported (static __shared__
 * variables, one object per block on a GPU, need this). The host's writes
 * happen before the launch and the last block before the host reads the
 * outputs. The emulator's own bookkeeping is hidden from the checker.
 * Built with GCC only: clang instruments the fiber-switching functions
 * even under no_sanitize, which unbalances the checker's shadow stacks,
 * so a clang race build stops with #error.
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

#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#if defined(__clang__) && defined(__has_feature)
#if __has_feature(thread_sanitizer)
#error "host_emu.h race checking is built with GCC (g++ -fsanitize=thread); see the header comment"
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
/* ThreadSanitizer's dynamic annotations (its runtime exports them). */
extern "C" void AnnotateIgnoreReadsBegin(const char *file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char *file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char *file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char *file, int line);
#define KD_EMU_RACE 1
/* For the functions that switch the checker's fiber: an instrumented one
 * would enter on one fiber's shadow stack and leave on another's. */
#define KD_EMU_SWITCHES __attribute__((no_sanitize_thread, noinline))
#else
#define KD_EMU_RACE 0
#define KD_EMU_SWITCHES
#endif

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
/* Set by the scheduler before it resumes a fiber (gridDim by launch). */
inline emu_dim3 threadIdx;
inline emu_dim3 blockIdx;
inline emu_dim3 gridDim;

namespace emu {

/* Hooks for ThreadSanitizer; each is a no-op in a normal build. */
namespace race {
/* Hidden: while one lives, the current fiber's reads and writes are not
 * recorded (the emulator's own state, shared by every fiber). */
struct [[maybe_unused]] Hidden {
#if KD_EMU_RACE
    Hidden()
    {
        AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
        AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
    }
    ~Hidden()
    {
        AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
        AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
    }
    Hidden(const Hidden &) = delete;
    Hidden &operator=(const Hidden &) = delete;
#endif
};
/* release: the current fiber's accesses so far happen before those of
 * any fiber that later calls acquire on the same address. */
inline void release([[maybe_unused]] void *sync)
{
#if KD_EMU_RACE
    __tsan_release(sync);
#endif
}
inline void acquire([[maybe_unused]] void *sync)
{
#if KD_EMU_RACE
    __tsan_acquire(sync);
#endif
}
inline void *current_fiber()
{
#if KD_EMU_RACE
    return __tsan_get_current_fiber();
#else
    return nullptr;
#endif
}
/* create_fiber makes the checker's fiber for CUDA thread tid; reports
 * name it "threadIdx.x=tid". */
inline void *create_fiber([[maybe_unused]] unsigned tid)
{
#if KD_EMU_RACE
    void *f = __tsan_create_fiber(0);
    char name[32];
    std::snprintf(name, sizeof name, "threadIdx.x=%u", tid);
    __tsan_set_fiber_name(f, name);
    return f;
#else
    return nullptr;
#endif
}
/* switch_to tells the checker that the fiber f runs next; with sync, the
 * current fiber's accesses so far happen before f's from now on. */
KD_EMU_SWITCHES inline void switch_to([[maybe_unused]] void *f, [[maybe_unused]] bool sync)
{
#if KD_EMU_RACE
    __tsan_switch_to_fiber(f, sync ? 0 : __tsan_switch_to_fiber_no_sync);
#endif
}
} /* namespace race */

struct Trap {};

struct Fiber {
    ucontext_t ctx;
    unsigned tid = 0;
    bool done = false;
    void *race = nullptr; /* the checker's fiber (race checking only) */
};

/* A barrier of `expected` threads. gen counts completed rounds; a thread
 * arriving in round g releases, and on leaving acquires, sync[g & 1]: no
 * thread can arrive in round g + 2 before every thread has left round g,
 * so two objects keep the rounds apart. */
struct Barrier {
    int expected = 0;
    int arrived = 0;
    std::vector<Fiber *> waiters;
    unsigned gen = 0;
    bool orders_memory = true; /* false for the warp exchange rounds */
    char sync[2] = {};
};

struct Block {
    std::vector<Fiber> fibers;
    std::vector<std::unique_ptr<char[]>> stacks;
    ucontext_t sched;
    std::deque<Fiber *> ready;
    Fiber *current = nullptr;
    Barrier block_bar;
    std::vector<Barrier> warp_bar;
    std::vector<uint64_t> xchg[2]; /* double-buffered warp exchange, [warps * 32] */
    std::vector<unsigned> parity;  /* exchange rounds per thread */
    const std::function<void()> *body = nullptr;
    int traps = 0;
    void *sched_race = nullptr; /* the checker's fiber of the scheduler */
    char done_sync = 0;         /* fibers release it as they end */
};

inline Block *cur = nullptr;

inline void release(Barrier &b)
{
    for (Fiber *f : b.waiters) cur->ready.push_back(f);
    b.waiters.clear();
    b.arrived = 0;
    ++b.gen;
}

/* yield hands the OS thread back to the scheduler until this fiber is
 * resumed. */
KD_EMU_SWITCHES inline void yield()
{
    race::switch_to(cur->sched_race, false);
    swapcontext(&cur->current->ctx, &cur->sched);
}

inline void wait(Barrier &b)
{
    char *sync = nullptr;
    {
        race::Hidden h;
        if (b.orders_memory) sync = &b.sync[b.gen & 1];
        if (sync) race::release(sync);
        if (++b.arrived >= b.expected) {
            release(b);
        } else {
            b.waiters.push_back(cur->current);
            yield();
        }
    }
    if (sync) race::acquire(sync);
}

inline void drop(Barrier &b)
{
    race::Hidden h;
    if (b.orders_memory) race::release(&b.sync[b.gen & 1]);
    --b.expected;
    if (b.arrived > 0 && b.arrived >= b.expected) release(b);
}

/* round publishes this lane's 64 bits to its warp and returns the warp's
 * 32 published values, valid until this lane's next round. Two buffers and
 * one barrier per round: a lane writes buffer q only after the barrier of
 * the round before, which every lane reaches after reading buffer q of the
 * round before that. Each thread counts its own rounds; the lanes of a
 * warp run the same sequence of collectives, so their counts agree. */
inline const uint64_t *round(uint64_t bits)
{
    race::Hidden h; /* the exchange buffers are the emulator's */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    std::vector<uint64_t> &buf = cur->xchg[cur->parity[threadIdx.x]++ & 1];
    buf[warp * 32 + lane] = bits;
    wait(cur->warp_bar[warp]);
    return buf.data() + warp * 32;
}

template <class T>
inline T exchange(T v, int src_lane)
{
    static_assert(sizeof(T) <= 8, "shuffle of at most 64 bits");
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    const uint64_t *all = round(bits);
    uint64_t got;
    {
        race::Hidden h;
        got = all[src_lane & 31];
    }
    T out;
    std::memcpy(&out, &got, sizeof(T));
    return out;
}

KD_EMU_SWITCHES inline void fiber_main()
{
    Block *b;
    Fiber *f;
    const std::function<void()> *body;
    {
        race::Hidden h;
        b = cur;
        f = b->current;
        body = b->body;
    }
    try {
        (*body)();
    } catch (const Trap &) {
        race::Hidden h;
        ++b->traps;
    }
    {
        race::Hidden h;
        f->done = true;
        drop(b->warp_bar[f->tid >> 5]);
        drop(b->block_bar);
    }
    race::release(&b->done_sync);
    race::switch_to(b->sched_race, false);
    /* returning resumes uc_link, the scheduler */
}

/* race_fibers returns n checker fibers, created on first use and kept for
 * the process (fiber t always emulates thread t). */
inline std::vector<void *> &race_fibers(unsigned n)
{
    static std::vector<void *> pool;
    while (pool.size() < n) pool.push_back(race::create_fiber(static_cast<unsigned>(pool.size())));
    return pool;
}

/* init_fiber prepares f to start fiber_main on the given stack. Kept out
 * of line: getcontext returns twice, which must not touch launch's locals. */
[[gnu::noinline]] inline void init_fiber(Fiber &f, char *stack, size_t size, ucontext_t *link)
{
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = stack;
    f.ctx.uc_stack.ss_size = size;
    f.ctx.uc_link = link;
    makecontext(&f.ctx, fiber_main, 0);
}

/* launch runs body as grid_x blocks of block_x threads (block_x a multiple
 * of 32, at most 1024) and returns how many threads trapped. */
inline int launch(unsigned grid_x, unsigned block_x, const std::function<void()> &body)
{
    if (block_x == 0 || block_x % 32 != 0 || block_x > 1024) {
        std::fprintf(stderr, "emu::launch: block of %u threads\n", block_x);
        std::abort();
    }
    constexpr size_t kStack = (KD_EMU_RACE ? 512 : 128) * 1024;
    int traps = 0;
    race::Hidden hidden; /* the scheduler's own state; host code runs before and after */
    Block block;
    block.sched_race = race::current_fiber();
    block.fibers.resize(block_x);
    std::vector<void *> &rf = race_fibers(block_x);
    for (unsigned t = 0; t < block_x; ++t) {
        block.stacks.emplace_back(new char[kStack]);
        block.fibers[t].race = rf[t];
    }
    for (unsigned b = 0; b < grid_x; ++b) {
        block.block_bar = Barrier{static_cast<int>(block_x), 0, {}};
        block.warp_bar.assign(block_x / 32, Barrier{32, 0, {}});
        for (Barrier &w : block.warp_bar) w.orders_memory = false;
        block.xchg[0].assign(block_x, 0);
        block.xchg[1].assign(block_x, 0);
        block.parity.assign(block_x, 0);
        block.body = &body;
        block.traps = 0;
        block.ready.clear();
        cur = &block;
        for (unsigned t = 0; t < block_x; ++t) {
            Fiber &f = block.fibers[t];
            f.tid = t;
            f.done = false;
            init_fiber(f, block.stacks[t].get(), kStack, &block.sched);
            block.ready.push_back(&f);
        }
        blockIdx = emu_dim3{b, 0, 0};
        gridDim = emu_dim3{grid_x, 1, 1};
        while (!block.ready.empty()) {
            Fiber *f = block.ready.front();
            block.ready.pop_front();
            block.current = f;
            threadIdx = emu_dim3{f->tid, 0, 0};
            race::switch_to(f->race, true);
            swapcontext(&block.sched, &f->ctx);
        }
        race::acquire(&block.done_sync); /* the block's accesses before the next block's, and the host's */
        for (unsigned t = 0; t < block_x; ++t) {
            if (!block.fibers[t].done) {
                std::fprintf(stderr, "emu::launch: block %u deadlocked: thread %u waits at a barrier others skip\n", b, t);
                std::abort();
            }
        }
        traps += block.traps;
        cur = nullptr;
    }
    return traps;
}

} /* namespace emu */

inline void __syncthreads() { emu::wait(emu::cur->block_bar); }
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
    const uint64_t *all = emu::round(pred ? 1u : 0u);
    emu::race::Hidden h; /* the exchange buffers are the emulator's */
    unsigned m = 0;
    for (int l = 0; l < 32; ++l)
        if (all[l]) m |= 1u << l;
    return m;
}

/* A relaxed atomic, as on the device: it orders no other memory. (One OS
 * thread runs every fiber, so it is atomic anyway; the race checker needs
 * to see it as one.) */
inline unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
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
/* One rounding of a*b + c, as the device's fused multiply-add (std::fma on
 * floats is IEEE fusedMultiplyAdd; -ffp-contract=off keeps the other
 * operations unfused). */
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
/* Round to nearest even (the default rounding mode); inputs here are in
 * [0, 8], so the conversion cannot overflow. */
inline unsigned __float2uint_rn(float a) { return static_cast<unsigned>(std::nearbyint(a)); }

#endif /* KD_HOST_EMU_H */
