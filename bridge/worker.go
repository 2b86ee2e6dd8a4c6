// The GPU worker: owns the CUDA context, runs one case per request (copy
// in, launch between two events, copy out, free) and classifies device
// faults. See protocol.go for the wire format.

package bridge

import (
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/difftest"
)

// worker holds one device context and the loaded fatbin (and the
// baseline fatbin, module 1, when it was given one), or instead of the
// fatbin a bring-your-own adapter library (adapter.go).
type worker struct {
	drv     cuda.Driver
	packers map[string]packer
	mod     cuda.Module
	funcs   map[string]cuda.Function
	base    *cuda.Module // the baseline fatbin's module, nil without one
	bfuncs  map[string]cuda.Function
	adapter *adapterLib // the adapter library, nil when a fatbin is loaded
	count   int         // devices the driver reports
	device  int         // the ordinal opened
}

// errSticky is returned by serve after it has replied with a sticky error.
var errSticky = errors.New("CUDA context lost")

// serve runs the worker protocol: open device n, load the fatbin, say
// hello on w, then answer requests from r until r ends (nil) or a sticky
// error poisons the context (errSticky). It locks the calling goroutine to
// its OS thread, where the primary context is current.
func serve(r io.Reader, w io.Writer, drv cuda.Driver, fatbin []byte, device int, packers map[string]packer) error {
	return serveBuilds(r, w, drv, fatbin, nil, device, packers)
}

// serveBuilds is serve with a baseline fatbin loaded beside the fatbin
// as module 1 (nil: none), for requests with Module 1 (bench.go).
func serveBuilds(r io.Reader, w io.Writer, drv cuda.Driver, fatbin, baseline []byte, device int, packers map[string]packer) error {
	return serveWorker(r, w, drv, packers, func(wk *worker) (string, map[string]string, error) {
		desc, props, err := wk.open(fatbin, device)
		if err == nil && baseline != nil {
			err = wk.loadBaseline(desc, baseline)
		}
		return desc, props, err
	})
}

// serveAdapter is serve over a bring-your-own adapter library (the shared
// library at lib, docs/byo.md) instead of a fatbin: it opens device n,
// then dlopens lib with the device's primary context current, so the
// CUDA runtime in the library works in that context; its hello names the
// kernels the library implements.
func serveAdapter(r io.Reader, w io.Writer, drv cuda.Driver, lib string, device int, packers map[string]packer) error {
	return serveWorker(r, w, drv, packers, func(wk *worker) (string, map[string]string, error) {
		desc, props, err := wk.open(nil, device)
		if err != nil {
			return "", nil, err
		}
		if wk.adapter, err = openAdapter(lib); err != nil {
			return "", nil, err
		}
		return desc, props, nil
	})
}

// serveWorker runs the worker protocol over the device and builds that
// open sets up (see serve).
func serveWorker(r io.Reader, w io.Writer, drv cuda.Driver, packers map[string]packer, open func(*worker) (string, map[string]string, error)) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	enc := gob.NewEncoder(w)
	wk := &worker{drv: drv, packers: packers, funcs: map[string]cuda.Function{}, bfuncs: map[string]cuda.Function{}}
	desc, props, err := open(wk)
	if err != nil {
		_ = enc.Encode(reply{Class: difftest.Unavailable, Msg: err.Error()})
		return err
	}
	hello := reply{Device: desc, Props: props, DeviceCount: wk.count}
	if wk.adapter != nil {
		hello.Adapters = wk.adapter.kernels()
	}
	if err := enc.Encode(hello); err != nil {
		return err
	}
	dec := gob.NewDecoder(r)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading request: %w", err)
		}
		rep := wk.run(&req)
		rep.Seq = req.Seq
		if err := enc.Encode(rep); err != nil {
			return err
		}
		if rep.Sticky {
			return errSticky
		}
	}
}

// open initialises the driver, makes device n's primary context current
// and loads the fatbin (none when fatbin is nil: an adapter library runs
// the kernels). Every failure here means nothing can be tested.
func (wk *worker) open(fatbin []byte, n int) (string, map[string]string, error) {
	desc, err := wk.openDevice(fatbin, n)
	if err != nil {
		return "", nil, err
	}
	props := map[string]string{difftest.PropDevice: desc}
	if info, err := cuda.Describe(wk.drv, n); err == nil {
		props[difftest.PropDevice] = fmt.Sprintf("%s (sm_%d%d)", info.Name, info.CCMajor, info.CCMinor)
		props[difftest.PropCUDA] = info.CUDAVersionString()
		props[difftest.PropDriver] = info.DriverVersion
	}
	return desc, props, nil
}

// openDevice does the work of open and returns the device's description.
func (wk *worker) openDevice(fatbin []byte, n int) (string, error) {
	d := wk.drv
	if err := d.Init(); err != nil {
		if errors.Is(err, cuda.ErrNoDriver) {
			return "", err
		}
		return "", fmt.Errorf("no usable CUDA device: %w", err)
	}
	count, err := d.DeviceCount()
	if err != nil {
		return "", err
	}
	if n < 0 || n >= count {
		return "", fmt.Errorf("--device %d: this machine has %d CUDA device(s)", n, count)
	}
	wk.count, wk.device = count, n
	dev, err := d.Device(n)
	if err != nil {
		return "", err
	}
	name, err := d.DeviceName(dev)
	if err != nil {
		return "", err
	}
	major, err1 := d.DeviceAttribute(dev, cuda.AttrComputeCapabilityMajor)
	minor, err2 := d.DeviceAttribute(dev, cuda.AttrComputeCapabilityMinor)
	if err := errors.Join(err1, err2); err != nil {
		return "", err
	}
	ver, err := d.Version()
	if err != nil {
		return "", err
	}
	desc := fmt.Sprintf("%s (sm_%d%d, CUDA %d.%d driver)", name, major, minor, ver/1000, ver%1000/10)
	ctx, err := d.PrimaryCtxRetain(dev)
	if err != nil {
		return "", err
	}
	if err := d.CtxSetCurrent(ctx); err != nil {
		return "", err
	}
	if fatbin == nil {
		return desc, nil
	}
	mod, err := d.ModuleLoadData(fatbin)
	if err != nil {
		if errors.Is(err, cuda.ErrNoBinaryForGPU) || errors.Is(err, cuda.ErrInvalidImage) {
			return "", fmt.Errorf("%s: the fatbin has no image for sm_%d%d (it holds %s): %w", desc, major, minor, imageList(fatbin), err)
		}
		return "", fmt.Errorf("%s: loading the fatbin: %w", desc, err)
	}
	wk.mod = mod
	return desc, nil
}

// imageList names a fatbin's images, "sm_90 SASS, sm_120 SASS, compute_120 PTX".
func imageList(fatbin []byte) string {
	imgs, err := cuda.ParseFatbin(fatbin)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	var s []string
	for _, im := range imgs {
		s = append(s, im.ArchName()+" "+im.Kind.String())
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// classify maps a driver error to a failure class, and says whether the
// context is lost.
func classify(err error) (difftest.Class, bool) {
	code := cuda.Code(err)
	switch code {
	case cuda.ErrorIllegalAddress, cuda.ErrorMisalignedAddress, cuda.ErrorInvalidAddressSpace:
		return difftest.IllegalAddress, true
	case cuda.ErrorLaunchTimeout:
		return difftest.Timeout, true
	}
	return difftest.LaunchError, code.Sticky()
}

// probe tells whether the context still works after an error that
// classify did not find sticky: cuCtxSynchronize, then a 1-byte
// cuMemAlloc_v2 and cuMemFree_v2. Result.Sticky lists the codes the
// driver API reference documents as context-destroying, but a driver may
// lose the context with another (CUDA_ERROR_UNKNOWN after an Xid, for
// one); without the probe such a worker would fail every later case with
// launch-error. A non-nil error means the context is lost.
func (wk *worker) probe() error {
	if err := wk.drv.CtxSynchronize(); err != nil {
		return err
	}
	p, err := wk.drv.MemAlloc(1)
	if err != nil {
		return err
	}
	return wk.drv.MemFree(p)
}

// run executes one request.
func (wk *worker) run(req *request) reply {
	switch {
	case req.Bandwidth != nil:
		return wk.bandwidth(req.Bandwidth)
	case req.Bench != nil:
		return wk.bench(req)
	case req.Module != 0 && (req.Module != 1 || wk.base == nil):
		return reply{Class: difftest.LaunchError, Msg: fmt.Sprintf("no build %d in this worker (0 the fatbin, 1 a --baseline fatbin)", req.Module)}
	}
	pack, ok := wk.packers[req.Kernel]
	if !ok {
		return reply{Class: difftest.LaunchError, Msg: fmt.Sprintf("no CUDA launcher for kernel %q", req.Kernel)}
	}
	ts := map[string]devTensor{}
	for _, t := range req.Inputs {
		ts[t.Name] = devTensor{DType: t.DType, Shape: t.Shape}
	}
	for _, o := range req.Outputs {
		ts[o.Name] = devTensor{DType: o.DType, Shape: o.Shape}
	}
	if _, err := pack(req.Params, ts); err != nil {
		return reply{Class: difftest.InvalidCase, Msg: err.Error()}
	}
	mem := &devMem{drv: wk.drv}
	defer mem.free()
	fault := wk.fault
	for _, t := range req.Inputs {
		if _, isOut := outputIndex(req.Outputs, t.Name); isOut {
			continue // an in/out tensor (the cache) travels as an output
		}
		p, err := mem.upload(t.Data)
		if err != nil {
			return fault("copying input "+t.Name+" to the device", err)
		}
		ts[t.Name] = devTensor{DType: t.DType, Shape: t.Shape, Ptr: p}
	}
	base := make([]cuda.DevicePtr, len(req.Outputs))
	for i, o := range req.Outputs {
		if o.Guard < 0 || o.Guard > len(o.Full) {
			return reply{Class: difftest.LaunchError, Msg: fmt.Sprintf("output %s: guard %d outside its %d-byte buffer", o.Name, o.Guard, len(o.Full))}
		}
		p, err := mem.upload(o.Full)
		if err != nil {
			return fault("copying output "+o.Name+" (with guards) to the device", err)
		}
		base[i] = p
		ts[o.Name] = devTensor{DType: o.DType, Shape: o.Shape, Ptr: guarded(p, o)}
	}
	l, err := pack(req.Params, ts)
	if err != nil {
		return reply{Class: difftest.InvalidCase, Msg: err.Error()}
	}
	rep := reply{Outputs: make([][]byte, len(req.Outputs))}
	if l.Grid.X != 0 {
		t, err := wk.launch(req.Module, req.Kernel, l)
		if errors.Is(err, errDeclined) {
			return reply{Class: difftest.Unavailable, Msg: err.Error(), Declined: true}
		}
		if err != nil {
			return fault(wk.launchName(req.Kernel, l), err)
		}
		rep.KernelNanos = t.Nanoseconds()
	}
	for i, o := range req.Outputs {
		rep.Outputs[i] = make([]byte, len(o.Full))
		if err := wk.drv.MemcpyDtoH(rep.Outputs[i], base[i]); err != nil {
			return fault("copying output "+o.Name+" back", err)
		}
	}
	if l.Grid.X != 0 {
		if r, changed := wk.inputsKept(req, ts); changed {
			return r
		}
	}
	return rep
}

// inputsKept reads every input's device copy back after the launch and
// compares it with the bytes uploaded: a kernel (or an adapter's own
// code) that writes an input fails the case as input-modified, naming
// the tensor and its first changed element (difftest.DiffInput). The
// harness's digest of its host copies cannot see a device write, so this
// is the check of the device paths (cuda, emu, cudasrc:, cudasrc-emu:).
// It costs one device-to-host copy of the inputs per case, as large as
// the upload. An in/out tensor travels as an output and is judged there.
func (wk *worker) inputsKept(req *request, ts map[string]devTensor) (reply, bool) {
	var back []byte
	for _, t := range req.Inputs {
		dt := ts[t.Name]
		if dt.Ptr == 0 || len(t.Data) == 0 {
			continue
		}
		if _, isOut := outputIndex(req.Outputs, t.Name); isOut {
			continue
		}
		if cap(back) < len(t.Data) {
			back = make([]byte, len(t.Data))
		}
		back = back[:len(t.Data)]
		if err := wk.drv.MemcpyDtoH(back, dt.Ptr); err != nil {
			return wk.fault("copying input "+t.Name+" back to check it", err), true
		}
		if ch := difftest.DiffInput(&difftest.Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Data: t.Data}, back); ch != nil {
			return reply{Class: difftest.InputModified, Msg: ch.String() + " (the device copy, read back after the launch)"}, true
		}
	}
	return reply{}, false
}

// devMem is the device memory of one request: free releases every
// allocation, after the reply is built.
type devMem struct {
	drv  cuda.Driver
	ptrs []cuda.DevicePtr
}

// alloc allocates n bytes, freed by free.
func (m *devMem) alloc(n int64) (cuda.DevicePtr, error) {
	p, err := m.drv.MemAlloc(uint64(n))
	if err != nil {
		return 0, err
	}
	m.ptrs = append(m.ptrs, p)
	return p, nil
}

// upload copies b into a new allocation and returns it; an empty b
// allocates nothing and is pointer 0.
func (m *devMem) upload(b []byte) (cuda.DevicePtr, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p, err := m.alloc(int64(len(b)))
	if err != nil {
		return 0, err
	}
	return p, m.drv.MemcpyHtoD(p, b)
}

// free releases every allocation.
func (m *devMem) free() {
	for _, p := range m.ptrs {
		_ = m.drv.MemFree(p) // after a sticky error these fail; the process exits anyway
	}
	m.ptrs = nil
}

// guarded is the pointer the kernel is given for output o whose whole
// buffer (guard, output, guard) was uploaded at base: base + Guard.
// cuMemAlloc returns 256-byte aligned memory and the harness's guard
// (difftest.GuardBytes, 4096) keeps that alignment. An output with no
// buffer (base 0) stays 0.
func guarded(base cuda.DevicePtr, o wireOutput) cuda.DevicePtr {
	if base != 0 && o.Guard < len(o.Full) {
		return base + cuda.DevicePtr(o.Guard)
	}
	return base
}

func outputIndex(outs []wireOutput, name string) (int, bool) {
	for i, o := range outs {
		if o.Name == name {
			return i, true
		}
	}
	return -1, false
}

// fault is the reply to a driver error during what: its class, and
// whether the context is lost (classify, then a probe of the context for
// an error classify does not find sticky).
func (wk *worker) fault(what string, err error) reply {
	class, sticky := classify(err)
	msg := what + ": " + err.Error()
	if !sticky {
		if perr := wk.probe(); perr != nil {
			sticky = true
			msg += "; the CUDA context is lost (a probe after it failed: " + perr.Error() + ")"
		}
	}
	return reply{Class: class, Msg: msg, Sticky: sticky}
}

// function returns entry point entry of build module (0 the fatbin, 1 the
// baseline), looked up once.
func (wk *worker) function(module int, entry string) (cuda.Function, error) {
	mod, funcs, what := wk.mod, wk.funcs, "the fatbin"
	if module == 1 && wk.base != nil {
		mod, funcs, what = *wk.base, wk.bfuncs, "the baseline fatbin"
	}
	if fn, ok := funcs[entry]; ok {
		return fn, nil
	}
	fn, err := wk.drv.ModuleGetFunction(mod, entry)
	if err != nil {
		return 0, fmt.Errorf("%s has no entry point %s: %w", what, entry, err)
	}
	funcs[entry] = fn
	return fn, nil
}

// launch runs l of build module (kernel's case) between two events and
// returns the device time. Errors of the kernel itself surface at the
// event synchronisation (with an adapter library, also at its own
// synchronisation); an adapter's declining is errDeclined.
func (wk *worker) launch(module int, kernel string, l launch) (time.Duration, error) {
	d := wk.drv
	if err := wk.ready(module, kernel, l); err != nil {
		return 0, err
	}
	start, stop, release, err := eventPair(d)
	if err != nil {
		return 0, err
	}
	defer release()
	if err := d.EventRecord(start); err != nil {
		return 0, err
	}
	if err := wk.issue(module, kernel, l); err != nil {
		return 0, err
	}
	if err := d.EventRecord(stop); err != nil {
		return 0, err
	}
	if err := wk.settle(stop); err != nil {
		return 0, err
	}
	return d.EventElapsed(start, stop)
}

// launchName names what launch runs, for messages: the fatbin's entry
// point, or the adapter's function.
func (wk *worker) launchName(kernel string, l launch) string {
	if wk.adapter != nil {
		return adapterFunc(kernel)
	}
	return l.Entry
}

// ready checks that launch l of build module can be issued: the fatbin's
// entry point exists, or the adapter library defines kernel's function.
func (wk *worker) ready(module int, kernel string, l launch) error {
	if wk.adapter != nil {
		if _, ok := wk.adapter.fns[kernel]; !ok {
			return fmt.Errorf("the adapter library defines no %s", adapterFunc(kernel))
		}
		return nil
	}
	_, err := wk.function(module, l.Entry)
	return err
}

// issue starts l on the null stream: cuLaunchKernel of the fatbin's entry
// point with the packed struct, or the adapter's function with it.
func (wk *worker) issue(module int, kernel string, l launch) error {
	if wk.adapter != nil {
		return wk.adapter.call(kernel, l.Args[0])
	}
	fn, err := wk.function(module, l.Entry)
	if err != nil {
		return err
	}
	return wk.drv.LaunchKernel(fn, l.Grid, l.Block, l.SharedMem, l.Args...)
}

// settle waits for event stop, recorded after the launch, and with an
// adapter library for the library's own work (kd_adapter_synchronize).
func (wk *worker) settle(stop cuda.Event) error {
	if err := wk.drv.EventSynchronize(stop); err != nil {
		return err
	}
	if wk.adapter != nil {
		return wk.adapter.synchronize()
	}
	return nil
}
