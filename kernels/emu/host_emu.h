/* host_emu.h: run CUDA C++ kernels on the CPU to test their logic on
 * machines without a GPU. Each CUDA thread is a fiber with its
 * own stack; one OS thread runs the fibers of a block cooperatively,
 * switching only at barriers and warp collectives, so runs of one block
 * are reproducible. The blocks of a grid are spread over the cores
 * (KD_EMU_THREADS worker threads, default one per core; each worker runs
 * whole blocks, one at a time); under the race checker they run one after
 * another on the launching thread, as the checker's semantics below need.
 *
 * The subset (kernels/README.md, "The emulated CUDA subset", lists it with
 * its tests in kernels/emu/tests/):
 *  - threadIdx, blockIdx, blockDim, gridDim in 1 to 3 dimensions; blocks of
 *    1 to 1024 threads (warps are 32 consecutive linear thread ids, the last
 *    one possibly partial);
 *  - __shared__ variables, one object per block in flight (thread_local:
 *    each worker runs one block at a time), and dynamic shared memory:
 *    every `extern __shared__ T name[]` is the same per-worker array of
 *    kMaxDynamicSmem bytes, poisoned with 0xA5 at each block start; the
 *    launch's dynamic size must fit it (and the 48 KiB default unless
 *    cudaFuncSetAttribute raised the kernel's limit). Resolving the extern
 *    names to that array is a link step: build with kernels/emu/emu-cxx;
 *  - __syncthreads, __syncwarp, __shfl_sync/_up/_down/_xor with a width,
 *    __ballot_sync, __all_sync, __any_sync, __activemask,
 *    __reduce_{add,min,max}_sync (int and unsigned) and
 *    __reduce_{and,or,xor}_sync; the mask of a warp collective must
 *    include every lane of the warp that has not exited (a partial-mask
 *    collective aborts with a message naming it);
 *  - atomics on int, unsigned, unsigned long long (add, sub, max, min, or,
 *    and, xor, exch, CAS, inc, dec) and float atomicAdd, relaxed as on the
 *    device (GCC __atomic builtins: real atomics across workers);
 *  - the IEEE round-to-nearest f32 intrinsics (__fadd_rn ... __fmaf_rn,
 *    __frcp_rn, __frsqrt_rn), bit casts (__float_as_int/uint, __int/
 *    uint_as_float, __double_as_longlong, __longlong_as_double), __popc,
 *    __ffs, __clz, __brev, ::min/::max, rsqrtf and the approximate ones
 *    (__expf, __logf, __fdividef): see "Host versus device arithmetic";
 *  - with the CUDA 13.0 headers on the include path (emu-cxx puts the
 *    pinned wheels' there): their own host implementations of __half,
 *    __nv_bfloat16 and the fp8 types (cuda_fp16.h, cuda_bf16.h,
 *    cuda_fp8.h), and stand-ins for cudaLaunchKernelEx (the template),
 *    <<<>>> launches (emu-cxx rewrites them to emu::chevron),
 *    cudaFuncSetAttribute, cudaGetLastError, cudaMalloc, cudaMemcpy(Async),
 *    cudaMemset(Async) and a few device queries, so a kernel's own host
 *    glue runs; launches are synchronous, a trap is a sticky error;
 *  - PTX asm, translated by emu-cxx through its table (emu_cxx.py): a
 *    statement it does not know is refused when it runs, naming the asm
 *    and where it is.
 * Not emulated, refused by name: thread block clusters (__cluster_dims__
 * fails the build; a cluster launch attribute fails the launch),
 * cudaLaunchKernelExC (no types to call the kernel with), partial-mask
 * warp collectives. Anything else outside the subset fails to compile
 * (an undeclared name) or is refused at run time.
 *
 * Barriers really block: a fiber waits until every live thread of its
 * block (or warp) has arrived; a thread that returns leaves the barriers,
 * as on a GPU. A block that can never finish (a barrier some threads
 * skip) is reported and aborts the process. Scheduling is round-robin in
 * thread order, so a missing barrier shows up in the results only if
 * that order exposes it; the race checker (below) and compute-sanitizer
 * racecheck on a GPU are the real tests.
 *
 * Race checking (built with -fsanitize=thread): ThreadSanitizer sees each
 * CUDA thread as a fiber and reports two accesses to the same memory, one
 * a write, that no happens-before edge orders, whatever order the fibers
 * ran in, within one block. The edges within a block are CUDA's:
 * __syncthreads (every thread's accesses before the barrier happen before
 * every thread's after it) and __syncwarp (the same within a warp); warp
 * shuffles, votes and reductions exchange values only and order no
 * memory (CUDA C++ Programming Guide, warp shuffle functions vs.
 * __syncwarp); atomics are relaxed (atomics never race with each other
 * but order nothing). Two edges are the emulator's, not CUDA's: a thread
 * that returns has its accesses happen before those of every thread
 * leaving the barrier round then in progress; and blocks run one after
 * another on one OS thread, each ordered before the next (thread t of
 * every block is one checker fiber), so a race between two blocks
 * through global memory is NOT reported. The host's writes happen before
 * the launch and the last block before the host reads the outputs. The
 * emulator's own bookkeeping is hidden from the checker. Built with GCC
 * only: clang instruments the fiber-switching functions even under
 * no_sanitize, which unbalances the checker's shadow stacks, so a clang
 * race build stops with #error.
 *
 * Host versus device arithmetic. Host f32 arithmetic is IEEE binary32 with
 * round-to-nearest-even; compile with -ffp-contract=off (no FMA
 * contraction) so the explicit rounding points of a kernel are kept, and
 * the correctly rounded operations (+ - * / sqrt, the _rn intrinsics,
 * fmaf) match the device bit for bit. These may differ from the device:
 *  - rsqrtf: the device's approximation (at most 2 ULP from 1/sqrt(x),
 *    CUDA C++ Programming Guide, Mathematical Functions) against the
 *    host's correctly rounded 1/sqrt(x) (double, then one rounding);
 *  - expf, exp2f, logf, sinf... (libm, at most 1 ULP here) against the
 *    device's at most 2 ULP; __expf, __logf, __fdividef (the device's
 *    fast approximations) are computed exactly here;
 *  - conversions to __half/__nv_bfloat16/fp8 use the CUDA headers' own
 *    host code, which rounds as the device's cvt does for finite values;
 *    specials (NaN payloads, saturation of +-inf in fp8) are where host
 *    and device code paths differ most and are worth a GPU check.
 * A contract that names such an operation must give its comparator a
 * tolerance of at least those bounds (a ULP budget), and never demand
 * bit equality there; bit-exact contracts use the _rn intrinsics only
 * (this project's kernels do: their outputs are bit-exact with the GPU's).
 * scripts/gpu-check runs the same kernels on a device, which settles the
 * rest.
 *
 * Usage: #include this header, then the kernel's source, then
 *   emu::launch(grid_x, block_x, [&] { kernel(params); });
 *   emu::launch(dim3 grid, dim3 block, dynamic_smem_bytes, [&] { ... });
 * or the kernel's own host glue through cudaLaunchKernelEx. launch
 * returns the number of threads that executed __trap (0 when none). */
#ifndef KD_HOST_EMU_H
#define KD_HOST_EMU_H

#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <bit>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
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

/* The CUDA 13.0 headers, when on the include path (kernels/emu/emu-cxx
 * puts the pinned wheels' there): their host code for __half,
 * __nv_bfloat16 and the fp8 types, and the runtime API's types and
 * declarations for the stand-ins below. Their device-only parts are
 * compiled out for a host compiler. device_launch_parameters.h (the
 * builtin threadIdx...) is kept out: the emulator defines those. */
#if !defined(KD_EMU_NO_CUDA_HEADERS) && __has_include(<cuda_runtime.h>) && __has_include(<nv/target>)
#define KD_EMU_CUDA_HEADERS 1
#define __DEVICE_LAUNCH_PARAMETERS_H__
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __shared__
#undef __launch_bounds__
#undef __grid_constant__
#undef __cluster_dims__
#else
#define KD_EMU_CUDA_HEADERS 0
struct uint2 {
    uint32_t x, y;
};
inline uint2 make_uint2(uint32_t x, uint32_t y) { return uint2{x, y}; }
struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
/* One object per block in flight: a worker runs one block at a time. */
#define __shared__ thread_local
#define __cluster_dims__(...) _Pragma("GCC error \"thread block clusters (__cluster_dims__) are not emulated by kernels/emu/host_emu.h\"")
#define __ldg(p) (*(p))

/* Kept for older callers: the coordinates' type. */
using emu_dim3 = uint3;
/* Set by the scheduler before it resumes a fiber; per worker thread. */
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;
constexpr int warpSize = 32;

/* Fiber switches. With the race checker, or off x86-64, ucontext
 * (swapcontext saves and restores the signal mask: a system call per
 * switch). Otherwise kd_emu_switch: it saves the callee-saved registers,
 * MXCSR and the x87 control word on the current stack, stores the stack
 * pointer in *save and resumes the fiber whose stack pointer is load, as
 * a function return; no system call (System V x86-64 ABI: rbx, rbp,
 * r12-r15, MXCSR control bits and the x87 control word are callee-saved). */
#if KD_EMU_RACE || !defined(__x86_64__)
#define KD_EMU_FAST_SWITCH 0
#else
#define KD_EMU_FAST_SWITCH 1
extern "C" void kd_emu_switch(void **save, void *load);
__asm__(".pushsection .text.kd_emu_switch,\"axG\",@progbits,kd_emu_switch,comdat\n"
        ".weak kd_emu_switch\n"
        ".hidden kd_emu_switch\n"
        ".type kd_emu_switch,@function\n"
        "kd_emu_switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  subq $8, %rsp\n"
        "  stmxcsr (%rsp)\n"
        "  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n"
        "  fldcw 4(%rsp)\n"
        "  addq $8, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size kd_emu_switch, .-kd_emu_switch\n"
        ".popsection\n");
#endif

namespace emu {

/* The dynamic shared memory of a block: 227 KiB, the largest opt-in of
 * sm_90 and sm_100 (CUDA C++ Programming Guide, technical specifications
 * per compute capability; sm_120 allows 99 KiB). */
constexpr size_t kMaxDynamicSmem = 227 * 1024;
/* Without cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize),
 * a launch may ask for at most 48 KiB, as on the device. */
constexpr size_t kDefaultDynamicSmem = 48 * 1024;

} /* namespace emu */

/* Every `extern __shared__` array of a kernel is this array of the worker
 * running the block: emu-cxx links each such name to it (ld --defsym). */
alignas(1024) inline thread_local unsigned char kd_emu_dynamic_smem[emu::kMaxDynamicSmem];
/* An extern __shared__ array with internal linkage (a kernel in an unnamed
 * namespace) makes g++ call the translation unit's thread-local
 * initialiser, __tls_init, which it never defines when no thread-local
 * needs one: emu-cxx links that call here. */
extern "C" [[gnu::used]] inline void kd_emu_no_tls_init() {}

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
/* create_fiber makes the checker's fiber for CUDA thread tid (linear);
 * reports name it "threadIdx.x=tid". */
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

/* fail reports a use of the CUDA subset the emulator does not support (or
 * a launch it refuses) and aborts: a kernel outside the subset never runs
 * to a result. */
[[noreturn]] inline void fail(const char *what)
{
    std::fprintf(stderr, "emu: %s\n", what);
    std::fflush(stderr);
    std::abort();
}

struct Fiber {
#if KD_EMU_FAST_SWITCH
    void *sp = nullptr; /* saved stack pointer (kd_emu_switch) */
#else
    ucontext_t ctx;
#endif
    unsigned tid = 0; /* linear: x + y * blockDim.x + z * blockDim.x * blockDim.y */
    uint3 idx{};      /* threadIdx */
    bool done = false;
    void *race = nullptr; /* the checker's fiber (race checking only) */
};

/* A barrier of `expected` threads. gen counts completed rounds; a thread
 * arriving in round g of a barrier that orders memory releases, and on
 * leaving acquires, sync[g & 1]: no thread can arrive in round g + 2
 * before every thread has left round g, so two objects keep the rounds
 * apart. */
struct Barrier {
    int expected = 0;
    int arrived = 0;
    std::vector<Fiber *> waiters;
    unsigned gen = 0;
    char sync[2] = {};
};

struct Block {
    std::vector<Fiber> fibers;
    char *stacks = nullptr; /* fibers.size() stacks of kStack bytes */
#if KD_EMU_FAST_SWITCH
    void *sched_sp = nullptr;
#else
    ucontext_t sched;
#endif
    std::deque<Fiber *> ready;
    Fiber *current = nullptr;
    Barrier block_bar;
    std::vector<Barrier> warp_bar;
    std::vector<uint32_t> live;    /* per warp: lanes that have not returned */
    std::vector<uint64_t> xchg[2]; /* double-buffered warp exchange, [warps * 32] */
    std::vector<uint32_t> xbits[2]; /* per warp and buffer: lanes that wrote it this round */
    std::vector<unsigned> xround[2]; /* per warp and buffer: the round xbits is of */
    std::vector<unsigned> parity;  /* exchange rounds per thread */
    const std::function<void()> *body = nullptr;
    int traps = 0;
    void *sched_race = nullptr; /* the checker's fiber of the scheduler */
    char done_sync = 0;         /* fibers release it as they end */
    /* For the hang report (launch): the linear index of the block being
     * run (~0 between blocks), the thread last switched to and how many
     * of its threads have returned. Written by the worker, read by the
     * watchdog. */
    std::atomic<unsigned long long> at_block{~0ull};
    std::atomic<unsigned> at_thread{~0u};
    std::atomic<unsigned> finished{0};
};

/* The block the calling worker runs. */
inline thread_local Block *cur = nullptr;

inline unsigned tid() { return cur->current->tid; }
inline unsigned lane() { return cur->current->tid & 31; }

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
#if KD_EMU_FAST_SWITCH
    kd_emu_switch(&cur->current->sp, cur->sched_sp);
#else
    swapcontext(&cur->current->ctx, &cur->sched);
#endif
}

/* wait blocks until every live thread the barrier counts has arrived;
 * with orders, it is a memory barrier among them for the race checker. */
inline void wait(Barrier &b, bool orders)
{
    char *sync = nullptr;
    {
        race::Hidden h;
        if (orders) sync = &b.sync[b.gen & 1];
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
    race::release(&b.sync[b.gen & 1]);
    --b.expected;
    if (b.arrived > 0 && b.arrived >= b.expected) release(b);
}

/* check_mask refuses a warp collective whose mask leaves out a lane of
 * the warp that has not returned: the emulator synchronises whole warps. */
inline void check_mask(unsigned mask, const char *what)
{
    const uint32_t live = cur->live[tid() >> 5];
    if ((mask & live) != live) {
        char msg[200];
        std::snprintf(msg, sizeof msg,
                      "%s with mask 0x%08x while lanes 0x%08x of the warp are live: partial-mask warp collectives are not emulated",
                      what, mask, live);
        fail(msg);
    }
}

/* round publishes this lane's 64 bits to its warp and returns the warp's
 * 32 published values, valid until this lane's next round, and in *who
 * the lanes that published them this round. Two buffers and one barrier
 * per round: a lane writes buffer q only after the barrier of the round
 * before, which every lane reaches after reading buffer q of the round
 * before that. Each thread counts its own rounds; the lanes of a warp run
 * the same sequence of collectives, so their counts agree. */
inline const uint64_t *round(uint64_t bits, uint32_t *who = nullptr)
{
    race::Hidden h; /* the exchange buffers are the emulator's */
    const unsigned t = tid(), l = t & 31, warp = t >> 5;
    const unsigned r = cur->parity[t]++;
    const unsigned q = r & 1;
    std::vector<uint64_t> &buf = cur->xchg[q];
    if (cur->xround[q][warp] != r) {
        cur->xround[q][warp] = r;
        cur->xbits[q][warp] = 0;
    }
    cur->xbits[q][warp] |= 1u << l;
    buf[warp * 32 + l] = bits;
    wait(cur->warp_bar[warp], false);
    if (who) *who = cur->xbits[q][warp];
    return buf.data() + warp * 32;
}

template <class T>
inline uint64_t to_bits(T v)
{
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp exchange of at most 64 bits");
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    return bits;
}
template <class T>
inline T from_bits(uint64_t bits)
{
    T out;
    std::memcpy(&out, &bits, sizeof(T));
    return out;
}

/* Which lane a shuffle reads (PTX shfl.sync: mode, the lane or offset b,
 * the width as its clamp); a source outside the lane's segment of width
 * lanes gives the lane its own value. */
enum class Shfl { idx, up, down, bfly };
inline int shfl_source(Shfl mode, int b, int width)
{
    if (width <= 0 || width > 32 || (width & (width - 1)) != 0) {
        char msg[96];
        std::snprintf(msg, sizeof msg, "warp shuffle width %d: must be a power of 2 in [1, 32]", width);
        fail(msg);
    }
    const int l = static_cast<int>(lane());
    const int min_lane = l & ~(width - 1), max_lane = min_lane + width - 1;
    int j = l;
    switch (mode) {
    case Shfl::idx: j = min_lane + (b & (width - 1)); break;
    case Shfl::up: j = l - b >= min_lane ? l - b : l; break;
    case Shfl::down: j = l + b <= max_lane ? l + b : l; break;
    case Shfl::bfly: j = (l ^ b) <= max_lane ? (l ^ b) : l; break;
    }
    return j & 31;
}

template <class T>
inline T shuffle(unsigned mask, T v, Shfl mode, int b, int width, const char *what)
{
    check_mask(mask, what);
    const int src = shfl_source(mode, b, width);
    const uint64_t *all = round(to_bits(v));
    uint64_t got;
    {
        race::Hidden h;
        got = all[src];
    }
    return from_bits<T>(got);
}

/* Kept for older callers: a full-warp shuffle from src_lane. */
template <class T>
inline T exchange(T v, int src_lane)
{
    return shuffle(0xffffffffu, v, Shfl::idx, src_lane, 32, "__shfl_sync");
}

/* reduce combines the values of the lanes of the warp that take part. */
template <class T, class Op>
inline T reduce(unsigned mask, T v, Op op, const char *what)
{
    check_mask(mask, what);
    uint32_t who = 0;
    const uint64_t *all = round(to_bits(v), &who);
    race::Hidden h;
    bool first = true;
    T acc{};
    for (int l = 0; l < 32; ++l) {
        if (!(who >> l & 1)) continue;
        const T x = from_bits<T>(all[l]);
        acc = first ? x : op(acc, x);
        first = false;
    }
    return acc;
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
        b->live[f->tid >> 5] &= ~(1u << (f->tid & 31));
        drop(b->warp_bar[f->tid >> 5]);
        drop(b->block_bar);
    }
    race::release(&b->done_sync);
    race::switch_to(b->sched_race, false);
#if KD_EMU_FAST_SWITCH
    void *dead;
    kd_emu_switch(&dead, b->sched_sp); /* never resumed */
    std::abort();
#endif
    /* returning resumes uc_link, the scheduler */
}

/* race_fibers returns n checker fibers, created on first use and kept for
 * the process (fiber t always emulates thread t). Race builds run every
 * block on the launching thread. */
inline std::vector<void *> &race_fibers(unsigned n)
{
    static std::vector<void *> pool;
    while (pool.size() < n) pool.push_back(race::create_fiber(static_cast<unsigned>(pool.size())));
    return pool;
}

#if KD_EMU_FAST_SWITCH
/* init_fiber lays out the top of f's stack as kd_emu_switch leaves a
 * suspended one, returning into fiber_main with the stack aligned as
 * after a call (rsp + 8 a multiple of 16), the caller's MXCSR and x87
 * control word, and zeroed callee-saved registers. */
inline void init_fiber(Fiber &f, char *stack, size_t size)
{
    uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + size) & ~uintptr_t{15};
    void **sp = reinterpret_cast<void **>(top - 16); /* return address at a multiple of 16 */
    sp[1] = nullptr;
    sp[0] = reinterpret_cast<void *>(&fiber_main);
    for (int r = 0; r < 6; ++r) *--sp = nullptr; /* rbp, rbx, r12-r15 */
    uint32_t csr[2] = {__builtin_ia32_stmxcsr(), 0};
    uint16_t cw;
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    csr[1] = cw;
    --sp;
    std::memcpy(sp, csr, 8);
    f.sp = sp;
}
#else
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
#endif

constexpr size_t kStack = (KD_EMU_RACE ? 512 : 128) * 1024;

/* Fiber stacks are kept between launches (untouched pages cost nothing). */
struct StackPool {
    std::mutex mu;
    std::vector<std::pair<size_t, char *>> free;
};
inline StackPool &stack_pool()
{
    static StackPool *p = new StackPool; /* never destroyed: workers may outlive static destruction order */
    return *p;
}
inline char *take_stacks(size_t n)
{
    StackPool &p = stack_pool();
    {
        std::lock_guard<std::mutex> g(p.mu);
        for (size_t i = 0; i < p.free.size(); ++i) {
            if (p.free[i].first >= n) {
                char *s = p.free[i].second;
                p.free.erase(p.free.begin() + static_cast<long>(i));
                return s;
            }
        }
    }
    /* 1024 threads' stacks, whatever n, so any block can reuse them. */
    return new char[1024 * kStack];
}
inline void give_stacks(char *s)
{
    StackPool &p = stack_pool();
    std::lock_guard<std::mutex> g(p.mu);
    p.free.emplace_back(1024, s);
}

/* launch_error returns why the device would refuse this launch, or
 * nullptr (CUDA C++ Programming Guide, technical specifications). */
inline const char *launch_error(dim3 grid, dim3 block, size_t smem)
{
    const unsigned long long threads = 1ull * block.x * block.y * block.z;
    if (threads == 0 || threads > 1024) return "a block of 0 or more than 1024 threads";
    if (block.x > 1024 || block.y > 1024 || block.z > 64) return "a block dimension beyond (1024, 1024, 64)";
    if (grid.x == 0 || grid.y == 0 || grid.z == 0) return "an empty grid";
    if (grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535) return "a grid dimension beyond (2^31-1, 65535, 65535)";
    if (smem > kMaxDynamicSmem) return "more dynamic shared memory than the emulator's 227 KiB";
    return nullptr;
}

/* run_block runs block number b (linear, x fastest) of the grid on the
 * calling OS thread, in blk. */
inline void run_block(Block &blk, unsigned long long b, dim3 grid, dim3 block, size_t smem)
{
    const unsigned n = block.x * block.y * block.z;
    const unsigned warps = (n + 31) / 32;
    blk.block_bar = Barrier{static_cast<int>(n), 0, {}};
    blk.warp_bar.assign(warps, Barrier{});
    blk.live.assign(warps, 0);
    for (unsigned w = 0; w < warps; ++w) {
        const unsigned lanes = std::min(32u, n - 32 * w);
        blk.warp_bar[w].expected = static_cast<int>(lanes);
        blk.live[w] = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
    }
    for (int q = 0; q < 2; ++q) {
        blk.xchg[q].assign(warps * 32, 0);
        blk.xbits[q].assign(warps, 0);
        blk.xround[q].assign(warps, ~0u);
    }
    blk.parity.assign(n, 0);
    blk.traps = 0;
    blk.ready.clear();
    cur = &blk;
    for (unsigned t = 0; t < n; ++t) {
        Fiber &f = blk.fibers[t];
        f.tid = t;
        f.idx = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
        f.done = false;
#if KD_EMU_FAST_SWITCH
        init_fiber(f, blk.stacks + t * kStack, kStack);
#else
        init_fiber(f, blk.stacks + t * kStack, kStack, &blk.sched);
#endif
        blk.ready.push_back(&f);
    }
    blockIdx = uint3{static_cast<unsigned>(b % grid.x), static_cast<unsigned>(b / grid.x % grid.y),
                     static_cast<unsigned>(b / (1ull * grid.x * grid.y))};
    gridDim = grid;
    blockDim = block;
    if (smem > 0) std::memset(kd_emu_dynamic_smem, 0xA5, smem);
    blk.finished.store(0, std::memory_order_relaxed);
    blk.at_block.store(b, std::memory_order_relaxed);
    while (!blk.ready.empty()) {
        Fiber *f = blk.ready.front();
        blk.ready.pop_front();
        blk.current = f;
        blk.at_thread.store(f->tid, std::memory_order_relaxed);
        threadIdx = f->idx;
        race::switch_to(f->race, true);
#if KD_EMU_FAST_SWITCH
        kd_emu_switch(&blk.sched_sp, f->sp);
#else
        swapcontext(&blk.sched, &f->ctx);
#endif
        if (f->done) blk.finished.fetch_add(1, std::memory_order_relaxed);
    }
    blk.at_block.store(~0ull, std::memory_order_relaxed);
    race::acquire(&blk.done_sync); /* the block's accesses before the next block's, and the host's */
    for (unsigned t = 0; t < n; ++t) {
        if (!blk.fibers[t].done) {
            std::fprintf(stderr, "emu::launch: block %llu deadlocked: thread %u waits at a barrier others skip\n", b, t);
            std::abort();
        }
    }
    cur = nullptr;
}

/* workers is how many OS threads run the blocks of a grid: KD_EMU_THREADS
 * if set (at least 1), else one per core; 1 under the race checker. */
inline unsigned workers()
{
#if KD_EMU_RACE
    return 1;
#else
    if (const char *e = std::getenv("KD_EMU_THREADS"); e && *e) {
        const long v = std::strtol(e, nullptr, 10);
        return v >= 1 ? static_cast<unsigned>(v) : 1u;
    }
    const unsigned hc = std::thread::hardware_concurrency();
    return hc ? hc : 1u;
#endif
}

/* hang_report_ms is KD_EMU_HANG_REPORT_MS (the harness's worker sets it
 * to 9/10 of its per-case time-out, bridge.HangReportEnv): after that
 * many milliseconds a launch still running prints where each block is;
 * 0 (unset, or not a positive number) never. */
inline long hang_report_ms()
{
    static const long ms = [] {
        const char *e = std::getenv("KD_EMU_HANG_REPORT_MS");
        const long v = e && *e ? std::strtol(e, nullptr, 10) : 0;
        return v > 0 ? v : 0;
    }();
    return ms;
}

/* Watchdog prints the hang report of one launch once its time is up:
 * the grid, how many blocks were started, and for each block being run
 * its index, the thread last switched to (the one spinning, in a block
 * that waits for a flag no one sets) and how many threads returned. The
 * report goes to stderr, which the harness quotes in the case's timeout
 * message. Blocks register while they run a launch's blocks (add, drop). */
struct Watchdog {
    std::mutex mu;
    std::condition_variable cv;
    bool over = false;
    std::vector<const Block *> running;
    std::thread t;

    Watchdog(long ms, dim3 grid, dim3 block, unsigned long long blocks, const std::atomic<unsigned long long> &next)
    {
        if (ms <= 0) return;
        t = std::thread([this, ms, grid, block, blocks, &next] {
            std::unique_lock<std::mutex> l(mu);
            if (cv.wait_for(l, std::chrono::milliseconds(ms), [this] { return over; })) return;
            const unsigned long long started = std::min(next.load(std::memory_order_relaxed), blocks);
            std::fprintf(stderr,
                         "emu: hang report: launch of grid (%u, %u, %u), block (%u, %u, %u) still running after %ld ms; "
                         "%llu of %llu blocks started\n",
                         grid.x, grid.y, grid.z, block.x, block.y, block.z, ms, started, blocks);
            const unsigned n = block.x * block.y * block.z;
            for (const Block *b : running) {
                const unsigned long long i = b->at_block.load(std::memory_order_relaxed);
                if (i == ~0ull) continue;
                const unsigned th = b->at_thread.load(std::memory_order_relaxed);
                std::fprintf(stderr,
                             "emu: hang report: block (%llu, %llu, %llu): thread (%u, %u, %u) runs, %u of %u threads returned\n",
                             i % grid.x, i / grid.x % grid.y, i / (1ull * grid.x * grid.y), th % block.x,
                             th / block.x % block.y, th / (block.x * block.y), b->finished.load(std::memory_order_relaxed), n);
            }
            std::fflush(stderr);
        });
    }
    void add(const Block *b)
    {
        std::lock_guard<std::mutex> l(mu);
        running.push_back(b);
    }
    void drop(const Block *b)
    {
        std::lock_guard<std::mutex> l(mu);
        running.erase(std::find(running.begin(), running.end(), b));
    }
    ~Watchdog()
    {
        if (!t.joinable()) return;
        {
            std::lock_guard<std::mutex> l(mu);
            over = true;
        }
        cv.notify_one();
        t.join();
    }
};

/* launch runs body as a grid of blocks, with smem bytes of dynamic shared
 * memory per block, and returns how many threads trapped. A launch the
 * device would refuse aborts with a message naming the rule. Blocks run
 * on workers() OS threads (the launching thread and workers() - 1 more),
 * each taking the next block not yet started. */
inline int launch(dim3 grid, dim3 block, size_t smem, const std::function<void()> &body)
{
    if (const char *why = launch_error(grid, block, smem)) {
        char msg[256];
        std::snprintf(msg, sizeof msg, "emu::launch: grid (%u, %u, %u), block (%u, %u, %u), %zu B dynamic shared memory: %s",
                      grid.x, grid.y, grid.z, block.x, block.y, block.z, smem, why);
        fail(msg);
    }
    const unsigned n = block.x * block.y * block.z;
    const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
    race::Hidden hidden; /* the scheduler's own state; host code runs before and after */
    std::atomic<unsigned long long> next{1};
    std::atomic<int> traps{0};
    Watchdog dog(hang_report_ms(), grid, block, blocks, next);
    /* work runs block `first` (none: ~0), then the next blocks not taken. */
    auto work = [&](unsigned long long first) {
        Block blk;
        blk.sched_race = race::current_fiber();
        blk.body = &body;
        blk.fibers.resize(n);
        blk.stacks = take_stacks(n);
#if KD_EMU_RACE
        std::vector<void *> &rf = race_fibers(n);
        for (unsigned t = 0; t < n; ++t) blk.fibers[t].race = rf[t];
#endif
        dog.add(&blk);
        for (unsigned long long b = first; b < blocks || (b = next.fetch_add(1, std::memory_order_relaxed)) < blocks;
             b = ~0ull) {
            run_block(blk, b, grid, block, smem);
            traps.fetch_add(blk.traps, std::memory_order_relaxed);
        }
        dog.drop(&blk);
        give_stacks(blk.stacks);
    };
    const unsigned long long w = std::min<unsigned long long>(workers(), blocks);
    /* The launching thread is one of the workers and always runs block 0,
     * so a fault there (a stray access, SIGSEGV) is raised on the caller's
     * thread, as with one worker: a Go caller's runtime then names the
     * signal (on a thread it does not know, the process dies of the signal
     * alone). */
    std::vector<std::thread> pool;
    for (unsigned long long i = 1; i < w; ++i) pool.emplace_back(work, ~0ull);
    work(0);
    for (std::thread &t : pool) t.join();
    return traps.load();
}

/* launch of a 1-D grid of 1-D blocks, no dynamic shared memory. */
inline int launch(unsigned grid_x, unsigned block_x, const std::function<void()> &body)
{
    return launch(dim3(grid_x), dim3(block_x), 0, body);
}

/* The stand-ins' state: each kernel's dynamic shared memory limit
 * (cudaFuncSetAttribute) and the last error (cudaGetLastError). */
struct Runtime {
    std::mutex mu;
    std::map<const void *, size_t> max_dynamic_smem;
};
inline Runtime &runtime()
{
    static Runtime *r = new Runtime;
    return *r;
}
inline size_t max_dynamic_smem(const void *kernel)
{
    Runtime &r = runtime();
    std::lock_guard<std::mutex> g(r.mu);
    auto it = r.max_dynamic_smem.find(kernel);
    return it == r.max_dynamic_smem.end() ? kDefaultDynamicSmem : it->second;
}

} /* namespace emu */

inline void __syncthreads() { emu::wait(emu::cur->block_bar, true); }
/* A memory barrier among the warp's lanes (all live lanes: see check_mask). */
inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    emu::check_mask(mask, "__syncwarp");
    emu::wait(emu::cur->warp_bar[emu::tid() >> 5], true);
}
[[noreturn]] inline void __trap() { throw emu::Trap{}; }

template <class T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32)
{
    return emu::shuffle(mask, v, emu::Shfl::idx, src, width, "__shfl_sync");
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
    return emu::shuffle(mask, v, emu::Shfl::up, static_cast<int>(delta), width, "__shfl_up_sync");
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
    return emu::shuffle(mask, v, emu::Shfl::down, static_cast<int>(delta), width, "__shfl_down_sync");
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32)
{
    return emu::shuffle(mask, v, emu::Shfl::bfly, lane_mask, width, "__shfl_xor_sync");
}
inline unsigned __ballot_sync(unsigned mask, int pred)
{
    return emu::reduce(mask, pred ? 1u << emu::lane() : 0u, [](unsigned a, unsigned b) { return a | b; }, "__ballot_sync");
}
inline int __all_sync(unsigned mask, int pred)
{
    return emu::reduce(mask, pred ? 1u : 0u, [](unsigned a, unsigned b) { return a & b; }, "__all_sync");
}
inline int __any_sync(unsigned mask, int pred)
{
    return emu::reduce(mask, pred ? 1u : 0u, [](unsigned a, unsigned b) { return a | b; }, "__any_sync");
}
/* The lanes of the warp that have not returned (the emulator models no
 * divergence within a warp beyond that). */
inline unsigned __activemask() { return emu::cur->live[emu::tid() >> 5]; }
inline unsigned __reduce_add_sync(unsigned mask, unsigned v)
{
    return emu::reduce(mask, v, [](unsigned a, unsigned b) { return a + b; }, "__reduce_add_sync");
}
inline int __reduce_add_sync(unsigned mask, int v)
{
    return static_cast<int>(__reduce_add_sync(mask, static_cast<unsigned>(v)));
}
inline unsigned __reduce_min_sync(unsigned mask, unsigned v)
{
    return emu::reduce(mask, v, [](unsigned a, unsigned b) { return a < b ? a : b; }, "__reduce_min_sync");
}
inline int __reduce_min_sync(unsigned mask, int v)
{
    return emu::reduce(mask, v, [](int a, int b) { return a < b ? a : b; }, "__reduce_min_sync");
}
inline unsigned __reduce_max_sync(unsigned mask, unsigned v)
{
    return emu::reduce(mask, v, [](unsigned a, unsigned b) { return a > b ? a : b; }, "__reduce_max_sync");
}
inline int __reduce_max_sync(unsigned mask, int v)
{
    return emu::reduce(mask, v, [](int a, int b) { return a > b ? a : b; }, "__reduce_max_sync");
}
inline unsigned __reduce_and_sync(unsigned mask, unsigned v)
{
    return emu::reduce(mask, v, [](unsigned a, unsigned b) { return a & b; }, "__reduce_and_sync");
}
inline unsigned __reduce_or_sync(unsigned mask, unsigned v)
{
    return emu::reduce(mask, v, [](unsigned a, unsigned b) { return a | b; }, "__reduce_or_sync");
}
inline unsigned __reduce_xor_sync(unsigned mask, unsigned v)
{
    return emu::reduce(mask, v, [](unsigned a, unsigned b) { return a ^ b; }, "__reduce_xor_sync");
}

/* Atomics: relaxed, as on the device (they order no other memory), and
 * real atomics across the workers running other blocks. */
namespace emu {
template <class T>
concept AtomicInt = std::is_same_v<T, int> || std::is_same_v<T, unsigned> || std::is_same_v<T, unsigned long long> ||
                    std::is_same_v<T, long long>;
/* update applies f to *p atomically and returns the old value. */
template <class T, class F>
inline T update(T *p, F f)
{
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &old, f(old), true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}
} /* namespace emu */
template <emu::AtomicInt T>
inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
template <emu::AtomicInt T>
inline T atomicSub(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }
template <emu::AtomicInt T>
inline T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
template <emu::AtomicInt T>
inline T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }
template <emu::AtomicInt T>
inline T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }
template <emu::AtomicInt T>
inline T atomicMax(T *p, T v) { return emu::update(p, [v](T o) { return o > v ? o : v; }); }
template <emu::AtomicInt T>
inline T atomicMin(T *p, T v) { return emu::update(p, [v](T o) { return o < v ? o : v; }); }
template <emu::AtomicInt T>
inline T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }
template <emu::AtomicInt T>
inline T atomicCAS(T *p, T compare, T v)
{
    __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return compare; /* the old value, whether or not it was swapped */
}
/* ((old >= v) ? 0 : old + 1) and (((old == 0) || (old > v)) ? v : old - 1). */
inline unsigned atomicInc(unsigned *p, unsigned v) { return emu::update(p, [v](unsigned o) { return o >= v ? 0u : o + 1; }); }
inline unsigned atomicDec(unsigned *p, unsigned v)
{
    return emu::update(p, [v](unsigned o) { return (o == 0 || o > v) ? v : o - 1; });
}
inline float atomicAdd(float *p, float v)
{
    static_assert(sizeof(float) == sizeof(unsigned));
    unsigned *u = reinterpret_cast<unsigned *>(p);
    const unsigned old = emu::update(u, [v](unsigned o) { return std::bit_cast<unsigned>(std::bit_cast<float>(o) + v); });
    return std::bit_cast<float>(old);
}
inline float atomicExch(float *p, float v)
{
    const unsigned old = __atomic_exchange_n(reinterpret_cast<unsigned *>(p), std::bit_cast<unsigned>(v), __ATOMIC_RELAXED);
    return std::bit_cast<float>(old);
}

inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __ffs(int v) { return __builtin_ffs(v); }
inline int __ffs(unsigned v) { return __builtin_ffs(static_cast<int>(v)); }
inline int __ffsll(long long v) { return __builtin_ffsll(v); }
inline int __clz(int v) { return v == 0 ? 32 : __builtin_clz(static_cast<unsigned>(v)); }
inline int __clzll(long long v) { return v == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(v)); }
inline unsigned __brev(unsigned v)
{
    unsigned r = 0;
    for (int i = 0; i < 32; ++i) r |= ((v >> i) & 1u) << (31 - i);
    return r;
}

/* CUDA's ::min and ::max (math_functions.hpp): the integer overloads
 * compare in the common type as CUDA's mixed overloads do (int with
 * unsigned is unsigned); the float ones are fminf/fmaxf (a NaN operand
 * gives the other). */
namespace emu {
template <class A, class B>
concept IntPair = std::is_integral_v<A> && std::is_integral_v<B>;
}
template <class A, class B>
    requires emu::IntPair<A, B>
inline std::common_type_t<A, B> min(A a, B b)
{
    using C = std::common_type_t<A, B>;
    return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(a) : static_cast<C>(b);
}
template <class A, class B>
    requires emu::IntPair<A, B>
inline std::common_type_t<A, B> max(A a, B b)
{
    using C = std::common_type_t<A, B>;
    return static_cast<C>(a) > static_cast<C>(b) ? static_cast<C>(a) : static_cast<C>(b);
}
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }

/* The bit reinterpretations: std::bit_cast, the same bytes read as the
 * other type of the same size. */
inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
inline int __float_as_int(float f) { return std::bit_cast<int>(f); }
inline float __int_as_float(int i) { return std::bit_cast<float>(i); }
inline long long __double_as_longlong(double d) { return std::bit_cast<long long>(d); }
inline double __longlong_as_double(long long i) { return std::bit_cast<double>(i); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __frcp_rn(float a) { return 1.0f / a; }
/* 1/sqrt(a) in double, then rounded once to f32: correctly rounded but in
 * the rare case where the double result falls within 2^-53 of a midpoint. */
inline float __frsqrt_rn(float a) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(a))); }
/* The device's rsqrtf is an approximation (at most 2 ULP); the host's is
 * __frsqrt_rn: see "Host versus device arithmetic" above. */
inline float rsqrtf(float a) { return __frsqrt_rn(a); }
/* The device's fast approximations, computed exactly here (see above). */
inline float __expf(float a) { return std::exp(a); }
inline float __logf(float a) { return std::log(a); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float a) { return a != a ? 0.0f : std::fmin(std::fmax(a, 0.0f), 1.0f); }
/* One rounding of a*b + c, as the device's fused multiply-add (std::fma on
 * floats is IEEE fusedMultiplyAdd; -ffp-contract=off keeps the other
 * operations unfused). */
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
/* Round to nearest even (the default rounding mode); inputs here are in
 * [0, 8], so the conversion cannot overflow. */
inline unsigned __float2uint_rn(float a) { return static_cast<unsigned>(std::nearbyint(a)); }

#if KD_EMU_CUDA_HEADERS
/* Stand-ins for the CUDA runtime calls a kernel's own host glue makes.
 * Launches are synchronous (so programmatic dependent launch, PDL, has
 * nothing left to overlap: its attribute is accepted and griddepcontrol
 * is a no-op); streams are ignored. */
namespace emu {
inline cudaError_t &last_error()
{
    static cudaError_t e = cudaSuccess;
    return e;
}
/* A device exception (a trapped thread): as on the device it is sticky,
 * returned by every later synchronisation and error query. */
inline cudaError_t &sticky_error()
{
    static cudaError_t e = cudaSuccess;
    return e;
}
inline cudaError_t set_error(cudaError_t e, const char *why)
{
    if (why) std::fprintf(stderr, "emu: %s\n", why);
    if (e != cudaSuccess) last_error() = e;
    if (e == cudaErrorLaunchFailure) sticky_error() = e;
    return e;
}
} /* namespace emu */

inline cudaError_t cudaGetLastError()
{
    const cudaError_t e = emu::last_error();
    emu::last_error() = cudaSuccess;
    return e != cudaSuccess ? e : emu::sticky_error();
}
inline cudaError_t cudaPeekAtLastError() { return emu::last_error() != cudaSuccess ? emu::last_error() : emu::sticky_error(); }
/* The names and texts of the codes the stand-ins return, and of those an
 * adapter may pass on (cudart's wording). */
struct emu_error_text {
    cudaError_t code;
    const char *name, *text;
};
inline constexpr emu_error_text emu_error_texts[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
};
inline const char *cudaGetErrorString(cudaError_t e)
{
    for (const emu_error_text &t : emu_error_texts)
        if (t.code == e) return t.text;
    return "unknown error";
}
inline const char *cudaGetErrorName(cudaError_t e)
{
    for (const emu_error_text &t : emu_error_texts)
        if (t.code == e) return t.name;
    return "cudaErrorUnknown";
}
inline cudaError_t cudaGetDevice(int *d)
{
    *d = 0;
    return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : emu::set_error(cudaErrorInvalidDevice, "cudaSetDevice: one emulated device, 0"); }
/* Launches are synchronous: these only report a device exception. */
inline cudaError_t cudaDeviceSynchronize() { return emu::sticky_error(); }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return emu::sticky_error(); }

/* Device memory is host memory here (under the emulated driver, the
 * driver's own allocations: a pointer an adapter gets is one of them).
 * cudaMalloc gives 256-byte aligned memory, as the device does; copies and
 * memsets run at once (the Async forms too: launches are synchronous, so
 * stream order is program order). Every copy kind is a memmove. */
inline cudaError_t cudaMalloc(void **p, size_t n)
{
    if (p == nullptr) return emu::set_error(cudaErrorInvalidValue, "cudaMalloc: a null result pointer");
    *p = n == 0 ? nullptr : std::aligned_alloc(256, (n + 255) / 256 * 256);
    return n == 0 || *p ? cudaSuccess : emu::set_error(cudaErrorMemoryAllocation, "cudaMalloc: out of host memory");
}
inline cudaError_t cudaFree(void *p)
{
    std::free(p);
    return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t)
{
    if (n > 0) std::memset(p, v, n);
    return emu::sticky_error();
}
inline cudaError_t cudaMemset(void *p, int v, size_t n) { return cudaMemsetAsync(p, v, n, nullptr); }
inline cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind, cudaStream_t)
{
    if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
        return emu::set_error(cudaErrorInvalidMemcpyDirection, "cudaMemcpy: not a cudaMemcpyKind");
    if (n > 0) std::memmove(dst, src, n);
    return emu::sticky_error();
}
inline cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind) { return cudaMemcpyAsync(dst, src, n, kind, nullptr); }
/* The emulated device: compute capability 9.0, 132 SMs, 227 KiB opt-in
 * shared memory per block, 48 KiB by default. */
inline cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr attr, int device)
{
    if (device != 0) return emu::set_error(cudaErrorInvalidDevice, "cudaDeviceGetAttribute: one emulated device, 0");
    switch (attr) {
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = static_cast<int>(emu::kMaxDynamicSmem); return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = static_cast<int>(emu::kDefaultDynamicSmem); return cudaSuccess;
    case cudaDevAttrMultiProcessorCount: *v = 132; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor: *v = 9; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor: *v = 0; return cudaSuccess;
    case cudaDevAttrMaxThreadsPerBlock: *v = 1024; return cudaSuccess;
    case cudaDevAttrWarpSize: *v = 32; return cudaSuccess;
    default: {
        char msg[96];
        std::snprintf(msg, sizeof msg, "cudaDeviceGetAttribute: attribute %d is not emulated", static_cast<int>(attr));
        return emu::set_error(cudaErrorNotSupported, msg);
    }
    }
}
/* cudaFuncSetAttribute: the dynamic shared memory limit is kept per
 * kernel and checked at launch; the carveout is accepted and ignored. */
inline cudaError_t cudaFuncSetAttribute(const void *func, cudaFuncAttribute attr, int value)
{
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        if (value < 0 || static_cast<size_t>(value) > emu::kMaxDynamicSmem)
            return emu::set_error(cudaErrorInvalidValue, "cudaFuncSetAttribute: MaxDynamicSharedMemorySize beyond 227 KiB");
        emu::Runtime &r = emu::runtime();
        std::lock_guard<std::mutex> g(r.mu);
        r.max_dynamic_smem[func] = static_cast<size_t>(value);
        return cudaSuccess;
    }
    if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) return cudaSuccess;
    char msg[96];
    std::snprintf(msg, sizeof msg, "cudaFuncSetAttribute: attribute %d is not emulated", static_cast<int>(attr));
    return emu::set_error(cudaErrorNotSupported, msg);
}
/* The template form (cuda_runtime.h declares it for nvcc only). */
template <class T>
inline cudaError_t cudaFuncSetAttribute(T *entry, cudaFuncAttribute attr, int value)
{
    return cudaFuncSetAttribute(reinterpret_cast<const void *>(entry), attr, value);
}
/* The C form cannot call the kernel: it has no parameter types. */
inline cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *, const void *, void **)
{
    return emu::set_error(cudaErrorNotSupported,
                          "cudaLaunchKernelExC is not emulated: launch through the cudaLaunchKernelEx template or emu::launch");
}
inline cudaError_t cudaLaunchKernel(const void *, dim3, dim3, void **, size_t, cudaStream_t)
{
    return emu::set_error(cudaErrorNotSupported,
                          "cudaLaunchKernel (C form) is not emulated: launch through the cudaLaunchKernelEx template or emu::launch");
}

/* The cudaLaunchKernelEx template (cuda_runtime.h), run on the emulator:
 * the arguments are converted to the kernel's parameter types as the
 * template does, the launch is checked as the device checks it (geometry,
 * dynamic shared memory against the kernel's limit), a cluster dimension
 * attribute is refused, and the grid runs before it returns. A trapped
 * thread is cudaErrorLaunchFailure. */
template <typename... ExpTypes, typename... ActTypes>
inline cudaError_t emu_cudaLaunchKernelEx(const cudaLaunchConfig_t *config, void (*kernel)(ExpTypes...), ActTypes &&...args)
{
    for (unsigned i = 0; i < config->numAttrs; ++i) {
        const cudaLaunchAttribute &a = config->attrs[i];
        if (a.id == cudaLaunchAttributeClusterDimension) {
            const auto &c = a.val.clusterDim;
            if (c.x * c.y * c.z > 1)
                return emu::set_error(cudaErrorNotSupported, "cudaLaunchKernelEx: thread block clusters are not emulated");
        } else if (a.id != cudaLaunchAttributeProgrammaticStreamSerialization) {
            char msg[96];
            std::snprintf(msg, sizeof msg, "cudaLaunchKernelEx: launch attribute %d is not emulated", static_cast<int>(a.id));
            return emu::set_error(cudaErrorNotSupported, msg);
        }
    }
    if (const char *why = emu::launch_error(config->gridDim, config->blockDim, config->dynamicSmemBytes)) {
        char msg[160];
        std::snprintf(msg, sizeof msg, "cudaLaunchKernelEx: %s", why);
        return emu::set_error(cudaErrorInvalidConfiguration, msg);
    }
    const size_t limit = emu::max_dynamic_smem(reinterpret_cast<const void *>(kernel));
    if (config->dynamicSmemBytes > limit) {
        char msg[160];
        std::snprintf(msg, sizeof msg, "cudaLaunchKernelEx: %zu B of dynamic shared memory, over the kernel's limit of %zu B (cudaFuncSetAttribute)",
                      config->dynamicSmemBytes, limit);
        return emu::set_error(cudaErrorInvalidValue, msg);
    }
    return [&](ExpTypes... coerced) {
        const int traps = emu::launch(config->gridDim, config->blockDim, config->dynamicSmemBytes, [&] { kernel(coerced...); });
        return traps > 0 ? emu::set_error(cudaErrorLaunchFailure, nullptr) : cudaSuccess;
    }(std::forward<ActTypes>(args)...);
}
#define cudaLaunchKernelEx emu_cudaLaunchKernelEx

/* KERNEL<<<GRID, BLOCK, SMEM, STREAM>>>(ARGS), which emu_cxx.py rewrites
 * to emu::chevron(GRID, BLOCK, SMEM, STREAM).launch(KERNEL, ARGS): the
 * cudaLaunchKernelEx stand-in with that configuration. As on the device
 * the launch returns nothing: a refused configuration is reported by
 * cudaGetLastError, a trapped thread by it and by every synchronisation
 * (sticky). The stream is ignored (launches are synchronous). */
namespace emu {
struct Chevron {
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    template <typename... ExpTypes, typename... ActTypes>
    void launch(void (*kernel)(ExpTypes...), ActTypes &&...args) const
    {
        cudaLaunchConfig_t config{};
        config.gridDim = grid;
        config.blockDim = block;
        config.dynamicSmemBytes = smem;
        config.stream = stream;
        (void)emu_cudaLaunchKernelEx(&config, kernel, std::forward<ActTypes>(args)...);
    }
};
inline Chevron chevron(dim3 grid, dim3 block, size_t smem = 0, cudaStream_t stream = nullptr)
{
    return Chevron{grid, block, smem, stream};
}
} /* namespace emu */
#endif /* KD_EMU_CUDA_HEADERS */

/* PTX asm, as kernels/emu/emu_cxx.py translates it (its table maps each
 * statement it knows to these). */
namespace emu::ptx {
inline unsigned laneid() { return emu::lane(); }
inline unsigned lanemask_lt() { return (1u << emu::lane()) - 1; }
/* griddepcontrol.wait / .launch_dependents: launches are synchronous, so
 * the primary grid has finished and there is nothing to release early. */
inline void griddepcontrol_wait() {}
inline void griddepcontrol_launch_dependents() {}
/* elect.sync: the lowest lane of membermask among those taking part is
 * elected; every lane learns its id, the elected one gets pred 1. */
inline unsigned elect_sync(unsigned membermask, unsigned *pred)
{
    emu::check_mask(membermask, "elect.sync");
    uint32_t who = 0;
    emu::round(0, &who);
    const uint32_t m = who & membermask;
    const unsigned leader = m ? static_cast<unsigned>(__builtin_ctz(m)) : 0u;
    *pred = m && emu::lane() == leader ? 1u : 0u;
    return leader;
}
/* refuse stops a kernel at a PTX asm statement the table does not know. */
[[noreturn]] inline void refuse(const char *text, const char *where)
{
    char msg[512];
    std::snprintf(msg, sizeof msg, "%s: PTX asm not in the emulator's table (kernels/emu/emu_cxx.py): \"%s\"", where, text);
    emu::fail(msg);
}
} /* namespace emu::ptx */

#endif /* KD_HOST_EMU_H */
