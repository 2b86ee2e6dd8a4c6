/* libcuda_emu: a stand-in libcuda.so.1 that runs this project's kernels
 * on the CPU (host_emu.h), so that the whole GPU path of difftest, the
 * dlopen shim of cuda/, the C parameter structs packed by bridge/ through
 * cgo, the launch geometry, the worker process and its restart after a
 * sticky error, runs on machines without a GPU. The kernels are compiled
 * into the library (../kernels.cu, one KD_FAULT_* at most, as in the real
 * build); the fatbin difftest loads is checked, not executed.
 *
 * The entry points are the CUDA Driver API's (CUDA Driver API reference,
 * "Modules", "Memory Management", "Execution Control", "Event
 * Management", "Error Handling"), with the C types it documents: CUresult
 * and CUdevice are int, handles are opaque pointers, CUdeviceptr is
 * unsigned long long. Behaviour modelled from that reference:
 *   - cuInit must come first (else CUDA_ERROR_NOT_INITIALIZED); memory,
 *     module and launch calls need a current context on the calling
 *     thread (cuCtxSetCurrent is per thread), else
 *     CUDA_ERROR_INVALID_CONTEXT.
 *   - cuMemAlloc returns 256-byte aligned memory; copies and memsets must
 *     stay inside one allocation (else CUDA_ERROR_INVALID_VALUE). Each
 *     allocation ends 0-255 bytes before an inaccessible page, so a kernel
 *     reading or writing past the end of its buffer (beyond that slack)
 *     kills the process with SIGSEGV, as an illegal address kills the
 *     context on a GPU.
 *   - cuModuleLoadData takes a fatbin, an ELF cubin or PTX text (else
 *     CUDA_ERROR_INVALID_IMAGE), and refuses a fatbin or PTX with nothing
 *     for the device's compute capability (CUDA_ERROR_NO_BINARY_FOR_GPU:
 *     SASS of the same major version and at most its architecture, or PTX
 *     at most its architecture); cuModuleGetFunction finds an entry point
 *     only if its name is in the image and compiled in here (else
 *     CUDA_ERROR_NOT_FOUND).
 *   - cuLaunchKernel checks the function, the geometry (block.x at most
 *     the entry's __launch_bounds__, grid and block y = z = 1: the only
 *     shapes the emulator runs, CUDA_ERROR_NOT_SUPPORTED otherwise) and
 *     reads exactly one parameter, the entry's C struct, through
 *     kernelParams[0]. It runs the grid before it returns. A thread that
 *     executes __trap makes the error CUDA_ERROR_LAUNCH_FAILED (sticky):
 *     it is returned by the next synchronising call and by every call
 *     after it, as a device exception is.
 *   - The GPU tests' hand-written PTX kernels (kd_store in
 *     cuda/gpu_test.go, kd_test_copy in bridge/testdata/test_copy.ptx) are
 *     modelled too, every access checked against the allocations: a store
 *     outside them gives CUDA_ERROR_ILLEGAL_ADDRESS, a misaligned one
 *     CUDA_ERROR_MISALIGNED_ADDRESS (both sticky), kd_test_copy's spin a
 *     hang, its trap CUDA_ERROR_LAUNCH_FAILED; so `go test -tags gpu`
 *     runs against this library too.
 *   - Events record host time (std::chrono::steady_clock); a launch runs
 *     to completion inside cuLaunchKernel, so the time between two events
 *     around it is the emulation's run time (difftest bench labels such
 *     times meaningless). cuMemcpyDtoD_v2 is a memcpy inside the
 *     allocations, and the device reports an L2 of 4 MiB
 *     (CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE), so bench's L2 flush and copy
 *     bandwidth run their real code paths at CPU speed.
 *   - KD_EMU_DEVICES=N (1 to 16, default 1) makes it N devices of the same
 *     name, told apart by their PCI bus id (the ordinal), each with its
 *     own primary context; the process's memory is shared by all, as one
 *     address space (each worker of difftest opens one device).
 *
 * Injected faults, for tests of the worker's error handling: with
 * KD_EMU_FAULT=ENTRY:CLASS in the environment, every launch of entry point
 * ENTRY fails with CLASS instead of running: "illegal-address" (sticky
 * CUDA_ERROR_ILLEGAL_ADDRESS at the next synchronisation), "launch-failed"
 * (sticky CUDA_ERROR_LAUNCH_FAILED), "hang" (the next synchronisation
 * never returns), "segv" (the process dies of SIGSEGV in the launch),
 * "lost" (the device falls off the bus: the process is killed by SIGKILL
 * in the launch, and the device's ordinal is appended to the file
 * KD_EMU_LOST names, which must be set; every later
 * cuDevicePrimaryCtxRetain of an ordinal listed there, in any process,
 * fails with CUDA_ERROR_DEVICE_UNAVAILABLE, so the device cannot be opened
 * again). ENTRY:CLASS@D limits the fault to launches on device D (the
 * current context's), e.g. KD_EMU_FAULT=kd_topk_transform_512:lost@1.
 *
 * Build (scripts/test-emu-driver does):
 *   g++ -x c++ -std=c++20 -O2 -ffp-contract=off -shared -fPIC \
 *       -fvisibility=hidden [-DKD_FAULT_<NAME>] -o DIR/libcuda.so.1 \
 *       kernels/emu/libcuda_emu.cu
 * and put DIR first on LD_LIBRARY_PATH. */

#include "host_emu.h"

#include "../kernels.cu"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace {

/* CUresult values (CUDA Driver API reference, enum cudaError_enum). */
enum : int {
    kSuccess = 0,
    kInvalidValue = 1,
    kOutOfMemory = 2,
    kNotInitialized = 3,
    kDeviceUnavailable = 46,
    kInvalidDevice = 101,
    kInvalidImage = 200,
    kInvalidContext = 201,
    kNoBinaryForGPU = 209,
    kInvalidHandle = 400,
    kNotFound = 500,
    kIllegalAddress = 700,
    kMisalignedAddress = 716,
    kLaunchFailed = 719,
    kNotSupported = 801,
};

struct ErrorText {
    int code;
    const char *name, *desc;
};
constexpr ErrorText kErrors[] = {
    {kSuccess, "CUDA_SUCCESS", "no error"},
    {kInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {kOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {kNotInitialized, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {kDeviceUnavailable, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {kInvalidDevice, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {kInvalidImage, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {kInvalidContext, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {kNoBinaryForGPU, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {kInvalidHandle, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {kNotFound, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {kIllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {kMisalignedAddress, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {kLaunchFailed, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {kNotSupported, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

/* The one emulated device: compute capability 9.0 (difftest then picks
 * the fatbin's sm_90 image), or MAJOR.MINOR from KD_EMU_CC, to see which
 * image difftest picks for another GPU, or that it refuses one the fatbin
 * cannot serve. The kernels run the same either way. */
void device_cc(int *major, int *minor)
{
    *major = 9;
    *minor = 0;
    const char *cc = std::getenv("KD_EMU_CC");
    if (cc == nullptr) return;
    /* Exactly DIGITS "." DIGIT. */
    const size_t len = std::strlen(cc);
    const char *dot = std::strchr(cc, '.');
    bool ok = dot != nullptr && dot > cc && dot - cc <= 2 && len == static_cast<size_t>(dot - cc) + 2;
    for (const char *c = cc; ok && *c; ++c) ok = c == dot || (*c >= '0' && *c <= '9');
    const int a = ok ? std::atoi(cc) : 0, b = ok ? dot[1] - '0' : 0;
    if (!ok || a < 1) {
        std::fprintf(stderr, "libcuda_emu: KD_EMU_CC=%s: want MAJOR.MINOR, e.g. 12.0 (minor 0-9)\n", cc);
        std::abort();
    }
    *major = a;
    *minor = b;
}
constexpr size_t kTotalMem = size_t{16} << 30;
constexpr int kL2Bytes = 4 << 20;
constexpr int kMaxDevices = 16;

/* device_count is KD_EMU_DEVICES (1 to kMaxDevices), default 1; anything
 * else stops the process. */
int device_count()
{
    const char *s = std::getenv("KD_EMU_DEVICES");
    if (s == nullptr || *s == 0) return 1;
    char *end = nullptr;
    const long n = std::strtol(s, &end, 10);
    if (*end != 0 || n < 1 || n > kMaxDevices) {
        std::fprintf(stderr, "libcuda_emu: KD_EMU_DEVICES=%s: want a device count from 1 to %d\n", s, kMaxDevices);
        std::abort();
    }
    return static_cast<int>(n);
}
constexpr int kDriverVersion = 13000; /* CUDA 13.0 */

/* What a launch did, as the device would report it at the next
 * synchronisation: kSuccess, a sticky fault code, or kHangs. */
constexpr int kHangs = -1;

/* An entry point compiled into this library: its launch bound, whether
 * it runs on the fiber emulator (blocks of whole warps), and run, which
 * executes the grid with the parameters as cuLaunchKernel received them. */
struct Entry {
    const char *name;
    unsigned max_threads; /* __launch_bounds__ */
    bool warps;           /* block.x must be a multiple of 32 */
    int (*run)(unsigned grid, unsigned block, void **params);
};

/* run_kernel runs a kernel of ../kernels.cu: one parameter, its C struct
 * P, read with the struct's size as the driver reads it (the size the
 * image's parameter info gives); a trapped thread is CUDA_ERROR_LAUNCH_FAILED. */
template <class P, void (*K)(P)>
int run_kernel(unsigned grid, unsigned block, void **params)
{
    P p;
    std::memcpy(&p, params[0], sizeof p);
    return emu::launch(grid, block, [&] { K(p); }) > 0 ? kLaunchFailed : kSuccess;
}

int run_store(unsigned, unsigned, void **params);
int run_test_copy(unsigned, unsigned, void **params);

const Entry kEntries[] = {
    /* Every entry point of ../kernels.cu (KD_KERNEL_ENTRIES, generated). */
#define KD_EMU_ENTRY(contract, entry, params, threads) {#entry, threads, true, run_kernel<params, entry>},
    KD_KERNEL_ENTRIES(KD_EMU_ENTRY)
#undef KD_EMU_ENTRY
    /* The hand-written PTX test kernels of the GPU tests. */
    {"kd_store", 1024, false, run_store},          /* cuda/gpu_test.go */
    {"kd_test_copy", 1024, false, run_test_copy},  /* bridge/testdata/test_copy.ptx */
};

struct Module {
    std::string image; /* the bytes loaded, to look entry names up in */
};
struct Function {
    const Entry *entry;
    Module *module;
};
struct Event {
    std::chrono::steady_clock::time_point t;
    bool recorded = false;
};
struct Alloc {
    void *map; /* the mapping: pages for the data, then one PROT_NONE page */
    size_t map_len, size;
};

std::mutex g_mu; /* every entry point holds it: one device, one queue */
bool g_inited = false;
int g_ctx_refs[kMaxDevices] = {}; /* primary context references per device */
int g_sticky = kSuccess;  /* a device exception: every call fails with it */
int g_pending = kSuccess; /* an error the next synchronisation reports */
bool g_hang = false;      /* the next synchronisation never returns */
std::map<uintptr_t, Alloc> g_allocs;
char g_primary_ctx[kMaxDevices]; /* the address of element d is device d's primary context */
thread_local void *t_current = nullptr;

/* current_device is the ordinal of the calling thread's current context
 * (0 when there is none). */
int current_device()
{
    if (t_current == nullptr) return 0;
    return static_cast<int>(static_cast<char *>(t_current) - g_primary_ctx);
}

/* fault_for returns the injected fault class of entry name on the current
 * device ("" for none); a KD_EMU_FAULT that is not ENTRY:CLASS or
 * ENTRY:CLASS@DEVICE stops the process. */
std::string fault_for(const char *name)
{
    const char *f = std::getenv("KD_EMU_FAULT");
    if (f == nullptr || *f == 0) return "";
    const std::string s = f;
    const size_t colon = s.find(':');
    const size_t at = s.find('@', colon == std::string::npos ? 0 : colon);
    const std::string cls = s.substr(colon + 1, at == std::string::npos ? std::string::npos : at - colon - 1);
    bool ok = colon != std::string::npos && colon > 0 && !cls.empty();
    int dev = -1;
    if (ok && at != std::string::npos) {
        char *end = nullptr;
        dev = static_cast<int>(std::strtol(s.c_str() + at + 1, &end, 10));
        ok = at + 1 < s.size() && *end == 0 && dev >= 0;
    }
    if (!ok) {
        std::fprintf(stderr, "libcuda_emu: KD_EMU_FAULT=%s: want ENTRY:CLASS or ENTRY:CLASS@DEVICE\n", f);
        std::abort();
    }
    if (s.substr(0, colon) != name || (dev >= 0 && dev != current_device())) return "";
    return cls;
}

/* lost_file is KD_EMU_LOST: the file listing lost device ordinals. */
const char *lost_file() { return std::getenv("KD_EMU_LOST"); }

/* device_lost reports whether ordinal d is listed in KD_EMU_LOST's file. */
bool device_lost(int d)
{
    const char *path = lost_file();
    if (path == nullptr || *path == 0) return false;
    FILE *fp = std::fopen(path, "r");
    if (fp == nullptr) return false;
    int x;
    bool lost = false;
    while (std::fscanf(fp, "%d", &x) == 1) lost = lost || x == d;
    std::fclose(fp);
    return lost;
}

/* lose marks the current device lost in KD_EMU_LOST's file and kills the
 * process, as a device falling off the bus takes its process with it. */
[[noreturn]] void lose()
{
    const char *path = lost_file();
    if (path == nullptr || *path == 0) {
        std::fprintf(stderr, "libcuda_emu: KD_EMU_FAULT class lost needs KD_EMU_LOST=FILE\n");
        std::abort();
    }
    FILE *fp = std::fopen(path, "a");
    if (fp != nullptr) {
        std::fprintf(fp, "%d\n", current_device());
        std::fclose(fp);
    }
    std::raise(SIGKILL);
    std::abort();
}

/* ready checks what every call after cuInit needs: initialised, no sticky
 * error, and (when ctx) a current context on this thread. */
int ready(bool ctx)
{
    if (!g_inited) return kNotInitialized;
    if (g_sticky != kSuccess) return g_sticky;
    if (ctx && (t_current == nullptr || g_ctx_refs[current_device()] == 0)) return kInvalidContext; /* none, or reset */
    return kSuccess;
}

/* device_ready is ready(false) for a call on device d: one of the
 * device_count() devices, else CUDA_ERROR_INVALID_DEVICE. */
int device_ready(int d)
{
    if (int e = ready(false)) return e;
    return d >= 0 && d < device_count() ? kSuccess : kInvalidDevice;
}

/* synchronise reports (and clears, or makes sticky) the pending error. */
int synchronise()
{
    if (g_hang) {
        g_mu.unlock(); /* others may still call in; this thread waits forever */
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    }
    const int e = g_pending;
    g_pending = kSuccess;
    if (e == kIllegalAddress || e == kMisalignedAddress || e == kLaunchFailed) g_sticky = e;
    return e;
}

/* find returns the allocation holding [p, p+n), or nullptr. */
const Alloc *find(uintptr_t p, size_t n)
{
    auto it = g_allocs.upper_bound(p);
    if (it == g_allocs.begin()) return nullptr;
    --it;
    const uintptr_t base = it->first;
    if (p - base > it->second.size || n > it->second.size - (p - base)) return nullptr;
    return &it->second;
}

/* The largest image taken: the length comes from the image's own header
 * (the driver API passes no size), so a corrupt header must not send the
 * copy below past memory that exists. */
constexpr size_t kMaxImage = size_t{1} << 30;

/* image_size returns the byte length of a fatbin or ELF image at p, or 0
 * when p is neither; PTX text is NUL-terminated. Fatbin container header:
 * u32 magic 0xBA55ED50, u16 version, u16 header size, u64 payload size. */
size_t image_size(const unsigned char *p)
{
    if (strnlen(reinterpret_cast<const char *>(p), 4) < 4) return 0; /* both magics are 4 non-zero bytes */
    uint32_t magic;
    std::memcpy(&magic, p, 4);
    if (magic == 0xBA55ED50u) {
        uint16_t hsize;
        uint64_t fsize;
        std::memcpy(&hsize, p + 6, 2);
        std::memcpy(&fsize, p + 8, 8);
        return fsize <= kMaxImage ? hsize + fsize : kMaxImage + 1;
    }
    if (std::memcmp(p, "\x7f" "ELF", 4) == 0 && p[4] == 2) { /* ELF64: e_shoff, e_shentsize, e_shnum */
        uint64_t shoff;
        uint16_t shentsize, shnum;
        std::memcpy(&shoff, p + 0x28, 8);
        std::memcpy(&shentsize, p + 0x3A, 2);
        std::memcpy(&shnum, p + 0x3C, 2);
        return shoff <= kMaxImage ? shoff + size_t{shentsize} * shnum : kMaxImage + 1;
    }
    return 0;
}

/* device_access checks an access of n bytes at device address p, aligned
 * to align, as the device's memory system would: CUDA_ERROR_MISALIGNED_ADDRESS
 * for a misaligned one, CUDA_ERROR_ILLEGAL_ADDRESS outside every allocation. */
int device_access(uint64_t p, size_t n, size_t align)
{
    if (p % align != 0) return kMisalignedAddress;
    return find(p, n) != nullptr ? kSuccess : kIllegalAddress;
}

/* run_store is kd_store(u64 p, u32 v): *(u32 *)p = v. */
int run_store(unsigned, unsigned, void **params)
{
    uint64_t p;
    uint32_t v;
    std::memcpy(&p, params[0], 8);
    std::memcpy(&v, params[1], 4);
    if (int e = device_access(p, 4, 4)) return e;
    std::memcpy(reinterpret_cast<void *>(p), &v, 4);
    return kSuccess;
}

/* run_test_copy is kd_test_copy(struct {u64 x, y, n}): y[i] = x[i] ^ 0x5A
 * for i in [0, n), unless x[0] selects a fault: 1 stores a u32 1 TiB past
 * y, 2 spins while x[0] != 0, 4 traps, 5 stores a u32 at (y & ~3) + 1. */
int run_test_copy(unsigned, unsigned, void **params)
{
    uint64_t a[3];
    std::memcpy(a, params[0], sizeof a);
    const uint64_t x = a[0], y = a[1], n = a[2];
    if (int e = device_access(x, 1, 1)) return e;
    switch (*reinterpret_cast<const uint8_t *>(x)) {
    case 1: return device_access(y + (uint64_t{1} << 40), 4, 4);
    case 2: return kHangs;
    case 4: return kLaunchFailed;
    case 5: return device_access((y & ~uint64_t{3}) + 1, 4, 4);
    }
    for (uint64_t i = 0; i < n; ++i) {
        if (int e = device_access(x + i, 1, 1)) return e;
        if (int e = device_access(y + i, 1, 1)) return e;
        *reinterpret_cast<uint8_t *>(y + i) = *reinterpret_cast<const uint8_t *>(x + i) ^ 0x5A;
    }
    return kSuccess;
}

/* fatbin_serves reports whether the fatbin containers in p[0, n) hold an
 * image a device of compute capability major.minor can load, by the
 * driver's rule: SASS of the same major version and an architecture at
 * most the device's, else PTX of an architecture at most the device's
 * (JIT). Container: u32 magic, u16 version, u16 header size, u64 size of
 * the entries; entry: u16 kind (1 PTX, 2 or 16 SASS), u16 version, u32
 * header size, u64 payload size, ..., u32 architecture (10 * major +
 * minor) at byte 28. */
bool fatbin_serves(const unsigned char *p, size_t n, int major, int minor)
{
    const unsigned dev = 10u * static_cast<unsigned>(major) + static_cast<unsigned>(minor);
    bool sass = false, ptx = false;
    size_t off = 0;
    while (n - off >= 16) {
        uint32_t magic;
        uint16_t hsize;
        uint64_t fsize;
        std::memcpy(&magic, p + off, 4);
        std::memcpy(&hsize, p + off + 6, 2);
        std::memcpy(&fsize, p + off + 8, 8);
        if (magic != 0xBA55ED50u || hsize > n - off || fsize > n - off - hsize) break;
        size_t e = off + hsize;
        const size_t end = e + fsize;
        while (end - e >= 32) {
            uint16_t kind;
            uint32_t ehsize, arch;
            uint64_t psize;
            std::memcpy(&kind, p + e, 2);
            std::memcpy(&ehsize, p + e + 4, 4);
            std::memcpy(&psize, p + e + 8, 8);
            std::memcpy(&arch, p + e + 28, 4);
            if ((kind == 2 || kind == 16) && arch / 10 == static_cast<unsigned>(major) && arch <= dev) sass = true;
            if (kind == 1 && arch <= dev) ptx = true;
            if (ehsize == 0 || ehsize > end - e || psize > end - e - ehsize) break;
            e += ehsize + psize;
        }
        off = end;
    }
    return sass || ptx;
}

/* ptx_serves reports whether PTX text's ".target sm_XY" is at most the
 * device's architecture (the driver JIT-compiles it). */
bool ptx_serves(const char *text, int major, int minor)
{
    const char *t = std::strstr(text, ".target sm_");
    unsigned arch;
    if (t == nullptr || std::sscanf(t, ".target sm_%u", &arch) != 1) return false;
    return arch <= 10u * static_cast<unsigned>(major) + static_cast<unsigned>(minor);
}

/* error_text sets *s to the field of code's entry in kErrors (nullptr
 * for a code not there): cuGetErrorName's and cuGetErrorString's answer. */
int error_text(int code, const char **s, const char *ErrorText::*field)
{
    if (s == nullptr) return kInvalidValue;
    for (const ErrorText &e : kErrors)
        if (e.code == code) {
            *s = e.*field;
            return kSuccess;
        }
    *s = nullptr;
    return kInvalidValue;
}

} /* namespace */

extern "C" {

#define KD_EXPORT __attribute__((visibility("default")))

KD_EXPORT int cuInit(unsigned flags)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (flags != 0) return kInvalidValue;
    g_inited = true;
    return kSuccess;
}

KD_EXPORT int cuDriverGetVersion(int *v)
{
    if (v == nullptr) return kInvalidValue;
    *v = kDriverVersion;
    return kSuccess;
}

KD_EXPORT int cuGetErrorName(int code, const char **s) { return error_text(code, s, &ErrorText::name); }

KD_EXPORT int cuGetErrorString(int code, const char **s) { return error_text(code, s, &ErrorText::desc); }

KD_EXPORT int cuDeviceGetCount(int *n)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = ready(false)) return e;
    if (n == nullptr) return kInvalidValue;
    *n = device_count();
    return kSuccess;
}

KD_EXPORT int cuDeviceGet(int *d, int ordinal)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = device_ready(ordinal)) return e;
    *d = ordinal;
    return kSuccess;
}

KD_EXPORT int cuDeviceGetName(char *name, int len, int d)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = device_ready(d)) return e;
    if (name == nullptr || len <= 0) return kInvalidValue;
    std::snprintf(name, static_cast<size_t>(len), "kerneldiff host emulator");
    return kSuccess;
}

KD_EXPORT int cuDeviceGetAttribute(int *v, int attr, int d)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = device_ready(d)) return e;
    if (v == nullptr) return kInvalidValue;
    /* CUdevice_attribute numbers (CUDA Driver API reference). */
    switch (attr) {
    case 1: *v = 1024; break;          /* MAX_THREADS_PER_BLOCK */
    case 8: *v = 48 * 1024; break;     /* MAX_SHARED_MEMORY_PER_BLOCK */
    case 13: *v = 1000000; break;      /* CLOCK_RATE, kHz */
    case 16: *v = 1; break;            /* MULTIPROCESSOR_COUNT */
    case 17: *v = 0; break;            /* KERNEL_EXEC_TIMEOUT */
    case 32: *v = 0; break;            /* ECC_ENABLED */
    case 33: *v = d; break;            /* PCI_BUS_ID: the ordinal tells devices apart */
    case 34: case 50: *v = 0; break;   /* PCI device, domain */
    case 38: *v = kL2Bytes; break;     /* L2_CACHE_SIZE, bytes */
    case 36: *v = 1000000; break;      /* MEMORY_CLOCK_RATE, kHz */
    case 75: { int mi; device_cc(v, &mi); break; } /* COMPUTE_CAPABILITY_MAJOR */
    case 76: { int ma; device_cc(&ma, v); break; } /* COMPUTE_CAPABILITY_MINOR */
    case 97: *v = 48 * 1024; break;    /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    default: return kInvalidValue;
    }
    return kSuccess;
}

KD_EXPORT int cuDeviceTotalMem_v2(size_t *bytes, int d)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = device_ready(d)) return e;
    *bytes = kTotalMem;
    return kSuccess;
}

KD_EXPORT int cuDevicePrimaryCtxRetain(void **ctx, int d)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = device_ready(d)) return e;
    if (device_lost(d)) return kDeviceUnavailable;
    ++g_ctx_refs[d];
    *ctx = &g_primary_ctx[d];
    return kSuccess;
}

KD_EXPORT int cuDevicePrimaryCtxRelease_v2(int d)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (!g_inited) return kNotInitialized;
    if (d < 0 || d >= device_count()) return kInvalidDevice;
    if (g_ctx_refs[d] == 0) return kInvalidContext;
    --g_ctx_refs[d];
    int refs = 0;
    for (int r : g_ctx_refs) refs += r;
    if (refs == 0) {
        /* The last reference resets the context: its memory is freed and a
         * sticky error is gone (modules and events are leaked, not reused). */
        for (auto &a : g_allocs) munmap(a.second.map, a.second.map_len);
        g_allocs.clear();
        g_sticky = g_pending = kSuccess;
        g_hang = false;
        t_current = nullptr;
    }
    return kSuccess;
}

KD_EXPORT int cuCtxSetCurrent(void *ctx)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (!g_inited) return kNotInitialized;
    const char *c = static_cast<const char *>(ctx);
    if (ctx != nullptr && (c < g_primary_ctx || c >= g_primary_ctx + device_count() || g_ctx_refs[c - g_primary_ctx] == 0))
        return kInvalidContext;
    t_current = ctx;
    return kSuccess;
}

KD_EXPORT int cuCtxSynchronize(void)
{
    g_mu.lock();
    int e = ready(true);
    if (e == kSuccess) e = synchronise();
    g_mu.unlock();
    return e;
}

KD_EXPORT int cuMemAlloc_v2(unsigned long long *dptr, size_t n)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = ready(true)) return e;
    if (dptr == nullptr || n == 0) return kInvalidValue;
    size_t used = 0;
    for (const auto &a : g_allocs) used += a.second.size;
    if (n > kTotalMem - used) return kOutOfMemory;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t padded = (n + 255) / 256 * 256;
    const size_t data_pages = (padded + page - 1) / page * page;
    void *m = mmap(nullptr, data_pages + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return kOutOfMemory;
    if (mprotect(static_cast<char *>(m) + data_pages, page, PROT_NONE) != 0) {
        munmap(m, data_pages + page);
        return kOutOfMemory;
    }
    const uintptr_t p = reinterpret_cast<uintptr_t>(m) + data_pages - padded;
    g_allocs[p] = Alloc{m, data_pages + page, n};
    *dptr = p;
    return kSuccess;
}

KD_EXPORT int cuMemFree_v2(unsigned long long dptr)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = ready(true)) return e;
    auto it = g_allocs.find(static_cast<uintptr_t>(dptr));
    if (it == g_allocs.end()) return kInvalidValue;
    munmap(it->second.map, it->second.map_len);
    g_allocs.erase(it);
    return kSuccess;
}

KD_EXPORT int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = ready(true)) return e;
    if (find(dst, n) == nullptr || (src == nullptr && n > 0)) return kInvalidValue;
    if (n > 0) std::memcpy(reinterpret_cast<void *>(dst), src, n);
    return kSuccess;
}

KD_EXPORT int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n)
{
    g_mu.lock();
    int e = ready(true);
    if (e == kSuccess) e = synchronise(); /* a synchronous copy waits for the device */
    if (e == kSuccess && (find(src, n) == nullptr || (dst == nullptr && n > 0))) e = kInvalidValue;
    if (e == kSuccess && n > 0) std::memcpy(dst, reinterpret_cast<const void *>(src), n);
    g_mu.unlock();
    return e;
}

KD_EXPORT int cuMemcpyDtoD_v2(unsigned long long dst, unsigned long long src, size_t n)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = ready(true)) return e;
    if (find(dst, n) == nullptr || find(src, n) == nullptr) return kInvalidValue;
    if (n > 0) std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), n);
    return kSuccess;
}

KD_EXPORT int cuMemsetD8_v2(unsigned long long dst, unsigned char v, size_t n)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = ready(true)) return e;
    if (find(dst, n) == nullptr) return kInvalidValue;
    if (n > 0) std::memset(reinterpret_cast<void *>(dst), v, n);
    return kSuccess;
}

KD_EXPORT int cuModuleLoadData(void **mod, const void *image)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = ready(true)) return e;
    if (mod == nullptr || image == nullptr) return kInvalidValue;
    const auto *p = static_cast<const unsigned char *>(image);
    int major, minor;
    device_cc(&major, &minor);
    size_t n = image_size(p);
    if (n > kMaxImage) return kInvalidImage;
    if (n == 0) {
        const char *text = static_cast<const char *>(image);
        if (std::strstr(text, ".version") == nullptr || std::strstr(text, ".entry") == nullptr) return kInvalidImage;
        n = std::strlen(text);
        if (!ptx_serves(text, major, minor)) return kNoBinaryForGPU;
    } else if (std::memcmp(p, "\x7f" "ELF", 4) != 0 && !fatbin_serves(p, n, major, minor)) {
        return kNoBinaryForGPU;
    }
    try {
        *mod = new Module{std::string(reinterpret_cast<const char *>(p), n)};
    } catch (const std::bad_alloc &) {
        return kOutOfMemory;
    }
    return kSuccess;
}

KD_EXPORT int cuModuleUnload(void *mod)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = ready(true)) return e;
    if (mod == nullptr) return kInvalidHandle;
    delete static_cast<Module *>(mod);
    return kSuccess;
}

KD_EXPORT int cuModuleGetFunction(void **fn, void *mod, const char *name)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = ready(true)) return e;
    if (fn == nullptr || mod == nullptr || name == nullptr) return kInvalidValue;
    auto *m = static_cast<Module *>(mod);
    /* The name with its terminating NUL, as in an ELF string table or a
     * PTX ".entry NAME(" (followed by '(' there). */
    const std::string z(name, std::strlen(name) + 1);
    const std::string paren = std::string(name) + "(";
    if (m->image.find(z) == std::string::npos && m->image.find(paren) == std::string::npos) return kNotFound;
    for (const Entry &e : kEntries)
        if (std::strcmp(e.name, name) == 0) {
            *fn = new Function{&e, m};
            return kSuccess;
        }
    return kNotFound;
}

KD_EXPORT int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                             unsigned shmem, void *stream, void **params, void **extra)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = ready(true)) return e;
    if (f == nullptr) return kInvalidHandle;
    const Entry &e = *static_cast<Function *>(f)->entry;
    if (stream != nullptr || extra != nullptr || params == nullptr) return kInvalidValue;
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return kInvalidValue;
    if (bx * by * bz > e.max_threads || shmem > 48 * 1024) return kInvalidValue;
    if (gy != 1 || gz != 1 || by != 1 || bz != 1 || (e.warps && bx % 32 != 0)) return kNotSupported;
    const std::string fault = fault_for(e.name);
    if (fault == "illegal-address") {
        g_pending = kIllegalAddress;
        return kSuccess;
    }
    if (fault == "launch-failed") {
        g_pending = kLaunchFailed;
        return kSuccess;
    }
    if (fault == "hang") {
        g_hang = true;
        return kSuccess;
    }
    if (fault == "segv") std::raise(SIGSEGV);
    if (fault == "lost") lose();
    if (!fault.empty()) {
        std::fprintf(stderr, "libcuda_emu: KD_EMU_FAULT: unknown class %s\n", fault.c_str());
        std::abort();
    }
    const int r = e.run(gx, bx, params);
    if (r == kHangs) g_hang = true;
    else if (r != kSuccess && g_pending == kSuccess) g_pending = r;
    return kSuccess;
}

KD_EXPORT int cuEventCreate(void **ev, unsigned flags)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = ready(true)) return e;
    if (ev == nullptr || flags != 0) return kInvalidValue;
    *ev = new Event{};
    return kSuccess;
}

KD_EXPORT int cuEventRecord(void *ev, void *stream)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = ready(true)) return e;
    if (ev == nullptr) return kInvalidHandle;
    if (stream != nullptr) return kInvalidValue;
    auto *x = static_cast<Event *>(ev);
    x->t = std::chrono::steady_clock::now();
    x->recorded = true;
    return kSuccess;
}

KD_EXPORT int cuEventSynchronize(void *ev)
{
    g_mu.lock();
    int e = ready(true);
    if (e == kSuccess && ev == nullptr) e = kInvalidHandle;
    if (e == kSuccess) e = synchronise();
    g_mu.unlock();
    return e;
}

KD_EXPORT int cuEventElapsedTime_v2(float *ms, void *a, void *b)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (int e = ready(true)) return e;
    if (ms == nullptr || a == nullptr || b == nullptr) return kInvalidHandle;
    const auto *x = static_cast<Event *>(a), *y = static_cast<Event *>(b);
    if (!x->recorded || !y->recorded) return kInvalidHandle;
    *ms = std::chrono::duration<float, std::milli>(y->t - x->t).count();
    return kSuccess;
}

KD_EXPORT int cuEventDestroy_v2(void *ev)
{
    std::lock_guard<std::mutex> l(g_mu);
    if (!g_inited) return kNotInitialized;
    if (ev == nullptr) return kInvalidHandle;
    delete static_cast<Event *>(ev);
    return kSuccess;
}

} /* extern "C" */
