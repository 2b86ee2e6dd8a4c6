// Package cuda is Go access to the CUDA driver API without CUDA headers or
// a link-time libcuda: a cgo shim dlopens libcuda.so.1 at run time and
// binds the ~25 entry points kerneldiff needs by their explicit versioned
// symbol names (cuMemAlloc_v2, ...), as docs/architecture.md requires. It uses
// the device's primary context, so the cuCtxCreate_v4 change of CUDA 13
// does not concern it.
//
// Every entry point is reached through the Driver interface, so code above
// it (package bridge) runs in tests against a fake (package
// cuda/fakecuda). On a machine without a driver, Open returns a Driver
// whose every method returns an error wrapping ErrNoDriver; nothing exits
// or panics. Device information beyond the driver API (UUID, clocks, ECC)
// comes from NVML through go-nvml (nvml.go), which fails just as softly.
//
// The package knows nothing of kernels.
package cuda

import "time"

// Device is a CUdevice: an ordinal-derived device handle.
type Device int32

// DevicePtr is a CUdeviceptr: a device address. 0 is the null pointer.
type DevicePtr uint64

// Context, Module, Function and Event are the opaque driver handles
// CUcontext, CUmodule, CUfunction and CUevent, held as integers so that
// Go never treats them as Go pointers.
type (
	Context  uintptr
	Module   uintptr
	Function uintptr
	Event    uintptr
)

// Dim3 is a launch grid or block shape, as the three unsigned ints
// cuLaunchKernel takes.
type Dim3 struct{ X, Y, Z uint32 }

// Attribute is a CUdevice_attribute value. Numbers from the CUDA Driver
// API reference, enum CUdevice_attribute.
type Attribute int32

// Device attributes this project reads.
const (
	AttrMaxThreadsPerBlock     Attribute = 1  // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
	AttrMaxSharedPerBlock      Attribute = 8  // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, bytes
	AttrClockRate              Attribute = 13 // CU_DEVICE_ATTRIBUTE_CLOCK_RATE, kHz
	AttrMultiprocessorCount    Attribute = 16 // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	AttrKernelExecTimeout      Attribute = 17 // CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT (display watchdog on)
	AttrECCEnabled             Attribute = 32 // CU_DEVICE_ATTRIBUTE_ECC_ENABLED
	AttrPCIBusID               Attribute = 33 // CU_DEVICE_ATTRIBUTE_PCI_BUS_ID
	AttrPCIDeviceID            Attribute = 34 // CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID
	AttrL2CacheSize            Attribute = 38 // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, bytes
	AttrMemoryClockRate        Attribute = 36 // CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, kHz
	AttrPCIDomainID            Attribute = 50 // CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID
	AttrComputeCapabilityMajor Attribute = 75 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	AttrComputeCapabilityMinor Attribute = 76 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	AttrMaxSharedPerBlockOptin Attribute = 97 // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, bytes
)

// Driver is the subset of the CUDA driver API kerneldiff uses. Each method
// is one driver entry point (named in its doc) and returns a *CUDAError on
// a non-zero CUresult, or an error wrapping ErrNoDriver when there is no
// driver. Context-bound calls act on the calling OS thread's current
// context: callers lock their goroutine to its thread
// (runtime.LockOSThread) after CtxSetCurrent.
//
// Implementations: the dlopen'ed libcuda (Open) and fakecuda.Driver.
type Driver interface {
	// Init calls cuInit(0). Required before any other call.
	Init() error
	// Version calls cuDriverGetVersion: 1000·major + 10·minor (13000 for 13.0).
	Version() (int, error)
	// DeviceCount calls cuDeviceGetCount.
	DeviceCount() (int, error)
	// Device calls cuDeviceGet for ordinal n.
	Device(n int) (Device, error)
	// DeviceName calls cuDeviceGetName.
	DeviceName(d Device) (string, error)
	// DeviceAttribute calls cuDeviceGetAttribute.
	DeviceAttribute(d Device, a Attribute) (int, error)
	// DeviceTotalMem calls cuDeviceTotalMem_v2: bytes.
	DeviceTotalMem(d Device) (uint64, error)
	// PrimaryCtxRetain calls cuDevicePrimaryCtxRetain.
	PrimaryCtxRetain(d Device) (Context, error)
	// PrimaryCtxRelease calls cuDevicePrimaryCtxRelease_v2.
	PrimaryCtxRelease(d Device) error
	// CtxSetCurrent calls cuCtxSetCurrent for the calling thread.
	CtxSetCurrent(c Context) error
	// CtxSynchronize calls cuCtxSynchronize.
	CtxSynchronize() error
	// MemAlloc calls cuMemAlloc_v2 for n > 0 bytes.
	MemAlloc(n uint64) (DevicePtr, error)
	// MemFree calls cuMemFree_v2.
	MemFree(p DevicePtr) error
	// MemcpyHtoD calls cuMemcpyHtoD_v2 for len(src) bytes.
	MemcpyHtoD(dst DevicePtr, src []byte) error
	// MemcpyDtoH calls cuMemcpyDtoH_v2 for len(dst) bytes.
	MemcpyDtoH(dst []byte, src DevicePtr) error
	// MemcpyDtoD calls cuMemcpyDtoD_v2: n bytes from src to dst, both
	// device memory, on the null stream; the driver does no host-side
	// synchronisation for a device-to-device copy ("API synchronization
	// behavior" in the driver API reference), so time it with events
	// and synchronise on the second. The entry point is
	// optional: a library without it gives an error wrapping
	// ErrMissingSymbol (every CUDA driver since 3.2 exports it).
	MemcpyDtoD(dst, src DevicePtr, n uint64) error
	// MemsetD8 calls cuMemsetD8_v2.
	MemsetD8(dst DevicePtr, v byte, n uint64) error
	// ModuleLoadData calls cuModuleLoadData on a fatbin, cubin or PTX image.
	// CUDA_ERROR_NO_BINARY_FOR_GPU (ErrNoBinaryForGPU) means the image holds
	// no SASS for this GPU and no PTX it can JIT.
	ModuleLoadData(image []byte) (Module, error)
	// ModuleUnload calls cuModuleUnload.
	ModuleUnload(m Module) error
	// ModuleGetFunction calls cuModuleGetFunction (ErrNotFound: no such entry point).
	ModuleGetFunction(m Module, name string) (Function, error)
	// LaunchKernel calls cuLaunchKernel on the null stream. args holds each
	// kernel parameter's bytes in declaration order (a by-value struct is
	// one argument: its packed C bytes); the driver receives an array of
	// pointers to copies of them.
	LaunchKernel(f Function, grid, block Dim3, sharedMem uint32, args ...[]byte) error
	// EventCreate calls cuEventCreate with CU_EVENT_DEFAULT (timing on).
	EventCreate() (Event, error)
	// EventRecord calls cuEventRecord on the null stream.
	EventRecord(e Event) error
	// EventSynchronize calls cuEventSynchronize. Errors of earlier
	// asynchronous launches (an illegal address) surface here.
	EventSynchronize(e Event) error
	// EventElapsed calls cuEventElapsedTime_v2 (cuEventElapsedTime on
	// drivers before 12.8): the time between two recorded events,
	// resolution about 0.5 µs.
	EventElapsed(start, end Event) (time.Duration, error)
	// EventDestroy calls cuEventDestroy_v2.
	EventDestroy(e Event) error
}
