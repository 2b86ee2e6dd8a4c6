// Package fakecuda is a CPU stand-in for the CUDA driver (cuda.Driver), so
// that the launch path, the worker protocol and its restart logic are
// tested on machines without a GPU. It models what those tests need of a
// device: host-backed allocations with bounds-checked copies, modules
// with named entry points implemented in Go, asynchronous launch errors
// that surface at the next synchronisation, and sticky errors that poison
// every later call, as an illegal address does on real hardware.
package fakecuda

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kerneldiff/kerneldiff/cuda"
)

// Kernel is a Go implementation of a device entry point. args are the
// parameter bytes as passed to LaunchKernel. A returned error with a
// *cuda.CUDAError is reported at the next synchronisation, like an
// asynchronous device fault; a sticky code poisons the context.
type Kernel func(d *Driver, grid, block cuda.Dim3, args [][]byte) error

// Driver is a fake device. Create it with New; its methods are safe for
// use from one goroutine at a time (as the worker uses a driver).
type Driver struct {
	mu      sync.Mutex
	kernels map[string]Kernel
	mem     map[cuda.DevicePtr][]byte
	next    cuda.DevicePtr
	inited  bool
	pending error // asynchronous error awaiting a sync
	sticky  error // a sticky error: every call fails with it
	funcs   []string
	events  map[cuda.Event]time.Time
	// Name, CC and TotalMem describe the device.
	Name             string
	CCMajor, CCMinor int
	TotalMem         uint64
	// InitError, when set, is what Init returns (e.g. CUDA_ERROR_NO_DEVICE).
	InitError error
	// LoadError, when set, is what ModuleLoadData returns (e.g.
	// CUDA_ERROR_NO_BINARY_FOR_GPU).
	LoadError error
	// LostContextCodes lists codes beyond those cuda.Result.Sticky names
	// that poison the context when a kernel returns them, as a real driver
	// may do for a code the documented list omits (CUDA_ERROR_UNKNOWN
	// after a device fault).
	LostContextCodes []cuda.Result
	// Launches counts LaunchKernel calls.
	Launches int
}

// New returns a fake sm_90 device with 1 GiB and the given entry points.
func New(kernels map[string]Kernel) *Driver {
	return &Driver{
		kernels:  kernels,
		mem:      map[cuda.DevicePtr][]byte{},
		next:     0x7f0000000000,
		events:   map[cuda.Event]time.Time{},
		Name:     "Fake GPU",
		CCMajor:  9,
		TotalMem: 1 << 30,
	}
}

func fail(call string, code cuda.Result) error { return &cuda.CUDAError{Call: call, Code: code} }

// gate returns the sticky error, or a not-initialised error.
func (d *Driver) gate(call string) error {
	if d.sticky != nil {
		return d.sticky
	}
	if !d.inited {
		return fail(call, cuda.ErrorNotInitialized)
	}
	return nil
}

// syncErr surfaces a pending asynchronous error.
func (d *Driver) syncErr(call string) error {
	if err := d.gate(call); err != nil {
		return err
	}
	if d.pending != nil {
		err := d.pending
		d.pending = nil
		if c := cuda.Code(err); c.Sticky() || slices.Contains(d.LostContextCodes, c) {
			d.sticky = err
		}
		return err
	}
	return nil
}

// Init implements cuda.Driver.
func (d *Driver) Init() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.InitError != nil {
		return d.InitError
	}
	d.inited = true
	return nil
}

// Version implements cuda.Driver: 13000.
func (d *Driver) Version() (int, error) { return 13000, nil }

// DeviceCount implements cuda.Driver: one device.
func (d *Driver) DeviceCount() (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return 1, d.gate("cuDeviceGetCount")
}

// Device implements cuda.Driver; only ordinal 0 exists.
func (d *Driver) Device(n int) (cuda.Device, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.gate("cuDeviceGet"); err != nil {
		return 0, err
	}
	if n != 0 {
		return 0, fail("cuDeviceGet", cuda.ErrorInvalidDevice)
	}
	return 0, nil
}

// DeviceName implements cuda.Driver.
func (d *Driver) DeviceName(cuda.Device) (string, error) { return d.Name, nil }

// DeviceAttribute implements cuda.Driver for the attributes of package cuda.
func (d *Driver) DeviceAttribute(_ cuda.Device, a cuda.Attribute) (int, error) {
	switch a {
	case cuda.AttrComputeCapabilityMajor:
		return d.CCMajor, nil
	case cuda.AttrComputeCapabilityMinor:
		return d.CCMinor, nil
	case cuda.AttrMultiprocessorCount:
		return 132, nil
	case cuda.AttrMaxThreadsPerBlock:
		return 1024, nil
	case cuda.AttrL2CacheSize:
		return FakeL2Bytes, nil
	}
	return 0, nil
}

// DeviceTotalMem implements cuda.Driver.
func (d *Driver) DeviceTotalMem(cuda.Device) (uint64, error) { return d.TotalMem, nil }

// PrimaryCtxRetain implements cuda.Driver.
func (d *Driver) PrimaryCtxRetain(cuda.Device) (cuda.Context, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return 1, d.gate("cuDevicePrimaryCtxRetain")
}

// PrimaryCtxRelease implements cuda.Driver.
func (d *Driver) PrimaryCtxRelease(cuda.Device) error { return nil }

// CtxSetCurrent implements cuda.Driver.
func (d *Driver) CtxSetCurrent(cuda.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.gate("cuCtxSetCurrent")
}

// CtxSynchronize implements cuda.Driver.
func (d *Driver) CtxSynchronize() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.syncErr("cuCtxSynchronize")
}

// MemAlloc implements cuda.Driver. Allocations are 256-byte aligned and
// never adjacent, so an out-of-bounds access is always detected.
func (d *Driver) MemAlloc(n uint64) (cuda.DevicePtr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.gate("cuMemAlloc_v2"); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, fail("cuMemAlloc_v2", cuda.ErrorInvalidValue)
	}
	if n > d.TotalMem {
		return 0, fail("cuMemAlloc_v2", cuda.ErrorOutOfMemory)
	}
	p := d.next
	d.mem[p] = make([]byte, n)
	d.next += cuda.DevicePtr((n+255)/256*256 + 4096)
	return p, nil
}

// MemFree implements cuda.Driver.
func (d *Driver) MemFree(p cuda.DevicePtr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.gate("cuMemFree_v2"); err != nil {
		return err
	}
	if _, ok := d.mem[p]; !ok {
		return fail("cuMemFree_v2", cuda.ErrorInvalidValue)
	}
	delete(d.mem, p)
	return nil
}

// Live returns the number of allocations not yet freed.
func (d *Driver) Live() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.mem)
}

// span returns the bytes [p, p+n) of one allocation, or nil.
func (d *Driver) span(p cuda.DevicePtr, n uint64) []byte {
	for base, b := range d.mem {
		if p >= base && uint64(p-base)+n <= uint64(len(b)) {
			return b[p-base : uint64(p-base)+n]
		}
	}
	return nil
}

// MemcpyHtoD implements cuda.Driver.
func (d *Driver) MemcpyHtoD(dst cuda.DevicePtr, src []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, err := d.hostCopySpan("cuMemcpyHtoD_v2", dst, len(src))
	if err == nil {
		copy(s, src)
	}
	return err
}

// MemcpyDtoH implements cuda.Driver.
func (d *Driver) MemcpyDtoH(dst []byte, src cuda.DevicePtr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, err := d.hostCopySpan("cuMemcpyDtoH_v2", src, len(dst))
	if err == nil {
		copy(dst, s)
	}
	return err
}

// hostCopySpan is the device side of a copy to or from the host (call,
// as cuMemcpyHtoD_v2): n bytes at p inside one allocation, after the
// synchronising copy has reported any pending error (syncErr); an
// invalid value when they are not. The caller holds d.mu.
func (d *Driver) hostCopySpan(call string, p cuda.DevicePtr, n int) ([]byte, error) {
	if err := d.syncErr(call); err != nil {
		return nil, err
	}
	s := d.span(p, uint64(n))
	if s == nil {
		return nil, fail(call, cuda.ErrorInvalidValue)
	}
	return s, nil
}

// FakeL2Bytes is the L2 cache size the fake device reports
// (cuda.AttrL2CacheSize): 1 MiB, so that an L2 flush buffer stays small
// in tests.
const FakeL2Bytes = 1 << 20

// MemcpyDtoD implements cuda.Driver: both ranges must lie inside one
// allocation each.
func (d *Driver) MemcpyDtoD(dst, src cuda.DevicePtr, n uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.gate("cuMemcpyDtoD_v2"); err != nil {
		return err
	}
	s, t := d.span(src, n), d.span(dst, n)
	if s == nil || t == nil {
		return fail("cuMemcpyDtoD_v2", cuda.ErrorInvalidValue)
	}
	copy(t, s)
	return nil
}

// MemsetD8 implements cuda.Driver.
func (d *Driver) MemsetD8(dst cuda.DevicePtr, v byte, n uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.gate("cuMemsetD8_v2"); err != nil {
		return err
	}
	s := d.span(dst, n)
	if s == nil {
		return fail("cuMemsetD8_v2", cuda.ErrorInvalidValue)
	}
	for i := range s {
		s[i] = v
	}
	return nil
}

// ModuleLoadData implements cuda.Driver: any non-empty image loads unless
// LoadError is set.
func (d *Driver) ModuleLoadData(image []byte) (cuda.Module, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.gate("cuModuleLoadData"); err != nil {
		return 0, err
	}
	if d.LoadError != nil {
		return 0, d.LoadError
	}
	if len(image) == 0 {
		return 0, fail("cuModuleLoadData", cuda.ErrorInvalidImage)
	}
	return 1, nil
}

// ModuleUnload implements cuda.Driver.
func (d *Driver) ModuleUnload(cuda.Module) error { return nil }

// ModuleGetFunction implements cuda.Driver: the entry points given to New.
func (d *Driver) ModuleGetFunction(_ cuda.Module, name string) (cuda.Function, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.gate("cuModuleGetFunction"); err != nil {
		return 0, err
	}
	if _, ok := d.kernels[name]; !ok {
		return 0, &cuda.CUDAError{Call: "cuModuleGetFunction", Code: cuda.ErrorNotFound, Desc: fmt.Sprintf("entry point %q", name)}
	}
	d.funcs = append(d.funcs, name)
	return cuda.Function(len(d.funcs)), nil
}

// LaunchKernel implements cuda.Driver: it runs the Go kernel at once and
// keeps its error for the next synchronisation. A kernel that blocks
// blocks the launch (a hang).
func (d *Driver) LaunchKernel(f cuda.Function, grid, block cuda.Dim3, _ uint32, args ...[]byte) error {
	d.mu.Lock()
	if err := d.syncErr("cuLaunchKernel"); err != nil {
		d.mu.Unlock()
		return err
	}
	if f == 0 || int(f) > len(d.funcs) {
		d.mu.Unlock()
		return fail("cuLaunchKernel", cuda.ErrorInvalidValue)
	}
	if grid.X == 0 || grid.Y == 0 || grid.Z == 0 || block.X == 0 || block.Y == 0 || block.Z == 0 || block.X*block.Y*block.Z > 1024 {
		d.mu.Unlock()
		return fail("cuLaunchKernel", cuda.ErrorInvalidValue)
	}
	k := d.kernels[d.funcs[f-1]]
	d.Launches++
	d.mu.Unlock()
	err := k(d, grid, block, args)
	if err != nil {
		d.mu.Lock()
		d.pending = err
		d.mu.Unlock()
	}
	return nil
}

// Bytes returns device memory [p, p+n) for a Go kernel to read or write,
// or an illegal-address error when it is not inside one allocation.
func (d *Driver) Bytes(p cuda.DevicePtr, n uint64) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n == 0 {
		return nil, nil
	}
	s := d.span(p, n)
	if s == nil {
		return nil, &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorIllegalAddress, Desc: fmt.Sprintf("access [%#x, +%d) outside any allocation", uint64(p), n)}
	}
	return s, nil
}

// Ptr reads the device pointer at byte offset off of a packed argument.
func Ptr(arg []byte, off int) cuda.DevicePtr {
	return cuda.DevicePtr(binary.LittleEndian.Uint64(arg[off:]))
}

// EventCreate implements cuda.Driver.
func (d *Driver) EventCreate() (cuda.Event, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.gate("cuEventCreate"); err != nil {
		return 0, err
	}
	e := cuda.Event(len(d.events) + 1)
	d.events[e] = time.Time{}
	return e, nil
}

// EventRecord implements cuda.Driver.
func (d *Driver) EventRecord(e cuda.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.gate("cuEventRecord"); err != nil {
		return err
	}
	d.events[e] = time.Now()
	return nil
}

// EventSynchronize implements cuda.Driver; pending launch errors surface here.
func (d *Driver) EventSynchronize(cuda.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.syncErr("cuEventSynchronize")
}

// EventElapsed implements cuda.Driver: host time between the records.
func (d *Driver) EventElapsed(a, b cuda.Event) (time.Duration, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.gate("cuEventElapsedTime_v2"); err != nil {
		return 0, err
	}
	ta, tb := d.events[a], d.events[b]
	if ta.IsZero() || tb.IsZero() {
		return 0, fail("cuEventElapsedTime_v2", cuda.ErrorInvalidValue)
	}
	return tb.Sub(ta), nil
}

// EventDestroy implements cuda.Driver.
func (d *Driver) EventDestroy(e cuda.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.events, e)
	return nil
}

var _ cuda.Driver = (*Driver)(nil)
