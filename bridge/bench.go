// difftest bench on the GPU: the worker times a case's kernel with CUDA
// events and a cold L2, for one build or two interleaved (the fatbin and a
// --baseline fatbin loaded beside it in the same context, reading the same
// input buffers), and measures the device's copy bandwidth; the `cuda`
// implementation exposes both to the harness (bench.KernelTimer,
// bench.BaselineProvider, bench.BandwidthMeter). The method is
// difftest/bench.go's: FlashInfer's flush of a buffer at least twice the
// L2 before each run (written with cuMemsetD8, outside the timed events),
// or sglang's rotation of input copies whose total exceeds twice the L2.

package bridge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/bench"
	"github.com/kerneldiff/kerneldiff/difftest/bench/stats"
)

// benchSpec asks the worker for timed runs of a request's case.
type benchSpec struct {
	Warmup, Runs int
	Cold         bench.ColdCache
	Modules      []int // the builds to time, interleaved: [0] or [0, 1]
}

// benchReply carries the times and the outputs of the timed launches.
type benchReply struct {
	Times      [][]int64    // [build][run], device ns between the events around each launch
	Outputs    [][][][]byte // [build][copy][output]: each output's Full bytes after its copy's last launch
	Copies     int
	FlushBytes int64
	ColdBytes  int64
	L2Bytes    int64
}

// bandwidthSpec asks for device-to-device copies of Bytes (0: the
// default size, copyBytes).
type bandwidthSpec struct {
	Warmup, Runs int
	Bytes        int64
}

// bandwidthReply carries each timed copy's device time.
type bandwidthReply struct {
	Bytes   int64
	TimesNS []int64
}

// Sizes of the cold-L2 methods.
const (
	// fallbackL2 is assumed when the driver reports no L2 size: 128 MiB,
	// above every NVIDIA GPU's L2 so far (B200: 126 MiB).
	fallbackL2 = 128 << 20
	// minFlush bounds the flush buffer from below (FlashInfer's default
	// is 256 MiB whatever the GPU; twice the L2 is what must be exceeded).
	minFlush = 1 << 20
	// maxCopies bounds the rotated input copies; maxRotateBytes their
	// total. A case too small to fill twice the L2 within them gets
	// fewer bytes between runs, and the result a warning.
	maxCopies      = 4096
	maxRotateBytes = 8 << 30
)

// l2Bytes is the device's L2 size (CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE), or
// fallbackL2 when the driver reports none.
func (wk *worker) l2Bytes() int64 {
	dev, err := wk.drv.Device(wk.device)
	if err != nil {
		return fallbackL2
	}
	v, err := wk.drv.DeviceAttribute(dev, cuda.AttrL2CacheSize)
	if err != nil || v <= 0 {
		return fallbackL2
	}
	return int64(v)
}

// copyBytes is the default size of one bandwidth copy: four times the L2,
// within [16 MiB, 1 GiB], so that the copy streams from device memory.
func copyBytes(l2 int64) int64 {
	return min(max(4*l2, 16<<20), 1<<30)
}

// loadBaseline loads the baseline fatbin as module 1.
func (wk *worker) loadBaseline(desc string, image []byte) error {
	mod, err := wk.drv.ModuleLoadData(image)
	if err != nil {
		return fmt.Errorf("%s: loading the baseline fatbin: %w", desc, err)
	}
	wk.base = &mod
	return nil
}

// bench answers a request with Bench set: it allocates the case's inputs
// (Copies of them with ColdRotate) once, each build's guarded outputs per
// copy, and times Warmup+Runs launches of each build, interleaved (run i
// times the builds in request order for even i, reversed for odd i),
// each between two events after the L2 was flushed (ColdFlush) or on
// copy i mod Copies (ColdRotate). The outputs are not reset between runs:
// every launch of a correct kernel writes the same bytes.
func (wk *worker) bench(req *request) reply {
	spec := req.Bench
	if spec.Runs < 1 || spec.Warmup < 0 || len(spec.Modules) == 0 {
		return reply{Class: difftest.LaunchError, Msg: fmt.Sprintf("bench request: runs %d, warm-up %d, %d builds", spec.Runs, spec.Warmup, len(spec.Modules))}
	}
	for _, m := range spec.Modules {
		if m != 0 && (m != 1 || wk.base == nil) {
			return reply{Class: difftest.LaunchError, Msg: fmt.Sprintf("no build %d in this worker (0 the fatbin, 1 a --baseline fatbin)", m)}
		}
	}
	pack, ok := wk.packers[req.Kernel]
	if !ok {
		return reply{Class: difftest.LaunchError, Msg: fmt.Sprintf("no CUDA launcher for kernel %q", req.Kernel)}
	}
	shape := map[string]devTensor{}
	var inBytes, outBytes int64
	for _, t := range req.Inputs {
		shape[t.Name] = devTensor{DType: t.DType, Shape: t.Shape}
		if _, isOut := outputIndex(req.Outputs, t.Name); !isOut {
			inBytes += int64(len(t.Data))
		}
	}
	for _, o := range req.Outputs {
		shape[o.Name] = devTensor{DType: o.DType, Shape: o.Shape}
		outBytes += int64(len(o.Full))
		if o.Guard < 0 || o.Guard > len(o.Full) {
			return reply{Class: difftest.LaunchError, Msg: fmt.Sprintf("output %s: guard %d outside its %d-byte buffer", o.Name, o.Guard, len(o.Full))}
		}
	}
	if _, err := pack(req.Params, shape); err != nil {
		return reply{Class: difftest.InvalidCase, Msg: err.Error()}
	}
	l2 := wk.l2Bytes()
	nb := len(spec.Modules)
	perCopy := max(inBytes+outBytes*int64(nb), 1)
	br := &benchReply{L2Bytes: l2, Copies: 1}
	if spec.Cold == bench.ColdRotate {
		// Enough copies that the other copies between two runs on one
		// exceed twice the L2; never more than there are launches (then
		// each copy runs once, and its data is as cold as with the copies
		// asked for).
		n := (2*l2+perCopy-1)/perCopy + 1
		n = min(max(n, 2), maxCopies, max(maxRotateBytes/perCopy, 2))
		br.ColdBytes = (n - 1) * perCopy
		br.Copies = int(min(n, int64(spec.Warmup+spec.Runs)))
	} else {
		br.FlushBytes = max(2*l2, minFlush)
		br.ColdBytes = br.FlushBytes
	}

	d := wk.drv
	mem := &devMem{drv: d}
	defer mem.free()
	var flush cuda.DevicePtr
	if br.FlushBytes > 0 {
		var err error
		if flush, err = mem.alloc(br.FlushBytes); err != nil {
			return wk.fault(fmt.Sprintf("allocating the %d-byte L2 flush buffer", br.FlushBytes), err)
		}
	}
	// plans[b][c] is build b's launch on copy c; outBase the outputs' bases.
	plans := make([][]launch, nb)
	outBase := make([][][]cuda.DevicePtr, nb)
	for b := range plans {
		plans[b] = make([]launch, br.Copies)
		outBase[b] = make([][]cuda.DevicePtr, br.Copies)
	}
	for c := 0; c < br.Copies; c++ {
		ts := map[string]devTensor{}
		for _, t := range req.Inputs {
			if _, isOut := outputIndex(req.Outputs, t.Name); isOut {
				continue
			}
			p, err := mem.upload(t.Data)
			if err != nil {
				return wk.fault(fmt.Sprintf("copying input %s (copy %d of %d) to the device", t.Name, c+1, br.Copies), err)
			}
			ts[t.Name] = devTensor{DType: t.DType, Shape: t.Shape, Ptr: p}
		}
		for b, m := range spec.Modules {
			outBase[b][c] = make([]cuda.DevicePtr, len(req.Outputs))
			for i, o := range req.Outputs {
				p, err := mem.upload(o.Full)
				if err != nil {
					return wk.fault(fmt.Sprintf("copying output %s (with guards, copy %d) to the device", o.Name, c+1), err)
				}
				outBase[b][c][i] = p
				ts[o.Name] = devTensor{DType: o.DType, Shape: o.Shape, Ptr: guarded(p, o)}
			}
			l, err := pack(req.Params, ts)
			if err != nil {
				return reply{Class: difftest.InvalidCase, Msg: err.Error()}
			}
			if l.Grid.X == 0 {
				return reply{Class: difftest.InvalidCase, Msg: "nothing to launch (an empty batch): no time to measure"}
			}
			if err := wk.ready(m, req.Kernel, l); err != nil {
				return wk.fault(wk.launchName(req.Kernel, l), err)
			}
			plans[b][c] = l
		}
	}
	start, stop, release, err := eventPair(d)
	if err != nil {
		return wk.fault("cuEventCreate", err)
	}
	defer release()
	br.Times = make([][]int64, nb)
	order := make([]int, nb)
	for i := 0; i < spec.Warmup+spec.Runs; i++ {
		for j := range order {
			order[j] = j
			if i%2 == 1 {
				order[j] = nb - 1 - j
			}
		}
		c := i % br.Copies
		for _, b := range order {
			l := plans[b][c]
			if flush != 0 {
				if err := d.MemsetD8(flush, byte(i), uint64(br.FlushBytes)); err != nil {
					return wk.fault("flushing the L2 (cuMemsetD8)", err)
				}
			}
			if err := d.EventRecord(start); err != nil {
				return wk.fault("cuEventRecord", err)
			}
			if err := wk.issue(spec.Modules[b], req.Kernel, l); err != nil {
				if errors.Is(err, errDeclined) {
					return reply{Class: difftest.Unavailable, Msg: err.Error(), Declined: true}
				}
				return wk.fault(wk.launchName(req.Kernel, l), err)
			}
			if err := d.EventRecord(stop); err != nil {
				return wk.fault("cuEventRecord", err)
			}
			if err := wk.settle(stop); err != nil {
				return wk.fault(wk.launchName(req.Kernel, l), err)
			}
			t, err := d.EventElapsed(start, stop)
			if err != nil {
				return wk.fault("cuEventElapsedTime", err)
			}
			if i >= spec.Warmup {
				br.Times[b] = append(br.Times[b], t.Nanoseconds())
			}
		}
	}
	br.Outputs = make([][][][]byte, nb)
	for b := range br.Outputs {
		br.Outputs[b] = make([][][]byte, br.Copies)
		for c := range br.Outputs[b] {
			br.Outputs[b][c] = make([][]byte, len(req.Outputs))
			for i, o := range req.Outputs {
				buf := make([]byte, len(o.Full))
				if len(buf) > 0 {
					if err := d.MemcpyDtoH(buf, outBase[b][c][i]); err != nil {
						return wk.fault("copying output "+o.Name+" back", err)
					}
				}
				br.Outputs[b][c][i] = buf
			}
		}
	}
	return reply{Bench: br}
}

// bandwidth answers a Bandwidth request: Warmup+Runs device-to-device
// copies of Bytes between two buffers, each between two events.
func (wk *worker) bandwidth(spec *bandwidthSpec) reply {
	n := spec.Bytes
	if n <= 0 {
		n = copyBytes(wk.l2Bytes())
	}
	d := wk.drv
	src, err := d.MemAlloc(uint64(n))
	if err != nil {
		return wk.fault(fmt.Sprintf("allocating %d bytes for the copy bandwidth", n), err)
	}
	defer d.MemFree(src)
	dst, err := d.MemAlloc(uint64(n))
	if err != nil {
		return wk.fault(fmt.Sprintf("allocating %d bytes for the copy bandwidth", n), err)
	}
	defer d.MemFree(dst)
	if err := d.MemsetD8(src, 0x5A, uint64(n)); err != nil {
		return wk.fault("cuMemsetD8", err)
	}
	start, stop, release, err := eventPair(d)
	if err != nil {
		return wk.fault("cuEventCreate", err)
	}
	defer release()
	rep := &bandwidthReply{Bytes: n}
	for i := 0; i < spec.Warmup+spec.Runs; i++ {
		if err := d.EventRecord(start); err != nil {
			return wk.fault("cuEventRecord", err)
		}
		if err := d.MemcpyDtoD(dst, src, uint64(n)); err != nil {
			return wk.fault("cuMemcpyDtoD_v2", err)
		}
		if err := d.EventRecord(stop); err != nil {
			return wk.fault("cuEventRecord", err)
		}
		if err := d.EventSynchronize(stop); err != nil {
			return wk.fault("cuMemcpyDtoD_v2", err)
		}
		t, err := d.EventElapsed(start, stop)
		if err != nil {
			return wk.fault("cuEventElapsedTime", err)
		}
		if i >= spec.Warmup {
			rep.TimesNS = append(rep.TimesNS, t.Nanoseconds())
		}
	}
	return reply{Bandwidth: rep}
}

// TimeKernel implements bench.KernelTimer: it sends the case with
// output buffers poisoned with difftest.PoisonA to the worker as one bench
// request (with the baseline build too when opt.Baseline) and returns the
// times and the timed outputs. The worker is waited for up to the
// implementation's time-out per launch (warm-up and timed, every build,
// plus one). Errors are *difftest.RunError as for Run; asking for a
// baseline this implementation was not given is a *difftest.RunError of
// class Unavailable.
func (im *Impl) TimeKernel(ctx context.Context, _ difftest.Kernel, c *difftest.Case, opt bench.TimingOptions) (*bench.Timing, error) {
	mods := []int{0}
	if opt.Baseline {
		if im.baseline == "" {
			return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: "no baseline fatbin was given (--baseline)"}
		}
		mods = append(mods, 1)
	}
	cold := opt.Cold
	if cold == "" {
		cold = bench.ColdFlush
	}
	bufs := difftest.NewBuffers(c, difftest.PoisonA)
	im.mu.Lock()
	defer im.mu.Unlock()
	req, err := im.request(c, bufs)
	if err != nil {
		return nil, err
	}
	req.Bench = &benchSpec{Warmup: opt.Warmup, Runs: opt.Runs, Cold: cold, Modules: mods}
	wait := im.timeout * time.Duration((opt.Warmup+opt.Runs)*len(mods)+1)
	r, err := im.exchange(ctx, req, wait, 0)
	if err != nil {
		return nil, err
	}
	br := r.Bench
	if br == nil || len(br.Times) != len(mods) || len(br.Outputs) != len(mods) {
		return nil, &difftest.RunError{Class: difftest.Crash, Msg: "GPU worker protocol error: a bench reply without its times or outputs"}
	}
	tm := &bench.Timing{Poison: difftest.PoisonA, Copies: br.Copies, FlushBytes: br.FlushBytes, ColdBytes: br.ColdBytes, L2Bytes: br.L2Bytes, Timer: "cuda-events"}
	for b := range mods {
		ts := make([]time.Duration, len(br.Times[b]))
		for i, ns := range br.Times[b] {
			ts[i] = time.Duration(ns)
		}
		tm.Times = append(tm.Times, ts)
		var copies [][]*difftest.Buffer
		for _, outs := range br.Outputs[b] {
			if len(outs) != len(c.Outputs) {
				return nil, &difftest.RunError{Class: difftest.BadOutput, Msg: fmt.Sprintf("bench reply: %d outputs, the case has %d", len(outs), len(c.Outputs))}
			}
			var set []*difftest.Buffer
			for i, full := range outs {
				o := c.Outputs[i]
				if len(full) != len(bufs[i].Full) {
					return nil, &difftest.RunError{Class: difftest.BadOutput, Msg: fmt.Sprintf("timed output %s came back with %d bytes, sent %d", o.Name, len(full), len(bufs[i].Full))}
				}
				g, n := bufs[i].Guard, o.Bytes()
				set = append(set, &difftest.Buffer{
					Tensor: &difftest.Tensor{Name: o.Name, DType: o.DType, Shape: append([]int(nil), o.Shape...), Data: full[g : g+n : g+n]},
					Full:   full, Guard: g,
				})
			}
			copies = append(copies, set)
		}
		tm.Outputs = append(tm.Outputs, copies)
	}
	return tm, nil
}

// CopyBandwidth implements bench.BandwidthMeter: device-to-device
// copies of four times the L2 (within [16 MiB, 1 GiB]), warmup untimed and
// runs timed with events; GBps counts the bytes read and written.
func (im *Impl) CopyBandwidth(ctx context.Context, warmup, runs int) (*bench.Bandwidth, error) {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.seq++
	req := &request{Seq: im.seq, Bandwidth: &bandwidthSpec{Warmup: warmup, Runs: runs}}
	r, err := im.exchange(ctx, req, im.timeout, 0)
	if err != nil {
		return nil, err
	}
	if r.Bandwidth == nil || len(r.Bandwidth.TimesNS) == 0 {
		return nil, &difftest.RunError{Class: difftest.Crash, Msg: "GPU worker protocol error: a bandwidth reply without times"}
	}
	ts := make([]time.Duration, len(r.Bandwidth.TimesNS))
	for i, ns := range r.Bandwidth.TimesNS {
		ts[i] = time.Duration(ns)
	}
	bw := &bench.Bandwidth{Bytes: r.Bandwidth.Bytes, Time: stats.Summarize(ts)}
	if m := bw.Time.Median; m > 0 {
		bw.GBps = 2 * float64(bw.Bytes) / m.Seconds() / 1e9
	}
	return bw, nil
}

// Baseline implements bench.BaselineProvider: the implementation that
// runs the --baseline fatbin in the same worker, or nil without one.
func (im *Impl) Baseline() difftest.Impl {
	if im.baseline == "" {
		return nil
	}
	return im.base
}

// baselineImpl runs build 1 (the baseline fatbin) of its Impl's worker.
type baselineImpl struct{ im *Impl }

// Name implements difftest.Impl: the Impl's name.
func (b *baselineImpl) Name() string { return b.im.name }

// Run implements difftest.Impl on the baseline build.
func (b *baselineImpl) Run(ctx context.Context, _ difftest.Kernel, c *difftest.Case, outs []*difftest.Buffer) (difftest.RunInfo, error) {
	return b.im.runModule(ctx, c, outs, 1)
}

// Close does nothing: the worker belongs to the Impl.
func (b *baselineImpl) Close() error { return nil }

// PropBaselineFatbin is the report property holding the hex SHA-256 of
// the --baseline fatbin.
const PropBaselineFatbin = "baseline_fatbin_sha256"

// eventPair creates the start and stop events that time a region on the
// device; release destroys both (stop first). On an error, cuEventCreate's,
// nothing is left to release.
func eventPair(d cuda.Driver) (start, stop cuda.Event, release func(), err error) {
	if start, err = d.EventCreate(); err != nil {
		return start, stop, nil, err
	}
	if stop, err = d.EventCreate(); err != nil {
		d.EventDestroy(start)
		return start, stop, nil, err
	}
	return start, stop, func() {
		d.EventDestroy(stop)
		d.EventDestroy(start)
	}, nil
}
