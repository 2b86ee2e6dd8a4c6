//go:build gpu

// Tests on a real device (go test -tags gpu). They need a driver and a
// GPU; scripts/gpu-check runs them from the prebuilt test binary, with
// KD_FATBIN naming the kernels' fatbin.

package cuda

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// storePTX is a one-thread kernel: *(u32*)p = v. Hand-written PTX that
// every driver of CUDA 11 and later JITs for any GPU.
const storePTX = `.version 7.0
.target sm_70
.address_size 64
.visible .entry kd_store(.param .u64 p, .param .u32 v)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [p];
	ld.param.u32 %r1, [v];
	cvta.to.global.u64 %rd1, %rd1;
	st.global.u32 [%rd1], %r1;
	ret;
}
` + "\x00"

func openGPU(t *testing.T) Driver {
	t.Helper()
	drv, err := Open()
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := drv.Init(); err != nil {
		t.Fatalf("cuInit: %v", err)
	}
	return drv
}

func TestGPUDescribe(t *testing.T) {
	drv := openGPU(t)
	n, err := drv.DeviceCount()
	if err != nil || n < 1 {
		t.Fatalf("DeviceCount = %d, %v", n, err)
	}
	info, err := Describe(drv, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", info)
	if info.Name == "" || info.CCMajor < 7 || info.MemoryTotal < 1<<30 || info.CUDAVersion < 12000 {
		t.Errorf("implausible device: %+v", info)
	}
	if info.UUID == "" || info.DriverVersion == "" {
		t.Errorf("NVML gave no UUID or driver version: %v", info.Warnings)
	}
	t.Logf("event timer bound as %s", ElapsedSymbol(drv))
}

// storeKernel makes device 0's primary context current on the calling
// thread (locked to it until the test ends), loads storePTX and returns
// the module and its kd_store.
func storeKernel(t *testing.T, drv Driver) (Module, Function) {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	dev, err := drv.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := drv.PrimaryCtxRetain(dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.PrimaryCtxRelease(dev) })
	if err := drv.CtxSetCurrent(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := drv.ModuleLoadData([]byte(storePTX))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.ModuleUnload(mod) })
	fn, err := drv.ModuleGetFunction(mod, "kd_store")
	if err != nil {
		t.Fatal(err)
	}
	return mod, fn
}

// storeArgs packs kd_store's parameters (u64 p, u32 v).
func storeArgs(ptr DevicePtr, v uint32) [][]byte {
	a, b := make([]byte, 8), make([]byte, 4)
	binary.LittleEndian.PutUint64(a, uint64(ptr))
	binary.LittleEndian.PutUint32(b, v)
	return [][]byte{a, b}
}

// The whole path once: context, memory, module from PTX, launch with
// by-value arguments, events.
func TestGPURoundTrip(t *testing.T) {
	drv := openGPU(t)
	mod, fn := storeKernel(t, drv)
	p, err := drv.MemAlloc(64)
	if err != nil {
		t.Fatal(err)
	}
	in := make([]byte, 64)
	for i := range in {
		in[i] = byte(i)
	}
	if err := drv.MemcpyHtoD(p, in); err != nil {
		t.Fatal(err)
	}
	if err := drv.MemsetD8(p+32, 0xEE, 8); err != nil {
		t.Fatal(err)
	}
	if _, err := drv.ModuleGetFunction(mod, "kd_absent"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing entry point: %v, want ErrNotFound", err)
	}
	start, _ := drv.EventCreate()
	stop, _ := drv.EventCreate()
	defer drv.EventDestroy(start)
	defer drv.EventDestroy(stop)
	one := Dim3{1, 1, 1}
	if err := drv.EventRecord(start); err != nil {
		t.Fatal(err)
	}
	if err := drv.LaunchKernel(fn, one, one, 0, storeArgs(p+4, 0xDEADBEEF)...); err != nil {
		t.Fatal(err)
	}
	if err := drv.EventRecord(stop); err != nil {
		t.Fatal(err)
	}
	if err := drv.EventSynchronize(stop); err != nil {
		t.Fatal(err)
	}
	el, err := drv.EventElapsed(start, stop)
	if err != nil || el <= 0 {
		t.Errorf("EventElapsed = %v, %v", el, err)
	}
	out := make([]byte, 64)
	if err := drv.MemcpyDtoH(out, p); err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), in...)
	binary.LittleEndian.PutUint32(want[4:], 0xDEADBEEF)
	for i := 32; i < 40; i++ {
		want[i] = 0xEE
	}
	if string(out) != string(want) {
		t.Fatalf("device memory % x, want % x", out, want)
	}
	if err := drv.MemFree(p); err != nil {
		t.Fatal(err)
	}
}

// envChild names the part a re-executed test binary runs.
const envChild = "KD_CUDA_TEST_CHILD"

// A store to an unmapped address is CUDA_ERROR_ILLEGAL_ADDRESS at the next
// sync, sticky, and named by the driver. The fault poisons the whole
// process, so it runs in a child (this binary re-executed for
// TestGPUIllegalAddressChild alone), and this process's context is shown
// to be unharmed afterwards, whatever order the tests run in.
func TestGPUIllegalAddress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestGPUIllegalAddressChild$", "-test.v")
	cmd.Env = append(os.Environ(), envChild+"=illegal-address")
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestGPUIllegalAddressChild") {
		t.Fatalf("the illegal-address child failed: %v", err)
	}
	drv := openGPU(t)
	_, fn := storeKernel(t, drv)
	p, err := drv.MemAlloc(4)
	if err != nil {
		t.Fatalf("this process's context after the child's fault: %v", err)
	}
	defer drv.MemFree(p)
	one := Dim3{1, 1, 1}
	if err := drv.LaunchKernel(fn, one, one, 0, storeArgs(p, 7)...); err != nil {
		t.Fatal(err)
	}
	if err := drv.CtxSynchronize(); err != nil {
		t.Fatalf("sync in this process after the child's fault: %v", err)
	}
}

// TestGPUIllegalAddressChild is TestGPUIllegalAddress's child; it runs
// only when re-executed with KD_CUDA_TEST_CHILD=illegal-address.
func TestGPUIllegalAddressChild(t *testing.T) {
	if os.Getenv(envChild) != "illegal-address" {
		t.Skip("runs only as TestGPUIllegalAddress's child process")
	}
	drv := openGPU(t)
	_, fn := storeKernel(t, drv)
	one := Dim3{1, 1, 1}
	if err := drv.LaunchKernel(fn, one, one, 0, storeArgs(0x10, 1)...); err != nil {
		t.Fatalf("launch: %v", err)
	}
	err := drv.CtxSynchronize()
	if !errors.Is(err, ErrIllegalAddress) || !Code(err).Sticky() {
		t.Fatalf("sync after a bad store: %v, want sticky ErrIllegalAddress", err)
	}
	var ce *CUDAError
	if errors.As(err, &ce) && ce.Name != "CUDA_ERROR_ILLEGAL_ADDRESS" {
		t.Errorf("cuGetErrorName gave %q", ce.Name)
	}
	if _, err := drv.MemAlloc(64); err == nil {
		t.Error("the context still works after an illegal address")
	}
}

// The kernels' fatbin loads on this GPU and every entry point it declares
// resolves.
func TestGPUFatbinEntryPoints(t *testing.T) {
	path := os.Getenv("KD_FATBIN")
	if path == "" {
		path = "../build/kernels.fatbin"
	}
	image, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("no fatbin: %v", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	drv := openGPU(t)
	dev, _ := drv.Device(0)
	ctx, err := drv.PrimaryCtxRetain(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.PrimaryCtxRelease(dev)
	if err := drv.CtxSetCurrent(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := drv.ModuleLoadData(image)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer drv.ModuleUnload(mod)
	// Every entry point the fatbin's images declare resolves on this GPU;
	// that they are the kernels' entry points is checked where the kernels
	// are known (scripts/check-kernels and bridge's launch table test,
	// against kernels/entries.txt): this package knows no kernel.
	imgs, err := ParseFatbin(image)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	declared := map[string]bool{}
	for _, im := range imgs {
		ps, err := ImageParams(image, im)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for name := range ps {
			declared[name] = true
		}
	}
	if len(declared) == 0 {
		t.Fatalf("%s declares no entry point", path)
	}
	for name := range declared {
		if _, err := drv.ModuleGetFunction(mod, name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
