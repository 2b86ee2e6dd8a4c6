// `difftest info`: what this binary would run on, and with what.
//
// It prints three sections: the build (Go version, VCS revision and
// whether the tree was modified, from runtime/debug.ReadBuildInfo), the
// fatbin (each image: SASS arch or PTX, code version, size), and the
// device (name, UUID, compute capability, CUDA and driver versions,
// memory, clocks, ECC, and which fatbin image it would load). What cannot
// be read is printed as unavailable with its reason; info itself exits 0
// whenever it printed its report, even with no driver (and for --help),
// and 2 only for bad flags. (Whether the kernels can run is `difftest run`'s exit code 125.)

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/kerneldiff/kerneldiff/bridge"
	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/difftest"
)

// runInfo is `difftest info`: the device, driver (bridge.DriverPath),
// fatbin images and build; it returns the exit code.
func runInfo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("difftest info", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fatbin := fs.String("fatbin", bridge.DefaultFatbin, "fatbin to describe, relative to the working directory")
	device := fs.Int("device", 0, "CUDA device ordinal")
	if code, ok := parseNoArgs(fs, args, "info", stderr); !ok {
		return code
	}
	// Paths and driver messages come from flags and the environment:
	// escaped for the terminal, line by line.
	safe := difftest.NewSafeLineWriter(stdout)
	defer safe.Flush()
	stdout = safe
	writeBuild(stdout)
	imgs := writeFatbin(stdout, *fatbin)
	drv, err := cuda.OpenLibrary(bridge.DriverPath())
	if err == nil {
		err = drv.Init()
	}
	writeDevice(stdout, drv, err, *device, imgs)
	return difftest.ExitPass
}

// writeBuild prints the build section: Go version, module, VCS revision,
// commit time, whether the tree was modified, target.
func writeBuild(w io.Writer) {
	fmt.Fprintln(w, "build:")
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintln(w, "  unavailable: binary built without module support")
		return
	}
	fmt.Fprintf(w, "  go:        %s\n", bi.GoVersion)
	fmt.Fprintf(w, "  module:    %s %s\n", bi.Main.Path, bi.Main.Version)
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	rev := settings["vcs.revision"]
	if rev == "" {
		rev = "unknown (built with -buildvcs=false or outside a git checkout)"
	}
	fmt.Fprintf(w, "  revision:  %s\n", rev)
	if t := settings["vcs.time"]; t != "" {
		fmt.Fprintf(w, "  committed: %s\n", t)
	}
	if m, ok := settings["vcs.modified"]; ok {
		fmt.Fprintf(w, "  modified:  %s\n", m)
	}
	fmt.Fprintf(w, "  target:    %s/%s cgo=%s\n", settings["GOOS"], settings["GOARCH"], settings["CGO_ENABLED"])
}

// writeFatbin prints the fatbin section and returns its images (nil when
// the file is unreadable or malformed).
func writeFatbin(w io.Writer, path string) []cuda.FatbinImage {
	fmt.Fprintf(w, "fatbin: %s\n", path)
	b, err := bridge.ReadFatbin(path)
	if err != nil {
		fmt.Fprintf(w, "  unavailable: %v\n", err)
		return nil
	}
	imgs, err := cuda.ParseFatbin(b)
	if err != nil {
		fmt.Fprintf(w, "  unreadable: %v\n", err)
		return nil
	}
	fmt.Fprintf(w, "  %d bytes, %d images\n", len(b), len(imgs))
	for _, im := range imgs {
		comp := ""
		if im.Compressed {
			comp = ", compressed"
		}
		fmt.Fprintf(w, "  %-12s %-4s code %d.%d  %d bytes%s\n", im.ArchName(), im.Kind, im.CodeMajor, im.CodeMinor, im.Size, comp)
	}
	return imgs
}

// writeDevice prints device n, or why it is unavailable (openErr: the
// driver could not be opened or initialised), and the image of imgs it
// would load.
func writeDevice(w io.Writer, drv cuda.Driver, openErr error, n int, imgs []cuda.FatbinImage) {
	fmt.Fprintf(w, "device %d:\n", n)
	if openErr != nil {
		if errors.Is(openErr, cuda.ErrNoDriver) {
			fmt.Fprintf(w, "  unavailable: %v\n", openErr)
		} else {
			fmt.Fprintf(w, "  unavailable: CUDA driver: %v\n", openErr)
		}
		return
	}
	d, err := cuda.Describe(drv, n)
	if err != nil {
		fmt.Fprintf(w, "  unavailable: %v\n", err)
		return
	}
	line := func(k, format string, args ...any) {
		fmt.Fprintf(w, "  %-14s "+format+"\n", append([]any{k + ":"}, args...)...)
	}
	line("name", "%s", d.Name)
	if d.UUID != "" {
		line("uuid", "%s", d.UUID)
	}
	line("compute cap", "%s (sm_%d%d), %d SMs", d.CC(), d.CCMajor, d.CCMinor, d.SMs)
	line("cuda driver", "%s", d.CUDAVersionString())
	if d.DriverVersion != "" {
		line("driver", "%s", d.DriverVersion)
	}
	line("memory", "%.1f GiB total, %.1f GiB free", float64(d.MemoryTotal)/(1<<30), float64(d.MemoryFree)/(1<<30))
	line("clocks", "SM %d MHz (max %d), memory %d MHz", d.SMClockMHz, d.SMClockMaxMHz, d.MemClockMHz)
	line("ecc", "%s", d.ECC)
	line("pci", "%s", d.PCIBusID)
	if imgs != nil {
		if im, ok := cuda.LoadableImage(imgs, d.CCMajor, d.CCMinor); ok {
			line("loads", "%s %s", im.ArchName(), im.Kind)
		} else {
			line("loads", "nothing: no image for sm_%d%d (difftest run exits 125)", d.CCMajor, d.CCMinor)
		}
	}
	for _, warn := range d.Warnings {
		line("warning", "%s", strings.TrimSpace(warn))
	}
}
