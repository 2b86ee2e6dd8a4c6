// The dlopen shim over libcuda.so.1 (opened by internal/dl): explicit
// versioned symbols, no CUDA headers. The C types are declared here from
// the CUDA Driver API reference (CUresult and CUdevice are int, handles
// are opaque pointers, CUdeviceptr is unsigned long long on 64-bit hosts).

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUevent;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;

// Symbol table. Required entries come first; a missing one fails kd_bind.
enum {
	S_cuInit, S_cuDriverGetVersion, S_cuDeviceGetCount, S_cuDeviceGet,
	S_cuDeviceGetName, S_cuDeviceGetAttribute, S_cuDeviceTotalMem_v2,
	S_cuDevicePrimaryCtxRetain, S_cuDevicePrimaryCtxRelease_v2,
	S_cuCtxSetCurrent, S_cuCtxSynchronize, S_cuMemAlloc_v2, S_cuMemFree_v2,
	S_cuMemcpyHtoD_v2, S_cuMemcpyDtoH_v2, S_cuMemsetD8_v2,
	S_cuModuleLoadData, S_cuModuleUnload, S_cuModuleGetFunction,
	S_cuLaunchKernel, S_cuEventCreate, S_cuEventRecord,
	S_cuEventSynchronize, S_cuEventDestroy_v2,
	S_REQUIRED,
	// Optional: error text, and the event timer under its CUDA 12.8+ name
	// with the older name as fallback.
	S_cuGetErrorName = S_REQUIRED, S_cuGetErrorString,
	S_cuEventElapsedTime_v2, S_cuEventElapsedTime,
	// Optional: device-to-device copies (difftest bench's bandwidth).
	S_cuMemcpyDtoD_v2,
	S_COUNT
};

static const char *kd_names[S_COUNT] = {
	"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet",
	"cuDeviceGetName", "cuDeviceGetAttribute", "cuDeviceTotalMem_v2",
	"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2",
	"cuCtxSetCurrent", "cuCtxSynchronize", "cuMemAlloc_v2", "cuMemFree_v2",
	"cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemsetD8_v2",
	"cuModuleLoadData", "cuModuleUnload", "cuModuleGetFunction",
	"cuLaunchKernel", "cuEventCreate", "cuEventRecord",
	"cuEventSynchronize", "cuEventDestroy_v2",
	"cuGetErrorName", "cuGetErrorString",
	"cuEventElapsedTime_v2", "cuEventElapsedTime",
	"cuMemcpyDtoD_v2",
};

// kd_lib is one bound library: its dlopen handle and symbol table. Each
// successful kd_bind allocates one; it is never freed, because a driver
// library is never unloaded (dlclose of libcuda is unsafe while its
// threads run).
typedef struct {
	void *handle;
	void *sym[S_COUNT];
} kd_lib;

// kd_bind binds every symbol of h, the library dlopen'ed from path. It
// returns a new kd_lib, or NULL with dlerror's text in err; on failure it
// dlcloses h, so nothing stays loaded.
static kd_lib *kd_bind(void *h, const char *path, char *err, size_t errlen) {
	kd_lib *L = calloc(1, sizeof *L);
	if (L == NULL) {
		snprintf(err, errlen, "%s: out of host memory for the symbol table", path);
		dlclose(h);
		return NULL;
	}
	L->handle = h;
	for (int i = 0; i < S_COUNT; i++) {
		dlerror();
		L->sym[i] = dlsym(h, kd_names[i]);
		if (L->sym[i] == NULL && i < S_REQUIRED) {
			const char *e = dlerror();
			snprintf(err, errlen, "%s", e ? e : kd_names[i]);
			free(L);
			dlclose(h);
			return NULL;
		}
	}
	if (L->sym[S_cuEventElapsedTime_v2] == NULL && L->sym[S_cuEventElapsedTime] == NULL) {
		snprintf(err, errlen, "%s: undefined symbol: cuEventElapsedTime_v2 (and cuEventElapsedTime)", path);
		free(L);
		dlclose(h);
		return NULL;
	}
	return L;
}

static const char *kd_elapsed_name(kd_lib *L) {
	return L->sym[S_cuEventElapsedTime_v2] ? "cuEventElapsedTime_v2" : "cuEventElapsedTime";
}

#define KD_FN(idx, ret, args) ((ret (*) args) L->sym[idx])

static CUresult kd_cuInit(kd_lib *L) { return KD_FN(S_cuInit, CUresult, (unsigned))(0); }
static CUresult kd_cuDriverGetVersion(kd_lib *L, int *v) { return KD_FN(S_cuDriverGetVersion, CUresult, (int *))(v); }
static CUresult kd_cuDeviceGetCount(kd_lib *L, int *n) { return KD_FN(S_cuDeviceGetCount, CUresult, (int *))(n); }
static CUresult kd_cuDeviceGet(kd_lib *L, CUdevice *d, int ord) { return KD_FN(S_cuDeviceGet, CUresult, (CUdevice *, int))(d, ord); }
static CUresult kd_cuDeviceGetName(kd_lib *L, char *name, int len, CUdevice d) {
	return KD_FN(S_cuDeviceGetName, CUresult, (char *, int, CUdevice))(name, len, d);
}
static CUresult kd_cuDeviceGetAttribute(kd_lib *L, int *v, int attr, CUdevice d) {
	return KD_FN(S_cuDeviceGetAttribute, CUresult, (int *, int, CUdevice))(v, attr, d);
}
static CUresult kd_cuDeviceTotalMem(kd_lib *L, size_t *b, CUdevice d) {
	return KD_FN(S_cuDeviceTotalMem_v2, CUresult, (size_t *, CUdevice))(b, d);
}
static CUresult kd_cuDevicePrimaryCtxRetain(kd_lib *L, uintptr_t *ctx, CUdevice d) {
	CUcontext c = NULL;
	CUresult r = KD_FN(S_cuDevicePrimaryCtxRetain, CUresult, (CUcontext *, CUdevice))(&c, d);
	*ctx = (uintptr_t)c;
	return r;
}
static CUresult kd_cuDevicePrimaryCtxRelease(kd_lib *L, CUdevice d) {
	return KD_FN(S_cuDevicePrimaryCtxRelease_v2, CUresult, (CUdevice))(d);
}
static CUresult kd_cuCtxSetCurrent(kd_lib *L, uintptr_t ctx) { return KD_FN(S_cuCtxSetCurrent, CUresult, (CUcontext))((CUcontext)ctx); }
static CUresult kd_cuCtxSynchronize(kd_lib *L) { return KD_FN(S_cuCtxSynchronize, CUresult, (void))(); }
static CUresult kd_cuMemAlloc(kd_lib *L, CUdeviceptr *p, size_t n) { return KD_FN(S_cuMemAlloc_v2, CUresult, (CUdeviceptr *, size_t))(p, n); }
static CUresult kd_cuMemFree(kd_lib *L, CUdeviceptr p) { return KD_FN(S_cuMemFree_v2, CUresult, (CUdeviceptr))(p); }
static CUresult kd_cuMemcpyHtoD(kd_lib *L, CUdeviceptr dst, const void *src, size_t n) {
	return KD_FN(S_cuMemcpyHtoD_v2, CUresult, (CUdeviceptr, const void *, size_t))(dst, src, n);
}
static CUresult kd_cuMemcpyDtoH(kd_lib *L, void *dst, CUdeviceptr src, size_t n) {
	return KD_FN(S_cuMemcpyDtoH_v2, CUresult, (void *, CUdeviceptr, size_t))(dst, src, n);
}
static int kd_has_memcpy_dtod(kd_lib *L) { return L->sym[S_cuMemcpyDtoD_v2] != NULL; }
static CUresult kd_cuMemcpyDtoD(kd_lib *L, CUdeviceptr dst, CUdeviceptr src, size_t n) {
	return KD_FN(S_cuMemcpyDtoD_v2, CUresult, (CUdeviceptr, CUdeviceptr, size_t))(dst, src, n);
}
static CUresult kd_cuMemsetD8(kd_lib *L, CUdeviceptr dst, unsigned char v, size_t n) {
	return KD_FN(S_cuMemsetD8_v2, CUresult, (CUdeviceptr, unsigned char, size_t))(dst, v, n);
}
static CUresult kd_cuModuleLoadData(kd_lib *L, uintptr_t *m, const void *image) {
	CUmodule mod = NULL;
	CUresult r = KD_FN(S_cuModuleLoadData, CUresult, (CUmodule *, const void *))(&mod, image);
	*m = (uintptr_t)mod;
	return r;
}
static CUresult kd_cuModuleUnload(kd_lib *L, uintptr_t m) { return KD_FN(S_cuModuleUnload, CUresult, (CUmodule))((CUmodule)m); }
static CUresult kd_cuModuleGetFunction(kd_lib *L, uintptr_t *f, uintptr_t m, const char *name) {
	CUfunction fn = NULL;
	CUresult r = KD_FN(S_cuModuleGetFunction, CUresult, (CUfunction *, CUmodule, const char *))(&fn, (CUmodule)m, name);
	*f = (uintptr_t)fn;
	return r;
}
static CUresult kd_cuLaunchKernel(kd_lib *L, uintptr_t f, unsigned gx, unsigned gy, unsigned gz,
		unsigned bx, unsigned by, unsigned bz, unsigned shmem, void **params) {
	return KD_FN(S_cuLaunchKernel, CUresult, (CUfunction, unsigned, unsigned, unsigned,
		unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **))(
		(CUfunction)f, gx, gy, gz, bx, by, bz, shmem, NULL, params, NULL);
}
static CUresult kd_cuEventCreate(kd_lib *L, uintptr_t *e) {
	CUevent ev = NULL;
	CUresult r = KD_FN(S_cuEventCreate, CUresult, (CUevent *, unsigned))(&ev, 0);
	*e = (uintptr_t)ev;
	return r;
}
static CUresult kd_cuEventRecord(kd_lib *L, uintptr_t e) {
	return KD_FN(S_cuEventRecord, CUresult, (CUevent, CUstream))((CUevent)e, NULL);
}
static CUresult kd_cuEventSynchronize(kd_lib *L, uintptr_t e) { return KD_FN(S_cuEventSynchronize, CUresult, (CUevent))((CUevent)e); }
static CUresult kd_cuEventElapsedTime(kd_lib *L, float *ms, uintptr_t a, uintptr_t b) {
	int idx = L->sym[S_cuEventElapsedTime_v2] ? S_cuEventElapsedTime_v2 : S_cuEventElapsedTime;
	return KD_FN(idx, CUresult, (float *, CUevent, CUevent))(ms, (CUevent)a, (CUevent)b);
}
static CUresult kd_cuEventDestroy(kd_lib *L, uintptr_t e) { return KD_FN(S_cuEventDestroy_v2, CUresult, (CUevent))((CUevent)e); }

// kd_error_text fills name and desc from cuGetErrorName/String when the
// driver has them; absent entries leave the strings NULL.
static void kd_error_text(kd_lib *L, CUresult code, const char **name, const char **desc) {
	*name = NULL;
	*desc = NULL;
	if (L->sym[S_cuGetErrorName] && KD_FN(S_cuGetErrorName, CUresult, (CUresult, const char **))(code, name) != 0) *name = NULL;
	if (L->sym[S_cuGetErrorString] && KD_FN(S_cuGetErrorString, CUresult, (CUresult, const char **))(code, desc) != 0) *desc = NULL;
}
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/kerneldiff/kerneldiff/internal/dl"
)

// LibraryName is the soname Open loads: the driver library every CUDA
// driver installation provides (never the toolkit's link stub libcuda.so).
const LibraryName = "libcuda.so.1"

// Open dlopens libcuda.so.1 (RTLD_NOW | RTLD_LOCAL) and binds every entry
// point. See OpenLibrary.
func Open() (Driver, error) { return OpenLibrary(LibraryName) }

// OpenLibrary dlopens the library at path (a soname searched as dlopen(3)
// does, or a file path) and binds the driver entry points by their
// versioned names into a symbol table of its own. On failure it returns an
// error wrapping ErrNoDriver (and ErrMissingSymbol when the library loaded
// but lacks an entry point) with dlerror's text, together with a non-nil
// Driver whose every method returns that error, so callers that carry on
// anyway get errors, not crashes. A path with a slash that names anything
// but a regular file (a FIFO, where dlopen would block forever, a device,
// a folder) is refused the same way before dlopen (CheckLibraryPath).
// cuInit is not called; call Driver.Init.
//
// Each call binds the path it is given: there is no process-wide state,
// so a failed open never inherits an earlier success, and two libraries
// can be open at once. A successful open keeps the library loaded for the
// life of the process (a driver library is never unloaded) and holds a
// few hundred bytes of C memory for its table.
func OpenLibrary(path string) (Driver, error) {
	if err := CheckLibraryPath(path); err != nil {
		err = fmt.Errorf("%w: %w", ErrNoDriver, err)
		return noDriver{err}, err
	}
	l, msg := bind(path)
	if l == nil {
		var err error
		if loadedButIncomplete(path) {
			err = fmt.Errorf("%w: %w: %s", ErrNoDriver, ErrMissingSymbol, msg)
		} else {
			err = fmt.Errorf("%w: dlopen %s: %s", ErrNoDriver, path, msg)
		}
		return noDriver{err}, err
	}
	return libDriver{l}, nil
}

// bind dlopens path (internal/dl) and binds every symbol into a new
// kd_lib; failing, it returns nil and dlerror's text, and nothing stays
// loaded.
func bind(path string) (*C.kd_lib, string) {
	h, err := dl.Open(path)
	if err != nil {
		return nil, err.Error()
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var buf [512]C.char
	if l := C.kd_bind(h, cpath, &buf[0], C.size_t(len(buf))); l != nil {
		return l, ""
	}
	return nil, C.GoString(&buf[0])
}

// loadedButIncomplete tells a missing symbol from a missing library: the
// library itself opens.
func loadedButIncomplete(path string) bool {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	h := C.dlopen(cpath, C.RTLD_LAZY|C.RTLD_LOCAL)
	if h == nil {
		return false
	}
	C.dlclose(h)
	return true
}

// ElapsedSymbol names the event-timer entry point d calls:
// "cuEventElapsedTime_v2" (drivers of CUDA 12.8 and later) or
// "cuEventElapsedTime". Empty when d is not a library OpenLibrary bound
// (a failed open, or a fake).
func ElapsedSymbol(d Driver) string {
	ld, ok := d.(libDriver)
	if !ok {
		return ""
	}
	return C.GoString(C.kd_elapsed_name(ld.l))
}

// libDriver is the Driver over one bound library: l is its C symbol
// table, which never moves or is freed.
type libDriver struct{ l *C.kd_lib }

// check turns a CUresult of call into nil or a *CUDAError with the
// driver's name and description of the code.
func (d libDriver) check(call string, r C.CUresult) error {
	if r == 0 {
		return nil
	}
	e := &CUDAError{Call: call, Code: Result(r)}
	var name, desc *C.char
	C.kd_error_text(d.l, r, &name, &desc)
	if name != nil {
		e.Name = C.GoString(name)
	}
	if desc != nil {
		e.Desc = C.GoString(desc)
	}
	return e
}

func (d libDriver) Init() error { return d.check("cuInit", C.kd_cuInit(d.l)) }

func (d libDriver) Version() (int, error) {
	var v C.int
	err := d.check("cuDriverGetVersion", C.kd_cuDriverGetVersion(d.l, &v))
	return int(v), err
}

func (d libDriver) DeviceCount() (int, error) {
	var n C.int
	err := d.check("cuDeviceGetCount", C.kd_cuDeviceGetCount(d.l, &n))
	return int(n), err
}

func (d libDriver) Device(n int) (Device, error) {
	var dev C.CUdevice
	err := d.check("cuDeviceGet", C.kd_cuDeviceGet(d.l, &dev, C.int(n)))
	return Device(dev), err
}

func (d libDriver) DeviceName(dev Device) (string, error) {
	var buf [256]C.char
	if err := d.check("cuDeviceGetName", C.kd_cuDeviceGetName(d.l, &buf[0], C.int(len(buf)), C.CUdevice(dev))); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

func (d libDriver) DeviceAttribute(dev Device, a Attribute) (int, error) {
	var v C.int
	err := d.check("cuDeviceGetAttribute", C.kd_cuDeviceGetAttribute(d.l, &v, C.int(a), C.CUdevice(dev)))
	return int(v), err
}

func (d libDriver) DeviceTotalMem(dev Device) (uint64, error) {
	var b C.size_t
	err := d.check("cuDeviceTotalMem_v2", C.kd_cuDeviceTotalMem(d.l, &b, C.CUdevice(dev)))
	return uint64(b), err
}

func (d libDriver) PrimaryCtxRetain(dev Device) (Context, error) {
	var c C.uintptr_t
	err := d.check("cuDevicePrimaryCtxRetain", C.kd_cuDevicePrimaryCtxRetain(d.l, &c, C.CUdevice(dev)))
	return Context(c), err
}

func (d libDriver) PrimaryCtxRelease(dev Device) error {
	return d.check("cuDevicePrimaryCtxRelease_v2", C.kd_cuDevicePrimaryCtxRelease(d.l, C.CUdevice(dev)))
}

func (d libDriver) CtxSetCurrent(c Context) error {
	return d.check("cuCtxSetCurrent", C.kd_cuCtxSetCurrent(d.l, C.uintptr_t(c)))
}

func (d libDriver) CtxSynchronize() error {
	return d.check("cuCtxSynchronize", C.kd_cuCtxSynchronize(d.l))
}

func (d libDriver) MemAlloc(n uint64) (DevicePtr, error) {
	var p C.CUdeviceptr
	err := d.check("cuMemAlloc_v2", C.kd_cuMemAlloc(d.l, &p, C.size_t(n)))
	return DevicePtr(p), err
}

func (d libDriver) MemFree(p DevicePtr) error {
	return d.check("cuMemFree_v2", C.kd_cuMemFree(d.l, C.CUdeviceptr(p)))
}

func (d libDriver) MemcpyHtoD(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return d.check("cuMemcpyHtoD_v2", C.kd_cuMemcpyHtoD(d.l, C.CUdeviceptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src))))
}

func (d libDriver) MemcpyDtoH(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return d.check("cuMemcpyDtoH_v2", C.kd_cuMemcpyDtoH(d.l, unsafe.Pointer(&dst[0]), C.CUdeviceptr(src), C.size_t(len(dst))))
}

func (d libDriver) MemcpyDtoD(dst, src DevicePtr, n uint64) error {
	if C.kd_has_memcpy_dtod(d.l) == 0 {
		return fmt.Errorf("cuMemcpyDtoD_v2: %w: the driver library does not export it", ErrMissingSymbol)
	}
	return d.check("cuMemcpyDtoD_v2", C.kd_cuMemcpyDtoD(d.l, C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n)))
}

func (d libDriver) MemsetD8(dst DevicePtr, v byte, n uint64) error {
	return d.check("cuMemsetD8_v2", C.kd_cuMemsetD8(d.l, C.CUdeviceptr(dst), C.uchar(v), C.size_t(n)))
}

func (d libDriver) ModuleLoadData(image []byte) (Module, error) {
	if len(image) == 0 {
		return 0, &CUDAError{Call: "cuModuleLoadData", Code: ErrorInvalidImage, Desc: "empty image"}
	}
	// The driver reads the image through a pointer with no length, so it
	// gets a C copy that cannot move.
	cimg := C.CBytes(image)
	defer C.free(cimg)
	var m C.uintptr_t
	err := d.check("cuModuleLoadData", C.kd_cuModuleLoadData(d.l, &m, cimg))
	return Module(m), err
}

func (d libDriver) ModuleUnload(m Module) error {
	return d.check("cuModuleUnload", C.kd_cuModuleUnload(d.l, C.uintptr_t(m)))
}

func (d libDriver) ModuleGetFunction(m Module, name string) (Function, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var f C.uintptr_t
	err := d.check("cuModuleGetFunction", C.kd_cuModuleGetFunction(d.l, &f, C.uintptr_t(m), cname))
	if err != nil {
		if e, ok := err.(*CUDAError); ok {
			e.Desc = fmt.Sprintf("%s (entry point %q)", e.Desc, name)
		}
	}
	return Function(f), err
}

func (d libDriver) LaunchKernel(f Function, grid, block Dim3, sharedMem uint32, args ...[]byte) error {
	// kernelParams is an array of pointers, one per parameter, each to a
	// copy of the parameter's bytes. Both live in C memory for the call;
	// cuLaunchKernel copies the values before it returns.
	const align = 16
	total := 0
	for _, a := range args {
		total += (len(a) + align - 1) / align * align
	}
	n := len(args)
	mem := C.malloc(C.size_t(total + 8*n + 8))
	if mem == nil {
		return &CUDAError{Call: "cuLaunchKernel", Code: ErrorOutOfMemory, Desc: "host malloc for kernel parameters"}
	}
	defer C.free(mem)
	block0 := unsafe.Slice((*byte)(mem), total+8*n+8)
	ptrs := unsafe.Slice((*unsafe.Pointer)(unsafe.Add(mem, total)), n+1)
	off := 0
	for i, a := range args {
		copy(block0[off:], a)
		ptrs[i] = unsafe.Add(mem, off)
		off += (len(a) + align - 1) / align * align
	}
	ptrs[n] = nil
	return d.check("cuLaunchKernel", C.kd_cuLaunchKernel(d.l, C.uintptr_t(f),
		C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z),
		C.uint(block.X), C.uint(block.Y), C.uint(block.Z),
		C.uint(sharedMem), (*unsafe.Pointer)(unsafe.Add(mem, total))))
}

func (d libDriver) EventCreate() (Event, error) {
	var e C.uintptr_t
	err := d.check("cuEventCreate", C.kd_cuEventCreate(d.l, &e))
	return Event(e), err
}

func (d libDriver) EventRecord(e Event) error {
	return d.check("cuEventRecord", C.kd_cuEventRecord(d.l, C.uintptr_t(e)))
}

func (d libDriver) EventSynchronize(e Event) error {
	return d.check("cuEventSynchronize", C.kd_cuEventSynchronize(d.l, C.uintptr_t(e)))
}

func (d libDriver) EventElapsed(start, end Event) (time.Duration, error) {
	var ms C.float
	if err := d.check(C.GoString(C.kd_elapsed_name(d.l)), C.kd_cuEventElapsedTime(d.l, &ms, C.uintptr_t(start), C.uintptr_t(end))); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

func (d libDriver) EventDestroy(e Event) error {
	return d.check("cuEventDestroy_v2", C.kd_cuEventDestroy(d.l, C.uintptr_t(e)))
}
