package bridge

import (
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// openFakes opens test workers as openDevices' open does, one per
// ordinal, reporting count devices; ordinal bad fails as a lost GPU does.
func openFakes(t *testing.T, count, bad int, opened *[]int) func(difftest.ImplOptions) (difftest.Impl, error) {
	return func(o difftest.ImplOptions) (difftest.Impl, error) {
		if o.AllDevices || len(o.Devices) > 0 {
			t.Errorf("open got a device list: %+v", o)
		}
		*opened = append(*opened, o.Device)
		if o.Device == bad {
			return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: "cuDevicePrimaryCtxRetain: CUDA_ERROR_DEVICE_UNAVAILABLE"}
		}
		im, err := newImpl(5*time.Second, spawnTest("fake"), testPackers())
		if err != nil {
			return nil, err
		}
		im.count = count
		im.props[difftest.PropDevice] = "Fake GPU " + string(rune('A'+o.Device))
		return im, nil
	}
}

func TestOpenDevices(t *testing.T) {
	var opened []int
	im, err := openDevices(difftest.ImplOptions{AllDevices: true}, openFakes(t, 3, -1, &opened))
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	set := im.(*DeviceSet)
	ms := set.Members()
	if len(ms) != 3 || ms[0].Device != "0" || ms[2].Device != "2" || opened[0] != 0 || len(opened) != 3 {
		t.Fatalf("members %+v, opened %v", ms, opened)
	}
	if got := set.Properties()[PropDevices]; got != "0: Fake GPU A; 1: Fake GPU B; 2: Fake GPU C" {
		t.Errorf("devices property %q", got)
	}
	// Run goes to the first device.
	c := copyCase("set", faultNone, 100)
	bufs := difftest.NewBuffers(c, difftest.PoisonA)
	if _, err := set.Run(t.Context(), nil, c, bufs); err != nil {
		t.Fatal(err)
	}
	checkCopy(t, c, bufs[0], difftest.PoisonA)

	opened = nil
	im, err = openDevices(difftest.ImplOptions{Devices: []int{2, 0}}, openFakes(t, 3, -1, &opened))
	if err != nil {
		t.Fatal(err)
	}
	if ms := im.(*DeviceSet).Members(); len(ms) != 2 || ms[0].Device != "2" || ms[1].Device != "0" {
		t.Errorf("--device 2,0: members %+v", ms)
	}
	im.Close()

	opened = nil
	_, err = openDevices(difftest.ImplOptions{Devices: []int{0, 1}}, openFakes(t, 2, 1, &opened))
	if re, ok := err.(*difftest.RunError); !ok || re.Class != difftest.Unavailable || !strings.HasPrefix(re.Msg, "device 1: cuDevicePrimaryCtxRetain") {
		t.Errorf("a device that cannot open: %v", err)
	}
}

// A worker that dies and cannot start again reports its device lost.
func TestRestartFailureIsLost(t *testing.T) {
	im := testImpl(t, 5*time.Second, "fake")
	c := copyCase("crash", faultCrash, 64)
	if _, err := im.Run(t.Context(), nil, c, difftest.NewBuffers(c, difftest.PoisonA)); err == nil {
		t.Fatal("a crash passed")
	}
	im.spawn = spawnTest("fake-nodevice") // the device is gone
	ok := copyCase("after", faultNone, 64)
	_, err := im.Run(t.Context(), nil, ok, difftest.NewBuffers(ok, difftest.PoisonA))
	re, isRE := err.(*difftest.RunError)
	if !isRE || !re.Lost || re.Class != difftest.Crash {
		t.Errorf("restart on a lost device: %#v, want a Lost crash", err)
	}
}
