package difftest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
)

// poolFake runs the reference on its "device" after a delay; from its
// loseAt-th run on (when > 0) it reports its device lost, and its crashAt-th
// run crashes (the worker died).
type poolFake struct {
	delay   time.Duration
	loseAt  int32
	crashAt int32
	runs    atomic.Int32
}

func (p *poolFake) Name() string { return "pool-fake" }
func (p *poolFake) Close() error { return nil }
func (p *poolFake) Run(_ context.Context, k Kernel, c *Case, outs []*Buffer) (RunInfo, error) {
	n := p.runs.Add(1)
	time.Sleep(p.delay)
	if p.crashAt > 0 && n == p.crashAt {
		return RunInfo{}, &RunError{Class: Crash, Msg: "GPU worker died: signal: killed"}
	}
	if p.loseAt > 0 && n >= p.loseAt {
		return RunInfo{}, &RunError{Class: Crash, Msg: "starting the GPU worker: CUDA_ERROR_DEVICE_UNAVAILABLE", Lost: true}
	}
	return RunInfo{KernelTime: time.Microsecond}, k.Reference(c, TensorsOf(outs))
}

func poolItems(n int) []Item {
	var items []Item
	for i := 0; i < n; i++ {
		items = append(items, Item{Index: i, Seed: 1, SuiteCase: SuiteCase{Spec: CaseSpec{Kernel: fakekernel.Name, Family: "ramp", Name: fmt.Sprintf("c%02d", i), Params: map[string]any{"n": int64(4)}}}})
	}
	return items
}

// collect runs a pool and returns its records in the order it handed
// them over.
func collect(t *testing.T, cfg Config, members []PoolMember, onLost func(string, error)) (Summary, []*Record, error) {
	t.Helper()
	var mu sync.Mutex
	var recs []*Record
	cfg.ImplName = "pool-fake"
	cfg.OnRecord = func(r *Record) error {
		mu.Lock()
		defer mu.Unlock()
		recs = append(recs, r)
		return nil
	}
	sum, err := RunPool(context.Background(), cfg, members, onLost)
	return sum, recs, err
}

func TestRunPoolSpreadsDynamically(t *testing.T) {
	fast, slow := &poolFake{delay: time.Millisecond}, &poolFake{delay: 40 * time.Millisecond}
	replays := map[string]string{}
	var mu sync.Mutex
	cfg := Config{Items: poolItems(24), Replay: func(r *Record) string {
		mu.Lock()
		defer mu.Unlock()
		replays[r.Case] = r.Device
		return "replay on " + r.Device
	}}
	sum, recs, err := collect(t, cfg, []PoolMember{{Impl: fast, Device: "0"}, {Impl: slow, Device: "1"}}, nil)
	if err != nil || sum.Passed != 24 || len(recs) != 24 {
		t.Fatalf("sum %+v, %d records, err %v", sum, len(recs), err)
	}
	per := map[string]int{}
	for i, r := range recs { // handed over in the items' order, though they end out of it
		if r.Index != i || (r.Device != "0" && r.Device != "1") || r.Replay != "replay on "+r.Device || replays[r.Case] != r.Device {
			t.Errorf("record %d: index %d, device %q, replay %q", i, r.Index, r.Device, r.Replay)
		}
		per[r.Device]++
	}
	// Each case runs twice (poison A and B): the slow device takes about
	// 80 ms a case, the fast one 2 ms, so the fast one runs most of them.
	if per["1"] < 1 || per["0"] < 3*per["1"] {
		t.Errorf("cases per device %v: the fast device should run most", per)
	}
}

func TestRunPoolDeviceLost(t *testing.T) {
	// Device 1's worker is killed in its 3rd run (a case fails as a
	// crash) and cannot start again from its 4th: its cases go to device 0.
	good, dying := &poolFake{delay: 2 * time.Millisecond}, &poolFake{delay: 2 * time.Millisecond, crashAt: 3, loseAt: 4}
	var lostDev string
	var lostErr error
	sum, recs, err := collect(t, Config{Items: poolItems(12)}, []PoolMember{{Impl: good, Device: "0"}, {Impl: dying, Device: "1"}},
		func(d string, e error) { lostDev, lostErr = d, e })
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 12 || sum.Passed != 11 || sum.Failed != 1 || sum.Classes[Crash] != 1 {
		t.Fatalf("sum %+v, %d records", sum, len(recs))
	}
	for i, r := range recs {
		if r.Index != i {
			t.Fatalf("record %d has index %d: a case ran twice or not at all", i, r.Index)
		}
		if r.Failed() && (r.Device != "1" || r.Class != Crash) {
			t.Errorf("the failure %s ran on device %s with class %s", r.Case, r.Device, r.Class)
		}
	}
	var re *RunError
	if lostDev != "1" || !errors.As(lostErr, &re) || !re.Lost {
		t.Errorf("onLost(%q, %v)", lostDev, lostErr)
	}
}

func TestRunPoolAllLost(t *testing.T) {
	a, b := &poolFake{loseAt: 1}, &poolFake{loseAt: 3}
	sum, recs, err := collect(t, Config{Items: poolItems(6)}, []PoolMember{{Impl: a, Device: "0"}, {Impl: b, Device: "1"}}, nil)
	if !errors.Is(err, DeviceLost) || ExitCode(sum, err) != ExitUntestable {
		t.Errorf("err %v (exit %d), want DeviceLost and 125", err, ExitCode(sum, err))
	}
	// Device 1 finishes one case before it is lost too; whether that case
	// is handed over depends on which case it took: one behind case 0,
	// which never ran, waits for it. What is handed over is a prefix.
	if len(recs) > 1 || sum.Passed != len(recs) || (len(recs) == 1 && recs[0].Index != 0) || sum.Aborted == "" {
		t.Errorf("%d records, sum %+v: want at most case 0, and why it stopped", len(recs), sum)
	}
}

func TestRunPoolFailFast(t *testing.T) {
	wrong := MutantImpl{Kernel: fakekernel.Name, Mutant: fakekernel.Kernel{}.Mutants()[0]}
	sum, recs, err := collect(t, Config{Items: poolItems(20), FailFast: true}, []PoolMember{{Impl: wrong, Device: "0"}, {Impl: wrong, Device: "1"}}, nil)
	if err != nil || sum.Failed != 1 || len(recs) != 1 || recs[0].Index != 0 || sum.Aborted != "--failfast after fake_scatter/c00" {
		t.Errorf("failfast: sum %+v, %d records, err %v", sum, len(recs), err)
	}
}
