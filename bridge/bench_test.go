package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/cuda/fakecuda"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/bench"
)

// benchRequest is the wire request of a test_copy case of n bytes with
// its outputs poisoned with PoisonA.
func benchRequest(t testing.TB, n int, spec *benchSpec) (*request, *difftest.Case) {
	t.Helper()
	c := copyCase("bench", faultNone, n)
	params, _ := json.Marshal(c.Params)
	req := &request{Seq: 1, Kernel: testCopyKernel, CaseID: c.ID, Params: params, Bench: spec}
	for _, in := range c.Inputs {
		req.Inputs = append(req.Inputs, wireTensor{Name: in.Name, DType: in.DType, Shape: in.Shape, Data: in.Data})
	}
	for _, b := range difftest.NewBuffers(c, difftest.PoisonA) {
		req.Outputs = append(req.Outputs, wireOutput{Name: b.Name, DType: b.DType, Shape: b.Shape, Full: b.Full, Guard: b.Guard})
	}
	return req, c
}

// openFakeWorker is a worker on a fake device, with a baseline module
// when withBase.
func openFakeWorker(t testing.TB, withBase bool) (*worker, *fakecuda.Driver) {
	t.Helper()
	d := newFake("fake")
	wk := &worker{drv: d, packers: testPackers(), funcs: map[string]cuda.Function{}, bfuncs: map[string]cuda.Function{}}
	desc, _, err := wk.open([]byte("fake fatbin"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if withBase {
		if err := wk.loadBaseline(desc, []byte("baseline fatbin")); err != nil {
			t.Fatal(err)
		}
	}
	return wk, d
}

// checkTimedCopy checks one timed output: y = x ^ 0x5A, guards intact.
func checkTimedCopy(t *testing.T, c *difftest.Case, full []byte, what string) {
	t.Helper()
	x := c.Inputs[0].Data
	g := difftest.GuardBytes
	if len(full) != len(x)+2*g {
		t.Fatalf("%s: %d bytes, want %d", what, len(full), len(x)+2*g)
	}
	for i := range full {
		want := byte(difftest.PoisonA)
		if i >= g && i < g+len(x) {
			want = x[i-g] ^ 0x5A
		}
		if full[i] != want {
			t.Fatalf("%s: byte %d = %#x, want %#x", what, i, full[i], want)
		}
	}
}

func TestWorkerBenchFlushTwoBuilds(t *testing.T) {
	wk, d := openFakeWorker(t, true)
	req, c := benchRequest(t, 3000, &benchSpec{Warmup: 2, Runs: 5, Cold: bench.ColdFlush, Modules: []int{0, 1}})
	r := wk.bench(req)
	if r.Class != difftest.Pass || r.Bench == nil {
		t.Fatalf("reply %+v", r)
	}
	br := r.Bench
	if br.Copies != 1 || br.L2Bytes != fakecuda.FakeL2Bytes || br.FlushBytes != 2*fakecuda.FakeL2Bytes || br.ColdBytes != br.FlushBytes {
		t.Errorf("copies %d, L2 %d, flush %d, cold %d", br.Copies, br.L2Bytes, br.FlushBytes, br.ColdBytes)
	}
	if d.Launches != 2*(2+5) {
		t.Errorf("%d launches, want 14 (warm-up and timed, both builds)", d.Launches)
	}
	if len(br.Times) != 2 || len(br.Times[0]) != 5 || len(br.Times[1]) != 5 {
		t.Fatalf("times %v", br.Times)
	}
	for b := range br.Times {
		for _, ns := range br.Times[b] {
			if ns <= 0 {
				t.Errorf("build %d: a time of %d ns", b, ns)
			}
		}
		checkTimedCopy(t, c, br.Outputs[b][0][0], "build "+string(rune('0'+b)))
	}
	if d.Live() != 0 {
		t.Errorf("%d allocations left", d.Live())
	}
}

func TestWorkerBenchRotate(t *testing.T) {
	wk, _ := openFakeWorker(t, false)
	const n = 100 << 10 // 100 KiB input, 108 KiB of guarded output: 208 KiB a copy
	req, c := benchRequest(t, n, &benchSpec{Warmup: 3, Runs: 20, Cold: bench.ColdRotate, Modules: []int{0}})
	r := wk.bench(req)
	if r.Class != difftest.Pass {
		t.Fatalf("reply %+v", r)
	}
	br := r.Bench
	perCopy := int64(n + n + 2*difftest.GuardBytes)
	// ⌈2 MiB / 208 KiB⌉ + 1 = 10 + 1 copies: the 10 others between two
	// runs on one hold 2,129,920 bytes, over twice the 1 MiB L2.
	if br.Copies != 11 || br.ColdBytes != 10*perCopy || br.FlushBytes != 0 {
		t.Errorf("copies %d, cold bytes %d (want 11, %d), flush %d", br.Copies, br.ColdBytes, 10*perCopy, br.FlushBytes)
	}
	if len(br.Outputs[0]) != 11 {
		t.Fatalf("%d copies of outputs", len(br.Outputs[0]))
	}
	for _, outs := range br.Outputs[0] {
		checkTimedCopy(t, c, outs[0], "a rotated copy")
	}
	// Fewer launches than copies: one copy per launch.
	req, _ = benchRequest(t, n, &benchSpec{Warmup: 1, Runs: 4, Cold: bench.ColdRotate, Modules: []int{0}})
	if r := wk.bench(req); r.Class != difftest.Pass || r.Bench.Copies != 5 || r.Bench.ColdBytes != 10*perCopy {
		t.Errorf("5 launches: %+v", r.Bench)
	}
}

func TestWorkerBenchErrors(t *testing.T) {
	wk, _ := openFakeWorker(t, false)
	req, _ := benchRequest(t, 64, &benchSpec{Runs: 3, Modules: []int{0, 1}})
	if r := wk.bench(req); r.Class != difftest.LaunchError || !strings.Contains(r.Msg, "no build 1") {
		t.Errorf("a baseline this worker lacks: %+v", r)
	}
	req, _ = benchRequest(t, 64, &benchSpec{Runs: 3, Modules: []int{0}})
	req.Inputs[0].Data[0] = faultIllegal
	if r := wk.bench(req); r.Class != difftest.IllegalAddress || !r.Sticky {
		t.Errorf("an illegal address while timing: %+v", r)
	}
}

func TestWorkerBandwidth(t *testing.T) {
	wk, d := openFakeWorker(t, false)
	r := wk.bandwidth(&bandwidthSpec{Warmup: 2, Runs: 7})
	if r.Class != difftest.Pass || r.Bandwidth == nil {
		t.Fatalf("reply %+v", r)
	}
	// 4 × the 1 MiB L2 is below the 16 MiB floor of the copy size.
	if r.Bandwidth.Bytes != 16<<20 || len(r.Bandwidth.TimesNS) != 7 {
		t.Errorf("bytes %d, %d times", r.Bandwidth.Bytes, len(r.Bandwidth.TimesNS))
	}
	if d.Live() != 0 {
		t.Errorf("%d allocations left", d.Live())
	}
	if got := copyBytes(50 << 20); got != 200<<20 {
		t.Errorf("copyBytes(50 MiB L2) = %d, want 200 MiB", got)
	}
	if got := copyBytes(1 << 30); got != 1<<30 {
		t.Errorf("copyBytes(1 GiB L2) = %d, want the 1 GiB cap", got)
	}
}

// The Impl side over a worker process: TimeKernel and CopyBandwidth.
func TestImplTimeKernel(t *testing.T) {
	im := testImpl(t, 5*time.Second, "fake")
	c := copyCase("timed", faultNone, 5000)
	tm, err := im.TimeKernel(context.Background(), nil, c, bench.TimingOptions{Warmup: 1, Runs: 6, Cold: bench.ColdFlush})
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Times) != 1 || len(tm.Times[0]) != 6 || tm.Timer != "cuda-events" || tm.Poison != difftest.PoisonA || tm.Copies != 1 {
		t.Fatalf("timing %+v", tm)
	}
	checkCopy(t, c, tm.Outputs[0][0][0], difftest.PoisonA)
	if _, err := im.TimeKernel(context.Background(), nil, c, bench.TimingOptions{Runs: 2, Baseline: true}); err == nil || !strings.Contains(err.Error(), "no baseline fatbin") {
		t.Errorf("a baseline without --baseline: %v", err)
	}
	if im.Baseline() != nil {
		t.Error("Baseline() of an implementation without one is not nil")
	}
	bw, err := im.CopyBandwidth(context.Background(), 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	if bw.Bytes != 16<<20 || bw.Time.N != 5 || bw.GBps <= 0 {
		t.Errorf("bandwidth %+v", bw)
	}
	// The worker is still usable for a plain run.
	bufs := difftest.NewBuffers(c, difftest.PoisonB)
	if _, err := im.Run(context.Background(), nil, c, bufs); err != nil {
		t.Fatal(err)
	}
	checkCopy(t, c, bufs[0], difftest.PoisonB)
}

// The cost of reading the inputs back after each launch (worker.inputsKept),
// beside the whole request it is part of, on the fake device: one case of
// test_copy with a 16 MiB input and a 16 MiB output. The fake device's
// copies are memcpy, so this measures the host side (the copy and the
// comparison); on a GPU the read-back adds a device-to-host copy as large
// as the upload of the inputs.
func BenchmarkInputReadback(b *testing.B) {
	const n = 16 << 20
	wk, _ := openFakeWorker(b, false)
	req, _ := benchRequest(b, n, nil)
	b.Run("run", func(b *testing.B) {
		b.SetBytes(n)
		for b.Loop() {
			if rep := wk.run(req); rep.Class != difftest.Pass {
				b.Fatal(rep.Msg)
			}
		}
	})
	b.Run("inputsKept", func(b *testing.B) {
		b.SetBytes(n)
		mem := &devMem{drv: wk.drv}
		defer mem.free()
		p, err := mem.upload(req.Inputs[0].Data)
		if err != nil {
			b.Fatal(err)
		}
		ts := map[string]devTensor{"x": {DType: difftest.U8, Shape: []int{n}, Ptr: p}}
		for b.Loop() {
			if _, changed := wk.inputsKept(req, ts); changed {
				b.Fatal("input changed")
			}
		}
	})
}
