// CUDA driver error codes and the typed error every driver call returns.
//
// Source of the numeric codes: the CUresult enum of the CUDA Driver API
// reference ("Data types used by CUDA driver", CUDA 13.0), which has kept
// these values stable since CUDA 4.x.

package cuda

import (
	"errors"
	"fmt"
)

// Result is a CUresult: the status code every CUDA driver entry point
// returns. 0 (CUDA_SUCCESS) means success.
type Result int32

// CUresult values this package names. The list is not exhaustive; an
// unnamed code keeps its number and the driver's own name.
const (
	Success                   Result = 0   // CUDA_SUCCESS
	ErrorInvalidValue         Result = 1   // CUDA_ERROR_INVALID_VALUE
	ErrorOutOfMemory          Result = 2   // CUDA_ERROR_OUT_OF_MEMORY
	ErrorNotInitialized       Result = 3   // CUDA_ERROR_NOT_INITIALIZED
	ErrorDeinitialized        Result = 4   // CUDA_ERROR_DEINITIALIZED
	ErrorStubLibrary          Result = 34  // CUDA_ERROR_STUB_LIBRARY: the libcuda found is the toolkit's link stub
	ErrorInsufficientDriver   Result = 35  // CUDA_ERROR_INSUFFICIENT_DRIVER (the runtime's code, also seen from stubs)
	ErrorNoDevice             Result = 100 // CUDA_ERROR_NO_DEVICE
	ErrorInvalidDevice        Result = 101 // CUDA_ERROR_INVALID_DEVICE
	ErrorInvalidImage         Result = 200 // CUDA_ERROR_INVALID_IMAGE
	ErrorInvalidContext       Result = 201 // CUDA_ERROR_INVALID_CONTEXT
	ErrorNoBinaryForGPU       Result = 209 // CUDA_ERROR_NO_BINARY_FOR_GPU
	ErrorInvalidPTX           Result = 218 // CUDA_ERROR_INVALID_PTX
	ErrorUnsupportedPTX       Result = 222 // CUDA_ERROR_UNSUPPORTED_PTX_VERSION
	ErrorNotFound             Result = 500 // CUDA_ERROR_NOT_FOUND (e.g. no such kernel in the module)
	ErrorNotReady             Result = 600 // CUDA_ERROR_NOT_READY
	ErrorIllegalAddress       Result = 700 // CUDA_ERROR_ILLEGAL_ADDRESS (sticky)
	ErrorLaunchOutOfRes       Result = 701 // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
	ErrorLaunchTimeout        Result = 702 // CUDA_ERROR_LAUNCH_TIMEOUT (sticky; display watchdog)
	ErrorAssert               Result = 710 // CUDA_ERROR_ASSERT (sticky; device-side assert)
	ErrorHardwareStack        Result = 714 // CUDA_ERROR_HARDWARE_STACK_ERROR (sticky)
	ErrorIllegalInstruction   Result = 715 // CUDA_ERROR_ILLEGAL_INSTRUCTION (sticky)
	ErrorMisalignedAddress    Result = 716 // CUDA_ERROR_MISALIGNED_ADDRESS (sticky)
	ErrorInvalidAddressSpace  Result = 717 // CUDA_ERROR_INVALID_ADDRESS_SPACE (sticky)
	ErrorInvalidPC            Result = 718 // CUDA_ERROR_INVALID_PC (sticky)
	ErrorLaunchFailed         Result = 719 // CUDA_ERROR_LAUNCH_FAILED (sticky)
	ErrorSystemNotReady       Result = 802 // CUDA_ERROR_SYSTEM_NOT_READY
	ErrorSystemDriverMismatch Result = 803 // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
	ErrorUnknown              Result = 999 // CUDA_ERROR_UNKNOWN
)

var resultNames = map[Result]string{
	Success:                   "CUDA_SUCCESS",
	ErrorInvalidValue:         "CUDA_ERROR_INVALID_VALUE",
	ErrorOutOfMemory:          "CUDA_ERROR_OUT_OF_MEMORY",
	ErrorNotInitialized:       "CUDA_ERROR_NOT_INITIALIZED",
	ErrorDeinitialized:        "CUDA_ERROR_DEINITIALIZED",
	ErrorStubLibrary:          "CUDA_ERROR_STUB_LIBRARY",
	ErrorInsufficientDriver:   "CUDA_ERROR_INSUFFICIENT_DRIVER",
	ErrorNoDevice:             "CUDA_ERROR_NO_DEVICE",
	ErrorInvalidDevice:        "CUDA_ERROR_INVALID_DEVICE",
	ErrorInvalidImage:         "CUDA_ERROR_INVALID_IMAGE",
	ErrorInvalidContext:       "CUDA_ERROR_INVALID_CONTEXT",
	ErrorNoBinaryForGPU:       "CUDA_ERROR_NO_BINARY_FOR_GPU",
	ErrorInvalidPTX:           "CUDA_ERROR_INVALID_PTX",
	ErrorUnsupportedPTX:       "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	ErrorNotFound:             "CUDA_ERROR_NOT_FOUND",
	ErrorNotReady:             "CUDA_ERROR_NOT_READY",
	ErrorIllegalAddress:       "CUDA_ERROR_ILLEGAL_ADDRESS",
	ErrorLaunchOutOfRes:       "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	ErrorLaunchTimeout:        "CUDA_ERROR_LAUNCH_TIMEOUT",
	ErrorAssert:               "CUDA_ERROR_ASSERT",
	ErrorHardwareStack:        "CUDA_ERROR_HARDWARE_STACK_ERROR",
	ErrorIllegalInstruction:   "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	ErrorMisalignedAddress:    "CUDA_ERROR_MISALIGNED_ADDRESS",
	ErrorInvalidAddressSpace:  "CUDA_ERROR_INVALID_ADDRESS_SPACE",
	ErrorInvalidPC:            "CUDA_ERROR_INVALID_PC",
	ErrorLaunchFailed:         "CUDA_ERROR_LAUNCH_FAILED",
	ErrorSystemNotReady:       "CUDA_ERROR_SYSTEM_NOT_READY",
	ErrorSystemDriverMismatch: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	ErrorUnknown:              "CUDA_ERROR_UNKNOWN",
}

// String returns the enum name ("CUDA_ERROR_ILLEGAL_ADDRESS"), or
// "CUresult(N)" for a code this package does not name.
func (r Result) String() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("CUresult(%d)", int32(r))
}

// Sentinel returns an error that errors.Is matches against any
// *CUDAError with code r.
func (r Result) Sentinel() error { return &CUDAError{Code: r} }

// Sticky reports whether r leaves the context unusable: after such an
// error every later call in the process fails, so the process must be
// replaced (the driver API reference says of each: "the context cannot be
// used ... and must be destroyed").
func (r Result) Sticky() bool {
	switch r {
	case ErrorIllegalAddress, ErrorLaunchTimeout, ErrorAssert, ErrorHardwareStack,
		ErrorIllegalInstruction, ErrorMisalignedAddress, ErrorInvalidAddressSpace,
		ErrorInvalidPC, ErrorLaunchFailed:
		return true
	}
	return false
}

// CUDAError is a failed driver call, modelled on strconv.NumError: the
// entry point, the CUresult, the driver's name for it and its description.
//
//	cuEventSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered
//
// errors.Is matches it against the sentinel of the same code
// (ErrIllegalAddress, ...).
type CUDAError struct {
	Call string // driver entry point, e.g. "cuMemAlloc_v2"; empty in sentinels
	Code Result
	Name string // cuGetErrorName's text, or Code.String() when the driver gave none
	Desc string // cuGetErrorString's text; may be empty
}

// Error returns "CALL: NAME (CODE): DESC", e.g. "cuMemAlloc_v2:
// CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"; CALL and DESC are left out
// where empty.
func (e *CUDAError) Error() string {
	name := e.Name
	if name == "" {
		name = e.Code.String()
	}
	s := fmt.Sprintf("%s (%d)", name, int32(e.Code))
	if e.Desc != "" {
		s += ": " + e.Desc
	}
	if e.Call != "" {
		s = e.Call + ": " + s
	}
	return s
}

// Is reports whether target is a *CUDAError with the same code, so that
// errors.Is(err, ErrIllegalAddress) holds for any call that returned 700.
func (e *CUDAError) Is(target error) bool {
	var t *CUDAError
	if errors.As(target, &t) {
		return t.Code == e.Code
	}
	return false
}

// Sentinels for errors.Is. Each matches any *CUDAError with its code.
var (
	ErrNoDevice       error = &CUDAError{Code: ErrorNoDevice}
	ErrInvalidDevice  error = &CUDAError{Code: ErrorInvalidDevice}
	ErrNoBinaryForGPU error = &CUDAError{Code: ErrorNoBinaryForGPU}
	ErrInvalidImage   error = &CUDAError{Code: ErrorInvalidImage}
	ErrNotFound       error = &CUDAError{Code: ErrorNotFound}
	ErrOutOfMemory    error = &CUDAError{Code: ErrorOutOfMemory}
	ErrIllegalAddress error = &CUDAError{Code: ErrorIllegalAddress}
	ErrLaunchTimeout  error = &CUDAError{Code: ErrorLaunchTimeout}
	ErrLaunchFailed   error = &CUDAError{Code: ErrorLaunchFailed}
	ErrLaunchOutOfRes error = &CUDAError{Code: ErrorLaunchOutOfRes}
	ErrMisaligned     error = &CUDAError{Code: ErrorMisalignedAddress}
	ErrAssert         error = &CUDAError{Code: ErrorAssert}
)

// ErrNoDriver is wrapped by every error that comes from not having a
// usable driver library: libcuda.so.1 could not be dlopen'ed, or it lacks
// an entry point this package binds (then ErrMissingSymbol is wrapped
// too). The error text carries dlerror's message.
var ErrNoDriver = errors.New("no CUDA driver")

// ErrMissingSymbol is wrapped, with ErrNoDriver, when libcuda.so.1 loads
// but does not export a required entry point (a driver older than the
// versioned symbol, or a library that is not libcuda).
var ErrMissingSymbol = errors.New("driver entry point missing")

// Code returns the CUresult carried by err, or Success when err holds no
// *CUDAError.
func Code(err error) Result {
	var e *CUDAError
	if errors.As(err, &e) {
		return e.Code
	}
	return Success
}
