// Command kernelsgen writes the lists of kernels that derive from the
// kernel folders (docs/adding-a-kernel.md). A kernel is registered once, in
// its folder kernels/<dir>/: its Go package calls difftest.RegisterKernel,
// and, when it has a CUDA kernel, kernels/<dir>/<dir>.cu is its source and
// kernels/<dir>/<dir>.h lists its entry points in one X-macro,
//
//	#define KD_<DIR>_ENTRIES(X) X(contract, entry, params struct, block threads) ...
//
// From these it writes, in the repository root given by -root (default:
// the working directory's module root, as `go generate` runs it):
//
//	kernels/all/all_gen.go  the blank imports of every Go kernel package
//	kernels/kernels.cu      the one translation unit of the kernel build
//	                        and KD_KERNEL_ENTRIES, every entry point
//	kernels/entries.txt     the entry points as text, for scripts and tests
//	kernels/kd_adapter.h    the bring-your-own adapter interface: one
//	                        kd_adapter_<contract> declaration per contract
//	                        with a CUDA kernel, taking its parameter struct
//	                        (docs/byo.md)
//
// With -check it writes nothing and exits 1 naming each file that is not
// what it would write. Run it with `make generate` (or `go generate
// ./kernels/all`).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// module is the Go module path the kernel packages live under.
const module = "github.com/kerneldiff/kerneldiff"

// Entry is one CUDA entry point as a kernel's header declares it in its
// KD_<DIR>_ENTRIES X-macro.
type Entry struct {
	Contract string // contract name, e.g. "topk_transform"
	Dir      string // kernel folder under kernels/, e.g. "topk"
	Name     string // extern "C" entry point, e.g. "kd_topk_transform_512"
	Params   string // C parameter struct, e.g. "kd_topk_params"
	Threads  string // block threads, a C expression, e.g. "KD_TOPK_THREADS"
}

// Kernels is what the kernel folders declare: Go packages that register a
// contract (folder names, sorted) and the CUDA kernels' entry points (by
// folder, then in header order).
type Kernels struct {
	GoDirs   []string
	CUDADirs []string
	Entries  []Entry
}

var entryRE = regexp.MustCompile(`X\(\s*([A-Za-z0-9_]+)\s*,\s*([A-Za-z0-9_]+)\s*,\s*([A-Za-z0-9_]+)\s*,\s*([^()]+?|[^()]*\([^()]*\)[^()]*)\s*\)`)

// Scan reads the kernel folders under root/kernels. A folder with a
// <dir>.cu must have a <dir>.h defining KD_<DIR>_ENTRIES(X) with at least
// one entry; errors name the file and the rule.
func Scan(root string) (Kernels, error) {
	var k Kernels
	des, err := os.ReadDir(filepath.Join(root, "kernels"))
	if err != nil {
		return k, err
	}
	for _, de := range des {
		if !de.IsDir() {
			continue
		}
		dir := de.Name()
		path := filepath.Join(root, "kernels", dir)
		gos, err := filepath.Glob(filepath.Join(path, "*.go"))
		if err != nil {
			return k, err
		}
		for _, f := range gos {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return k, err
			}
			if bytes.Contains(b, []byte("difftest.RegisterKernel(")) {
				k.GoDirs = append(k.GoDirs, dir)
				break
			}
		}
		cu := filepath.Join(path, dir+".cu")
		if _, err := os.Stat(cu); err != nil {
			continue
		}
		es, err := headerEntries(root, dir)
		if err != nil {
			return k, err
		}
		k.CUDADirs = append(k.CUDADirs, dir)
		k.Entries = append(k.Entries, es...)
	}
	seen := map[string]string{}
	params := map[string]Entry{}
	for _, e := range k.Entries {
		if d, dup := seen[e.Name]; dup {
			return k, fmt.Errorf("entry point %s is declared by kernels/%s/%s.h and kernels/%s/%s.h: entry names must be unique", e.Name, d, d, e.Dir, e.Dir)
		}
		seen[e.Name] = e.Dir
		if f, ok := params[e.Contract]; ok && (f.Params != e.Params || f.Dir != e.Dir) {
			return k, fmt.Errorf("contract %s: entry %s takes %s (kernels/%s/%s.h), entry %s takes %s (kernels/%s/%s.h): one contract has one parameter struct, declared in one header (its adapter function takes it)",
				e.Contract, f.Name, f.Params, f.Dir, f.Dir, e.Name, e.Params, e.Dir, e.Dir)
		}
		params[e.Contract] = e
	}
	return k, nil
}

// Adapter is one function of the bring-your-own adapter interface: a
// contract with a CUDA kernel and the parameter struct its entry points
// take.
type Adapter struct {
	Contract string // e.g. "topk_transform"
	Dir      string // the kernel folder whose header declares Params
	Params   string // e.g. "kd_topk_params"
}

// Adapters returns one Adapter per contract of k.Entries, sorted by
// contract (Scan has checked that a contract's entries share one struct).
func (k Kernels) Adapters() []Adapter {
	seen := map[string]bool{}
	var as []Adapter
	for _, e := range k.Entries {
		if !seen[e.Contract] {
			seen[e.Contract] = true
			as = append(as, Adapter{e.Contract, e.Dir, e.Params})
		}
	}
	sort.Slice(as, func(i, j int) bool { return as[i].Contract < as[j].Contract })
	return as
}

// headerEntries parses KD_<DIR>_ENTRIES of kernels/<dir>/<dir>.h.
func headerEntries(root, dir string) ([]Entry, error) {
	rel := "kernels/" + dir + "/" + dir + ".h"
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("kernels/%s/%s.cu has no header %s: %w", dir, dir, rel, err)
	}
	macro := entriesMacro(dir)
	lines := strings.Split(string(b), "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "#define "+macro+"(X)") {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("%s: no #define %s(X) listing the kernel's entry points (docs/adding-a-kernel.md)", rel, macro)
	}
	var body strings.Builder
	for i := start; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t")
		body.WriteString(strings.TrimSuffix(l, "\\"))
		body.WriteByte(' ')
		if !strings.HasSuffix(l, "\\") {
			break
		}
	}
	def := strings.TrimPrefix(strings.TrimSpace(body.String()), "#define "+macro+"(X)")
	var es []Entry
	for _, m := range entryRE.FindAllStringSubmatch(def, -1) {
		es = append(es, Entry{Contract: m[1], Dir: dir, Name: m[2], Params: m[3], Threads: strings.TrimSpace(m[4])})
	}
	if len(es) == 0 {
		return nil, fmt.Errorf("%s: %s(X) lists no X(contract, entry, params struct, block threads)", rel, macro)
	}
	return es, nil
}

// entriesMacro returns KD_<DIR>_ENTRIES.
func entriesMacro(dir string) string { return "KD_" + strings.ToUpper(dir) + "_ENTRIES" }

// Files returns the generated files by path relative to the root.
func (k Kernels) Files() map[string][]byte {
	var g bytes.Buffer
	g.WriteString("// Code generated by internal/kernelsgen from the kernel folders; DO NOT EDIT.\n\n")
	g.WriteString("package all\n\n")
	g.WriteString("import (\n")
	for _, d := range k.GoDirs {
		fmt.Fprintf(&g, "\t_ %q\n", module+"/kernels/"+d)
	}
	g.WriteString(")\n\n")
	g.WriteString("// Dirs are the folders under kernels/ whose packages this package\n// imports, sorted.\n")
	g.WriteString("var Dirs = []string{")
	for i, d := range k.GoDirs {
		if i > 0 {
			g.WriteString(", ")
		}
		fmt.Fprintf(&g, "%q", d)
	}
	g.WriteString("}\n")

	var cu bytes.Buffer
	cu.WriteString(`/* kernels.cu: the one translation unit of the kernel build.
 * Generated by internal/kernelsgen from the kernel folders (make generate);
 * DO NOT EDIT.
 *
 * scripts/build-kernels compiles this file into build/kernels.fatbin, so
 * every kernel lands in one CUDA module and the bridge loads one image.
 * A fault build (-DKD_FAULT_<NAME>, kernels/faults.txt) compiles the same
 * file with one fault switched on. KD_KERNEL_ENTRIES(X) expands X(contract,
 * entry, params struct, block threads) once per entry point:
`)
	for _, e := range k.Entries {
		fmt.Fprintf(&cu, " *   %s (%s/%s.h)\n", e.Name, e.Dir, e.Dir)
	}
	cu.WriteString(" */\n\n")
	for _, d := range k.CUDADirs {
		fmt.Fprintf(&cu, "#include \"%s/%s.cu\"\n", d, d)
	}
	cu.WriteString("\n#define KD_KERNEL_ENTRIES(X)")
	for _, d := range k.CUDADirs {
		fmt.Fprintf(&cu, " \\\n    %s(X)", entriesMacro(d))
	}
	cu.WriteString("\n")

	var txt bytes.Buffer
	txt.WriteString("# The CUDA entry points of kernels/kernels.cu, one a line:\n")
	txt.WriteString("# contract<TAB>folder<TAB>entry<TAB>params struct<TAB>block threads.\n")
	txt.WriteString("# Generated by internal/kernelsgen from kernels/<folder>/<folder>.h (make generate); DO NOT EDIT.\n")
	for _, e := range k.Entries {
		fmt.Fprintf(&txt, "%s\t%s\t%s\t%s\t%s\n", e.Contract, e.Dir, e.Name, e.Params, e.Threads)
	}
	return map[string][]byte{
		"kernels/all/all_gen.go": g.Bytes(),
		"kernels/kernels.cu":     cu.Bytes(),
		"kernels/entries.txt":    txt.Bytes(),
		"kernels/kd_adapter.h":   k.adapterHeader(),
	}
}

// adapterHeader is kernels/kd_adapter.h: the adapter functions a
// bring-your-own CUDA source defines (docs/byo.md).
func (k Kernels) adapterHeader() []byte {
	as := k.Adapters()
	var h bytes.Buffer
	h.WriteString(`/* kd_adapter.h: the interface of a bring-your-own CUDA source
 * (docs/byo.md). Generated by internal/kernelsgen from the kernel folders
 * (make generate); DO NOT EDIT.
 *
 * An adapter is a CUDA C++ file that includes this header and defines, for
 * each kernel it implements, its kd_adapter_<contract> function: it gets the
 * parameter struct this project's launcher packs for the case (device
 * pointers and sizes, as the kernel header documents them) and launches the
 * user's kernel(s) on stream with the user's own host code (<<<>>>,
 * cudaLaunchKernelEx, ...). It returns 0 (cudaSuccess) when the work was
 * launched, the cudaError_t of the call that failed otherwise, or
 * KD_ADAPTER_UNSUPPORTED to decline a configuration it does not implement
 * (the case is then not tested). "difftest run --impl cudasrc:PATH" builds
 * it with nvcc for the GPU, "--impl cudasrc-emu:PATH" with
 * kernels/emu/emu_cxx.py for the CPU emulator. A kernel whose function the
 * adapter does not define is not tested. */
#ifndef KD_ADAPTER_H
#define KD_ADAPTER_H

#include <cuda_runtime.h>

`)
	for _, a := range as {
		fmt.Fprintf(&h, "#include \"%s/%s.h\"\n", a.Dir, a.Dir)
	}
	h.WriteString(`
/* Returned by an adapter function that declines the case's configuration. */
#define KD_ADAPTER_UNSUPPORTED (-1)

/* Exported whatever the build's default visibility. */
#define KD_ADAPTER_API extern "C" __attribute__((visibility("default")))

/* The adapter functions, one X(contract, params struct) each. */
#define KD_ADAPTER_KERNELS(X)`)
	for _, a := range as {
		fmt.Fprintf(&h, " \\\n    X(%s, %s)", a.Contract, a.Params)
	}
	h.WriteString("\n\n")
	for _, a := range as {
		fmt.Fprintf(&h, "/* %s: kernels/%s/%s.h */\nKD_ADAPTER_API int kd_adapter_%s(const %s *p, cudaStream_t stream);\n", a.Contract, a.Dir, a.Dir, a.Contract, a.Params)
	}
	h.WriteString("\n#endif /* KD_ADAPTER_H */\n")
	return h.Bytes()
}

// Stale returns the generated files under root that differ from what
// Files gives, sorted.
func Stale(root string, files map[string][]byte) []string {
	var stale []string
	for p, want := range files {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil || !bytes.Equal(got, want) {
			stale = append(stale, p)
		}
	}
	sort.Strings(stale)
	return stale
}

// findRoot returns the nearest directory at or above dir holding go.mod.
func findRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod at or above %s", dir)
		}
	}
}

func main() {
	root := flag.String("root", "", "repository `DIR` (default: the module root above the working directory)")
	check := flag.Bool("check", false, "write nothing; exit 1 naming each generated file that is stale")
	flag.Parse()
	if *root == "" {
		wd, err := os.Getwd()
		if err == nil {
			*root, err = findRoot(wd)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "kernelsgen:", err)
			os.Exit(2)
		}
	}
	k, err := Scan(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kernelsgen:", err)
		os.Exit(2)
	}
	files := k.Files()
	if *check {
		if s := Stale(*root, files); len(s) > 0 {
			fmt.Fprintf(os.Stderr, "kernelsgen: stale: %s (run make generate)\n", strings.Join(s, ", "))
			os.Exit(1)
		}
		return
	}
	for _, p := range Stale(*root, files) {
		if err := os.WriteFile(filepath.Join(*root, filepath.FromSlash(p)), files[p], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "kernelsgen:", err)
			os.Exit(2)
		}
	}
}
