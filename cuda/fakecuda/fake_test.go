package fakecuda

import (
	"errors"
	"testing"

	"github.com/kerneldiff/kerneldiff/cuda"
)

// The fake behaves like the driver where the worker's fault handling
// depends on it: launch errors surface at the next sync, sticky ones
// poison every later call, out-of-bounds accesses are illegal addresses.
func TestFakeFaultSemantics(t *testing.T) {
	oob := func(d *Driver, _, _ cuda.Dim3, args [][]byte) error {
		_, err := d.Bytes(Ptr(args[0], 0), 1<<20)
		return err
	}
	oom := func(*Driver, cuda.Dim3, cuda.Dim3, [][]byte) error {
		return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorLaunchOutOfRes}
	}
	d := New(map[string]Kernel{"oob": oob, "res": oom})
	if _, err := d.MemAlloc(16); !errors.Is(err, cuda.ErrorNotInitialized.Sentinel()) {
		t.Fatalf("MemAlloc before Init: %v", err)
	}
	if err := d.Init(); err != nil {
		t.Fatal(err)
	}
	p, err := d.MemAlloc(16)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.MemcpyHtoD(p+8, make([]byte, 9)); !errors.Is(err, cuda.ErrorInvalidValue.Sentinel()) {
		t.Errorf("copy past the allocation: %v", err)
	}
	arg := make([]byte, 8)
	arg[0] = byte(p)
	for i := 1; i < 8; i++ {
		arg[i] = byte(uint64(p) >> (8 * i))
	}
	one := cuda.Dim3{X: 1, Y: 1, Z: 1}
	res, _ := d.ModuleGetFunction(1, "res")
	if err := d.LaunchKernel(res, one, one, 0, arg); err != nil {
		t.Fatalf("launch returns before the kernel's error: %v", err)
	}
	if err := d.CtxSynchronize(); !errors.Is(err, cuda.ErrLaunchOutOfRes) {
		t.Fatalf("sync: %v, want the kernel's error", err)
	}
	if err := d.CtxSynchronize(); err != nil {
		t.Fatalf("a non-sticky error came back twice: %v", err)
	}
	fn, _ := d.ModuleGetFunction(1, "oob")
	if err := d.LaunchKernel(fn, one, one, 0, arg); err != nil {
		t.Fatal(err)
	}
	if err := d.CtxSynchronize(); !errors.Is(err, cuda.ErrIllegalAddress) {
		t.Fatalf("sync after an out-of-bounds access: %v", err)
	}
	if _, err := d.MemAlloc(16); !errors.Is(err, cuda.ErrIllegalAddress) {
		t.Errorf("the context works after a sticky error: %v", err)
	}
	if _, err := d.ModuleGetFunction(1, "absent"); !errors.Is(err, cuda.ErrIllegalAddress) {
		t.Errorf("ModuleGetFunction after a sticky error: %v", err)
	}
}

func TestDescribeOnFake(t *testing.T) {
	d := New(nil)
	d.CCMajor, d.CCMinor, d.Name = 12, 0, "Fake RTX"
	if err := d.Init(); err != nil {
		t.Fatal(err)
	}
	info, err := cuda.Describe(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "Fake RTX" || info.CC() != "12.0" || info.CUDAVersionString() != "13.0" || info.SMs != 132 || info.MemoryTotal != 1<<30 {
		t.Errorf("Describe = %+v", info)
	}
	// No NVML on this machine (or no such PCI device in it): a warning, not an error.
	if len(info.Warnings) == 0 {
		t.Log("NVML answered for the fake's PCI id")
	}
	if _, err := cuda.Describe(d, 3); !errors.Is(err, cuda.ErrInvalidDevice) {
		t.Errorf("Describe(3): %v", err)
	}
}

// A code listed in LostContextCodes poisons the context like a sticky one;
// the same code unlisted comes back once and leaves the context working.
func TestLostContextCodes(t *testing.T) {
	unknown := func(*Driver, cuda.Dim3, cuda.Dim3, [][]byte) error {
		return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorUnknown}
	}
	tests := []struct {
		name string
		lost []cuda.Result
		dead bool
	}{
		{"CUDA_ERROR_UNKNOWN the context survives", nil, false},
		{"CUDA_ERROR_UNKNOWN that loses the context", []cuda.Result{cuda.ErrorUnknown}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(map[string]Kernel{"unknown": unknown})
			d.LostContextCodes = tt.lost
			if err := d.Init(); err != nil {
				t.Fatal(err)
			}
			fn, _ := d.ModuleGetFunction(1, "unknown")
			one := cuda.Dim3{X: 1, Y: 1, Z: 1}
			if err := d.LaunchKernel(fn, one, one, 0); err != nil {
				t.Fatal(err)
			}
			if err := d.CtxSynchronize(); cuda.Code(err) != cuda.ErrorUnknown {
				t.Fatalf("sync: %v, want the kernel's CUDA_ERROR_UNKNOWN", err)
			}
			_, err := d.MemAlloc(1)
			if dead := cuda.Code(err) == cuda.ErrorUnknown; dead != tt.dead {
				t.Errorf("MemAlloc after the error: %v; context lost = %v, want %v", err, dead, tt.dead)
			}
		})
	}
}
