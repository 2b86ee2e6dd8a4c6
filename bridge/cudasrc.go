// The `cudasrc:` and `cudasrc-emu:` implementations: a bring-your-own CUDA
// source (an adapter file or folder and the user's source tree, docs/byo.md)
// built into a shared library (cudasrc_build.go) and run by the `cuda`
// implementation's worker process, which calls the library's adapter
// functions (adapter.go) where it would launch the fatbin's entry points:
// the same guards, poisoning, restarts and reports.

package bridge

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/difftest"
)

// The --impl prefixes of a bring-your-own CUDA source: on the GPU (built
// with nvcc) and on the CPU emulator (built with kernels/emu/emu_cxx.py,
// run over the emulated driver).
const (
	CudasrcPrefix    = "cudasrc:"
	CudasrcEmuPrefix = "cudasrc-emu:"
)

// PropAdapter is the report property of a cudasrc run: the adapter's path
// and the hex SHA-256 of the library built from it.
const PropAdapter = "adapter"

// NewCudasrcImpl opens `--impl cudasrc:PATH [FLAGS]`: the adapter at PATH
// (a .cu file, or a folder of them) built with nvcc for the GPU and run on
// the device as the `cuda` implementation runs the fatbin. Errors: a usage
// error (wrapping difftest.ErrUnknownImpl: no such PATH, an unknown flag);
// otherwise a *difftest.RunError of class Unavailable: a source that does
// not compile (the compiler's first error line, with file and line, and
// the log's path), no nvcc, no driver or device, the emulated driver.
func NewCudasrcImpl(arg string, opts difftest.ImplOptions) (difftest.Impl, error) {
	return openCudasrc(CudasrcPrefix, arg, false, opts)
}

// NewCudasrcEmuImpl opens `--impl cudasrc-emu:PATH [FLAGS]`: the same
// adapter built with kernels/emu/emu_cxx.py and run on the CPU emulator,
// in the worker over the emulated driver (DriverEnv, else
// build/emu-driver/libcuda.so.1 of the source tree: `make emu-lib`). Its
// runs are labelled emulated. Errors as NewCudasrcImpl's.
func NewCudasrcEmuImpl(arg string, opts difftest.ImplOptions) (difftest.Impl, error) {
	return openCudasrc(CudasrcEmuPrefix, arg, true, opts)
}

// unavailable is a *difftest.RunError of class Unavailable.
func unavailable(format string, args ...any) error {
	return &difftest.RunError{Class: difftest.Unavailable, Msg: fmt.Sprintf(format, args...)}
}

// openCudasrc builds the adapter of prefix+arg and starts its worker.
func openCudasrc(prefix, arg string, emu bool, opts difftest.ImplOptions) (difftest.Impl, error) {
	spec := prefix + arg
	if opts.AllDevices || len(opts.Devices) > 1 {
		return openDevices(opts, func(o difftest.ImplOptions) (difftest.Impl, error) { return openCudasrc(prefix, arg, emu, o) })
	}
	if len(opts.Devices) == 1 {
		opts.Device = opts.Devices[0]
	}
	if opts.Baseline != "" {
		return nil, unavailable("--baseline compares two fatbins; an adapter has none")
	}
	root, err := sourceTree()
	if err != nil {
		return nil, unavailable("%v", err)
	}
	b, err := parseCudasrc(spec, arg, emu, root)
	if err != nil {
		return nil, err
	}
	b.timeout, b.log = opts.BuildTimeout, opts.Log
	lib := DriverPath()
	if emu && os.Getenv(DriverEnv) == "" {
		lib = filepath.Join(root, DefaultEmuDriver)
	}
	if emu {
		if st, err := os.Stat(lib); err != nil || !st.Mode().IsRegular() {
			return nil, unavailable("no emulated driver at %s (make emu-lib builds it)", lib)
		}
	} else if err := cuda.CheckLibraryPath(lib); err != nil {
		return nil, unavailable("%s: %v", DriverEnv, err)
	}
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	adapter, err := b.build(ctx)
	if err != nil {
		if errors.Is(err, errBuildFailed) {
			return nil, unavailable("%v", err)
		}
		return nil, unavailable("building the adapter: %v", err)
	}
	if err := checkAdapterSymbols(adapter); err != nil {
		return nil, unavailable("%s: %v", b.path, err)
	}
	grace, err := exitGraceFrom(os.Getenv(ExitGraceEnv))
	if err != nil {
		return nil, unavailable("%v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, unavailable("cannot find this program to start the GPU worker: %v", err)
	}
	spawn := workerSpawn(exe, []string{WorkerCommand, "--adapter", adapter, "--device", strconv.Itoa(opts.Device), "--driver", lib}, opts.Timeout)
	im, rerr := newImpl(opts.Timeout, spawn, packers())
	if rerr != nil {
		return nil, rerr
	}
	im.name = spec
	im.exitGrace = grace
	emulated := strings.HasPrefix(im.device, EmulatorDevice)
	switch {
	case emu && !emulated:
		im.Close()
		return nil, unavailable("%s is not the emulated driver (its device is %q): %s runs only on %s; use %s for a GPU", lib, im.device, CudasrcEmuPrefix, EmulatorDevice, CudasrcPrefix)
	case !emu && emulated:
		im.Close()
		return nil, unavailable("%s is the emulated driver: %s builds for a GPU; use %s on the emulator", lib, CudasrcPrefix, CudasrcEmuPrefix)
	}
	if data, err := os.ReadFile(adapter); err == nil {
		sum := sha256.Sum256(data)
		im.props[PropAdapter] = b.path + " (library sha256 " + hex.EncodeToString(sum[:]) + ")"
	}
	if emulated {
		im.props[difftest.PropEmulated] = "the adapter's CUDA source (" + b.path + ") on the CPU emulator, not a GPU"
	}
	return im, nil
}

// adapterHelpers are the kd_adapter_* functions kernels/kd_adapter_info.cu
// adds to every adapter library.
var adapterHelpers = []string{"kd_adapter_params_size", "kd_adapter_synchronize", "kd_adapter_error_name"}

// mangledAdapter matches the Itanium-mangled name of a C++ function
// kd_adapter_*: _Z, the name's length, the name.
var mangledAdapter = regexp.MustCompile(`^_Z(\d+)(kd_adapter_\w+)`)

// checkAdapterSymbols reads the symbol table of the adapter library at
// path and refuses a function named kd_adapter_* that is neither a
// contract's adapter function nor a helper (a misspelt contract: its
// cases would go untested without a word; kernels/kd_adapter.h reserves
// the prefix), with C or C++ linkage alike (a misspelt definition has no
// declaration in the header to give it C linkage, so it is usually
// mangled), each named with the nearest contract's function; or a
// contract's adapter function with C++ linkage (a definition whose
// parameters differ from the header's declaration, an overload the worker
// never calls). A library without a symbol table (stripped) is not
// checked.
func checkAdapterSymbols(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("reading the adapter library: %v", err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil // stripped
	}
	known := map[string]bool{}
	for _, h := range adapterHelpers {
		known[h] = true
	}
	contracts := map[string]bool{}
	var funcs []string
	for _, n := range launcherNames() {
		known[adapterFunc(n)] = true
		contracts[n] = true
		funcs = append(funcs, adapterFunc(n))
	}
	sort.Strings(funcs)
	var unknown, cxx []string
	seen := map[string]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF {
			continue
		}
		name, _, _ := strings.Cut(s.Name, ".") // GCC's clones: f.cold, f.part.0
		linkage := ""
		if m := mangledAdapter.FindStringSubmatch(name); m != nil {
			n, err := strconv.Atoi(m[1])
			if err != nil || n > len(m[2]) {
				continue
			}
			name, linkage = m[2][:n], "C++ linkage; "
			if known[name] {
				cxx = append(cxx, name)
				continue
			}
		}
		if strings.HasPrefix(name, "kd_adapter_") && !known[name] && !seen[name+linkage] {
			seen[name+linkage] = true
			unknown = append(unknown, fmt.Sprintf("%s (%snearest contract: %s)", name, linkage, nearestName(name, funcs)))
		}
	}
	sort.Strings(unknown)
	sort.Strings(cxx)
	switch {
	case len(unknown) > 0:
		return fmt.Errorf("defines %s, which no contract has (kernels/kd_adapter.h: %s; the kd_adapter_ prefix is theirs): a misspelt adapter function leaves its contract untested", strings.Join(unknown, ", "), adapterList(contracts))
	case len(cxx) > 0:
		return fmt.Errorf("defines %s with C++ linkage: its parameters differ from kernels/kd_adapter.h's declaration, so it is an overload the harness never calls", strings.Join(slices.Compact(cxx), ", "))
	}
	return nil
}

// nearestName returns the name of names closest to s by edit distance
// (insertions, deletions, substitutions and swaps of two neighbours each
// count 1), the first of equals; "" for no names.
func nearestName(s string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		if d := editDistance(s, n); bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b, bytes
// compared: Levenshtein's with a swap of two neighbours counted as one
// edit ("transfrom" is one from "transform").
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// adapterList names the adapter functions of the kernels in set, sorted:
// "kd_adapter_topk_transform".
func adapterList(set map[string]bool) string {
	var fs []string
	for k := range set {
		fs = append(fs, adapterFunc(k))
	}
	sort.Strings(fs)
	return strings.Join(fs, ", ")
}

// sourceTree finds the kerneldiff source tree a cudasrc build needs
// (kernels/kd_adapter.h, kernels/emu/emu_cxx.py): the working directory
// or a folder above it, else the folder above this program's (build/difftest
// in a clone).
func sourceTree() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, s := range starts {
		for d := s; ; d = filepath.Dir(d) {
			if isTree(d) {
				return d, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("cudasrc needs the kerneldiff source tree (kernels/kd_adapter.h, kernels/emu/emu_cxx.py): run difftest inside a clone")
}

// isTree reports whether d is a kerneldiff source tree.
func isTree(d string) bool {
	for _, f := range []string{"kernels/kd_adapter.h", "kernels/kd_adapter_info.cu", "kernels/emu/emu_cxx.py", "kernels/emu/host_emu.h"} {
		if _, err := os.Stat(filepath.Join(d, filepath.FromSlash(f))); err != nil {
			return false
		}
	}
	return true
}
