package cuda

import (
	"errors"
	"fmt"
	"testing"
)

func TestCUDAErrorIs(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		target  error
		want    bool
		message string
	}{
		{"illegal address from a sync", &CUDAError{Call: "cuEventSynchronize", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Desc: "an illegal memory access was encountered"},
			ErrIllegalAddress, true, "cuEventSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered"},
		{"wrapped launch failure", fmt.Errorf("case x: %w", &CUDAError{Call: "cuCtxSynchronize", Code: 719}),
			ErrLaunchFailed, true, "case x: cuCtxSynchronize: CUDA_ERROR_LAUNCH_FAILED (719)"},
		{"no binary is not no device", &CUDAError{Call: "cuModuleLoadData", Code: 209},
			ErrNoDevice, false, "cuModuleLoadData: CUDA_ERROR_NO_BINARY_FOR_GPU (209)"},
		{"unnamed code keeps its number", &CUDAError{Call: "cuInit", Code: 4242},
			ErrUnknownSentinelForTest, false, "cuInit: CUresult(4242) (4242)"},
		{"timeout", &CUDAError{Call: "cuEventSynchronize", Code: 702}, ErrLaunchTimeout, true,
			"cuEventSynchronize: CUDA_ERROR_LAUNCH_TIMEOUT (702)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errors.Is(tt.err, tt.target); got != tt.want {
				t.Errorf("errors.Is = %v, want %v", got, tt.want)
			}
			if tt.err.Error() != tt.message {
				t.Errorf("Error() = %q, want %q", tt.err.Error(), tt.message)
			}
		})
	}
}

var ErrUnknownSentinelForTest error = &CUDAError{Code: ErrorUnknown}

func TestSticky(t *testing.T) {
	for code, want := range map[Result]bool{
		ErrorIllegalAddress: true, ErrorLaunchFailed: true, ErrorMisalignedAddress: true, ErrorLaunchTimeout: true,
		ErrorOutOfMemory: false, ErrorNoBinaryForGPU: false, ErrorLaunchOutOfRes: false, ErrorNotFound: false,
	} {
		if code.Sticky() != want {
			t.Errorf("%v.Sticky() = %v, want %v", code, !want, want)
		}
	}
	if Code(fmt.Errorf("x: %w", &CUDAError{Code: 700})) != ErrorIllegalAddress {
		t.Error("Code does not unwrap")
	}
	if Code(errors.New("plain")) != Success {
		t.Error("Code of a non-CUDA error is not Success")
	}
}
