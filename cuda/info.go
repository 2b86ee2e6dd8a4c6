// Device description for reports and `difftest info`: the driver API's
// view (name, compute capability, memory, driver version) completed by
// NVML through go-nvml (UUID, clocks, ECC, NVML's driver version string).

package cuda

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// DeviceInfo describes one device. Fields a source could not give stay
// zero, and Warnings says why.
type DeviceInfo struct {
	Ordinal       int    // CUDA device ordinal (--device)
	Name          string // e.g. "NVIDIA H200"
	UUID          string // NVML, "GPU-…"
	CCMajor       int    // compute capability, e.g. 9.0 for Hopper, 12.0 for RTX Blackwell
	CCMinor       int
	SMs           int    // multiprocessors
	MemoryTotal   uint64 // bytes
	MemoryFree    uint64 // bytes (NVML)
	DriverVersion string // NVML's driver version, e.g. "580.65.06"
	CUDAVersion   int    // cuDriverGetVersion: 1000·major + 10·minor
	PCIBusID      string // "0000:65:00.0"
	SMClockMHz    int    // current SM clock (NVML), or the driver's max when NVML is missing
	SMClockMaxMHz int    // max SM clock (NVML)
	MemClockMHz   int    // current memory clock (NVML)
	ECC           string // "on", "off", "on (pending off)", "n/a"
	Warnings      []string
}

// CC returns the compute capability as "9.0".
func (d DeviceInfo) CC() string { return fmt.Sprintf("%d.%d", d.CCMajor, d.CCMinor) }

// CUDAVersionString returns the driver's CUDA version as "13.0".
func (d DeviceInfo) CUDAVersionString() string {
	if d.CUDAVersion == 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", d.CUDAVersion/1000, d.CUDAVersion%1000/10)
}

// Describe fills a DeviceInfo for ordinal n from drv (which must have been
// Init'ed) and NVML. It returns an error only when the driver cannot name
// the device at all; NVML failures become Warnings.
func Describe(drv Driver, n int) (DeviceInfo, error) {
	info := DeviceInfo{Ordinal: n}
	dev, err := drv.Device(n)
	if err != nil {
		return info, err
	}
	if info.Name, err = drv.DeviceName(dev); err != nil {
		return info, err
	}
	attr := func(a Attribute) int {
		v, err := drv.DeviceAttribute(dev, a)
		if err != nil {
			info.Warnings = append(info.Warnings, err.Error())
		}
		return v
	}
	info.CCMajor = attr(AttrComputeCapabilityMajor)
	info.CCMinor = attr(AttrComputeCapabilityMinor)
	info.SMs = attr(AttrMultiprocessorCount)
	info.SMClockMHz = attr(AttrClockRate) / 1000
	info.MemClockMHz = attr(AttrMemoryClockRate) / 1000
	info.PCIBusID = fmt.Sprintf("%04x:%02x:%02x.0", attr(AttrPCIDomainID), attr(AttrPCIBusID), attr(AttrPCIDeviceID))
	if attr(AttrECCEnabled) != 0 {
		info.ECC = "on"
	} else {
		info.ECC = "off"
	}
	if info.MemoryTotal, err = drv.DeviceTotalMem(dev); err != nil {
		info.Warnings = append(info.Warnings, err.Error())
	}
	if info.CUDAVersion, err = drv.Version(); err != nil {
		info.Warnings = append(info.Warnings, err.Error())
	}
	if err := describeNVML(&info); err != nil {
		info.Warnings = append(info.Warnings, "NVML: "+err.Error())
	}
	return info, nil
}

// describeNVML completes info from NVML, finding the device by PCI bus id
// (CUDA ordinals and NVML indices need not agree).
func describeNVML(info *DeviceInfo) error {
	if r := nvml.Init(); r != nvml.SUCCESS {
		return fmt.Errorf("init: %s", nvml.ErrorString(r))
	}
	defer nvml.Shutdown()
	if v, r := nvml.SystemGetDriverVersion(); r == nvml.SUCCESS {
		info.DriverVersion = v
	}
	dev, r := nvml.DeviceGetHandleByPciBusId(info.PCIBusID)
	if r != nvml.SUCCESS {
		return fmt.Errorf("device %s: %s", info.PCIBusID, nvml.ErrorString(r))
	}
	var errs []string
	note := func(what string, r nvml.Return) {
		if r != nvml.SUCCESS && r != nvml.ERROR_NOT_SUPPORTED {
			errs = append(errs, what+": "+nvml.ErrorString(r))
		}
	}
	info.UUID, r = dev.GetUUID()
	note("uuid", r)
	if mem, r := dev.GetMemoryInfo(); r == nvml.SUCCESS {
		info.MemoryFree = mem.Free
	} else {
		note("memory", r)
	}
	clock := func(what string, mhz *int, get func(nvml.ClockType) (uint32, nvml.Return), which nvml.ClockType) {
		if c, r := get(which); r == nvml.SUCCESS {
			*mhz = int(c)
		} else {
			note(what, r)
		}
	}
	clock("sm clock", &info.SMClockMHz, dev.GetClockInfo, nvml.CLOCK_SM)
	clock("max sm clock", &info.SMClockMaxMHz, dev.GetMaxClockInfo, nvml.CLOCK_SM)
	clock("memory clock", &info.MemClockMHz, dev.GetClockInfo, nvml.CLOCK_MEM)
	cur, pend, r := dev.GetEccMode()
	switch r {
	case nvml.SUCCESS:
		info.ECC = onOff(cur)
		if pend != cur {
			info.ECC += " (pending " + onOff(pend) + ")"
		}
	case nvml.ERROR_NOT_SUPPORTED:
		info.ECC = "n/a"
	default:
		note("ecc", r)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func onOff(s nvml.EnableState) string {
	if s == nvml.FEATURE_ENABLED {
		return "on"
	}
	return "off"
}
