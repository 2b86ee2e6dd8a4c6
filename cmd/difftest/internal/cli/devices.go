package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/report"
)

// deviceFlag is --device: "all", one ordinal ("1"), or a list of distinct
// ordinals ("0,2,3", run in that order, one worker each). It sets the
// implFlags' device (the first ordinal, or 0 for all), devices (the list
// when it has more than one) and allDevices.
type deviceFlag struct{ f *implFlags }

func (d deviceFlag) String() string {
	if d.f == nil {
		return "0"
	}
	switch {
	case d.f.allDevices:
		return "all"
	case len(d.f.devices) > 1:
		parts := make([]string, len(d.f.devices))
		for i, n := range d.f.devices {
			parts[i] = strconv.Itoa(n)
		}
		return strings.Join(parts, ",")
	}
	return strconv.Itoa(d.f.device)
}

func (d deviceFlag) Set(s string) error {
	ords, all, err := parseDevices(s)
	if err != nil {
		return err
	}
	d.f.allDevices, d.f.devices, d.f.device = all, nil, 0
	if !all {
		d.f.device = ords[0]
		if len(ords) > 1 {
			d.f.devices = ords
		}
	}
	return nil
}

// parseDevices parses --device's value: the ordinals (nil for "all") and
// whether every device was asked for.
func parseDevices(s string) (ords []int, all bool, err error) {
	if s == "all" {
		return nil, true, nil
	}
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, false, fmt.Errorf("want all, an ordinal (0) or a list of them (0,2,3)")
		}
		if seen[n] {
			return nil, false, fmt.Errorf("device %d given twice", n)
		}
		seen[n] = true
		ords = append(ords, n)
	}
	return ords, false, nil
}

// runPooled runs cfg with difftest.RunPool when impl stands for several
// devices (--device all or a list), with difftest.Run otherwise. A device
// lost mid-run is named on stderr and in the report property
// "devices_lost".
func runPooled(ctx context.Context, cfg difftest.Config, impl difftest.Impl, rep *report.Report, stderr io.Writer) (difftest.Summary, error) {
	p, ok := impl.(difftest.Pool)
	if !ok || len(p.Members()) < 2 {
		return difftest.Run(ctx, cfg)
	}
	var mu sync.Mutex
	var lost []string
	sum, err := difftest.RunPool(ctx, cfg, p.Members(), func(dev string, err error) {
		mu.Lock()
		defer mu.Unlock()
		lost = append(lost, dev)
		fmt.Fprintf(stderr, "difftest: device %s lost (%s); its remaining cases run on the other devices\n", dev, difftest.SafeLine(err.Error()))
	})
	if len(lost) > 0 {
		rep.Header.Properties["devices_lost"] = strings.Join(lost, ",")
	}
	return sum, err
}

// onDevice is o for replaying r: on the device r ran on, when it carries
// one (a run over several devices).
func onDevice(o difftest.ReplayOptions, r *difftest.Record) difftest.ReplayOptions {
	if n, err := strconv.Atoi(r.Device); err == nil {
		o.Device = n
	}
	return o
}
