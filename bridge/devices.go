// Every GPU of a host: `--device all` or a list opens one `cuda` (or
// `emu`) implementation per device, each with its own worker process, as
// one difftest.Pool (docs/nightly.md).

package bridge

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// PropDevices is the report property listing the devices of a run over
// several: "0: NAME (sm_XY); 1: NAME (sm_XY)".
const PropDevices = "devices"

// DeviceSet is the implementation over several devices: a difftest.Pool
// of one *Impl per device. Run, TimeKernel and the other single-device
// methods use the first device.
type DeviceSet struct {
	members []*Impl
	ords    []int
}

// openDevices opens one implementation per device of opts (Devices, or
// every device the driver reports when AllDevices), through open (NewImpl
// or NewEmuImpl for one device). The first device is opened first (its
// worker reports the device count); the others concurrently. Any device
// that cannot be opened fails the whole set with its *difftest.RunError,
// the message naming the device.
func openDevices(opts difftest.ImplOptions, open func(difftest.ImplOptions) (difftest.Impl, error)) (difftest.Impl, error) {
	ords := append([]int(nil), opts.Devices...)
	first := opts.Device
	if len(ords) > 0 {
		first = ords[0]
	} else if opts.AllDevices {
		first = 0
	}
	one := opts
	one.Devices, one.AllDevices, one.Device = nil, false, first
	im0, err := open(one)
	if err != nil {
		return nil, err
	}
	head := im0.(*Impl)
	if opts.AllDevices {
		ords = nil
		for d := 0; d < max(head.count, 1); d++ {
			ords = append(ords, d)
		}
	}
	set := &DeviceSet{members: make([]*Impl, len(ords)), ords: ords}
	set.members[0] = head
	var wg sync.WaitGroup
	errs := make([]error, len(ords))
	for i := 1; i < len(ords); i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			o := one
			o.Device = ords[i]
			im, err := open(o)
			if err != nil {
				errs[i] = err
				return
			}
			set.members[i] = im.(*Impl)
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			set.Close()
			if re, ok := err.(*difftest.RunError); ok {
				return nil, &difftest.RunError{Class: re.Class, Msg: fmt.Sprintf("device %d: %s", ords[i], re.Msg)}
			}
			return nil, fmt.Errorf("device %d: %w", ords[i], err)
		}
	}
	return set, nil
}

// Members implements difftest.Pool.
func (s *DeviceSet) Members() []difftest.PoolMember {
	out := make([]difftest.PoolMember, len(s.members))
	for i, m := range s.members {
		out[i] = difftest.PoolMember{Impl: m, Device: strconv.Itoa(s.ords[i])}
	}
	return out
}

// Name implements difftest.Impl: the members' name ("cuda" or "emu").
func (s *DeviceSet) Name() string { return s.members[0].Name() }

// Run implements difftest.Impl on the first device.
func (s *DeviceSet) Run(ctx context.Context, k difftest.Kernel, c *difftest.Case, outs []*difftest.Buffer) (difftest.RunInfo, error) {
	return s.members[0].Run(ctx, k, c, outs)
}

// Close ends every member's worker and returns the first error.
func (s *DeviceSet) Close() error {
	var first error
	for _, m := range s.members {
		if m == nil {
			continue
		}
		if err := m.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Properties implements difftest.PropertyProvider: the first device's,
// and PropDevices naming each (ordinal: device) in order.
func (s *DeviceSet) Properties() map[string]string {
	props := s.members[0].Properties()
	var ds []string
	for i, m := range s.members {
		if m == nil {
			continue
		}
		ds = append(ds, fmt.Sprintf("%d: %s", s.ords[i], m.Properties()[difftest.PropDevice]))
	}
	props[PropDevices] = strings.Join(ds, "; ")
	return props
}
