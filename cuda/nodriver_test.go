package cuda

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// On a machine without libcuda.so.1 (CI, this project's build hosts) Open
// fails with ErrNoDriver and the Driver it returns answers every call with
// that error instead of crashing.
func TestNoDriverEveryCall(t *testing.T) {
	drv, err := OpenLibrary("libkerneldiff-no-such-driver.so.1")
	if err == nil {
		t.Fatal("OpenLibrary of a missing library succeeded")
	}
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("error %v does not wrap ErrNoDriver", err)
	}
	if errors.Is(err, ErrMissingSymbol) {
		t.Fatalf("a missing library is reported as a missing symbol: %v", err)
	}
	if !strings.Contains(err.Error(), "libkerneldiff-no-such-driver.so.1") {
		t.Errorf("error %q lacks dlerror's text naming the library", err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Init", drv.Init},
		{"Version", func() error { _, e := drv.Version(); return e }},
		{"DeviceCount", func() error { _, e := drv.DeviceCount(); return e }},
		{"Device", func() error { _, e := drv.Device(0); return e }},
		{"DeviceName", func() error { _, e := drv.DeviceName(0); return e }},
		{"DeviceAttribute", func() error { _, e := drv.DeviceAttribute(0, AttrComputeCapabilityMajor); return e }},
		{"DeviceTotalMem", func() error { _, e := drv.DeviceTotalMem(0); return e }},
		{"PrimaryCtxRetain", func() error { _, e := drv.PrimaryCtxRetain(0); return e }},
		{"PrimaryCtxRelease", func() error { return drv.PrimaryCtxRelease(0) }},
		{"CtxSetCurrent", func() error { return drv.CtxSetCurrent(0) }},
		{"CtxSynchronize", drv.CtxSynchronize},
		{"MemAlloc", func() error { _, e := drv.MemAlloc(64); return e }},
		{"MemFree", func() error { return drv.MemFree(0) }},
		{"MemcpyHtoD", func() error { return drv.MemcpyHtoD(0, []byte{1}) }},
		{"MemcpyDtoH", func() error { return drv.MemcpyDtoH(make([]byte, 1), 0) }},
		{"MemsetD8", func() error { return drv.MemsetD8(0, 0, 1) }},
		{"ModuleLoadData", func() error { _, e := drv.ModuleLoadData([]byte{1}); return e }},
		{"ModuleUnload", func() error { return drv.ModuleUnload(0) }},
		{"ModuleGetFunction", func() error { _, e := drv.ModuleGetFunction(0, "f"); return e }},
		{"LaunchKernel", func() error { return drv.LaunchKernel(0, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, []byte{0}) }},
		{"EventCreate", func() error { _, e := drv.EventCreate(); return e }},
		{"EventRecord", func() error { return drv.EventRecord(0) }},
		{"EventSynchronize", func() error { return drv.EventSynchronize(0) }},
		{"EventElapsed", func() error { _, e := drv.EventElapsed(0, 0); return e }},
		{"EventDestroy", func() error { return drv.EventDestroy(0) }},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, ErrNoDriver) {
			t.Errorf("%s: got %v, want an error wrapping ErrNoDriver", c.name, err)
		}
	}
}

// A library that loads but lacks the driver's entry points (libc here) is
// a missing-symbol error carrying dlerror's text, not a crash.
func TestMissingSymbol(t *testing.T) {
	if _, err := os.Stat("/lib/x86_64-linux-gnu/libc.so.6"); err != nil {
		t.Skip("libc.so.6 not at the Debian amd64 path")
	}
	drv, err := OpenLibrary("libc.so.6")
	if !errors.Is(err, ErrNoDriver) || !errors.Is(err, ErrMissingSymbol) {
		t.Fatalf("got %v, want ErrNoDriver and ErrMissingSymbol", err)
	}
	if !strings.Contains(err.Error(), "cuInit") {
		t.Errorf("error %q does not name the first missing entry point, cuInit", err)
	}
	if s := ElapsedSymbol(drv); s != "" {
		t.Errorf("ElapsedSymbol = %q after a failed open", s)
	}
}

// The real driver, when this machine has one: Open binds every symbol.
func TestOpenReal(t *testing.T) {
	drv, err := Open()
	if errors.Is(err, ErrNoDriver) {
		t.Skipf("no driver here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.Init(); err != nil {
		t.Skipf("driver present but cuInit failed: %v", err)
	}
	v, err := drv.Version()
	if err != nil || v < 12000 {
		t.Fatalf("Version = %d, %v", v, err)
	}
	if s := ElapsedSymbol(drv); s != "cuEventElapsedTime_v2" && s != "cuEventElapsedTime" {
		t.Errorf("ElapsedSymbol = %q", s)
	}
}
