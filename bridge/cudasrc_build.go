// Building a bring-your-own CUDA source (docs/byo.md): the adapter and the
// user's source tree, compiled into a shared library with nvcc for the GPU
// or with kernels/emu/emu_cxx.py for the CPU emulator, cached under
// build/cudasrc/ by a hash of everything that went into it.

package bridge

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/proc"
)

// CudasrcCacheEnv names the environment variable that sets the folder
// adapter libraries are built and cached in (default build/cudasrc of the
// kerneldiff source tree).
const CudasrcCacheEnv = "KD_CUDASRC_CACHE"

// CudasrcBuildTimeout bounds one build of an adapter library unless
// --build-timeout (difftest.ImplOptions.BuildTimeout) says otherwise.
const CudasrcBuildTimeout = 15 * time.Minute

// Build progress: the first line after cudasrcProgressAfter, then one every
// cudasrcProgressEvery, while the compiler runs (variables: tests shorten
// them).
var (
	cudasrcProgressAfter = 5 * time.Second
	cudasrcProgressEvery = 30 * time.Second
)

// cudasrcRecipe names the build recipe below; part of every cache key, so
// a change to the recipe's flags rebuilds every library.
const cudasrcRecipe = "cudasrc-1"

// maxDepsBytes bounds a cached build's list of the files it read.
const maxDepsBytes = 16 << 20

// cudasrcGencode are the GPU targets of the nvcc build when the user names
// none: those of scripts/build-kernels (SASS for sm_90, sm_100, sm_120 and
// PTX for sm_120).
var cudasrcGencode = []string{
	"-gencode", "arch=compute_90,code=sm_90",
	"-gencode", "arch=compute_100,code=sm_100",
	"-gencode", "arch=compute_120,code=[sm_120,compute_120]",
}

// cudasrcExports is the linker version script of every adapter library: it
// exports the kd_adapter_* functions and nothing else, so two emulators
// (the emulated driver's and the adapter's, each a copy of host_emu.h) or
// two C++ runtimes never bind to each other's symbols.
const cudasrcExports = "{ global: kd_adapter_*; local: *; };\n"

// cudasrcBuild is one adapter library to build: the sources, the user's
// flags and the target.
type cudasrcBuild struct {
	root    string   // the kerneldiff source tree (kernels/kd_adapter.h, kernels/emu/)
	emu     bool     // the CPU emulator (emu_cxx.py), else the GPU (nvcc)
	path    string   // the adapter file or folder, absolute
	sources []string // the .cu files compiled, absolute, sorted
	compile []string // the user's compile flags (-I, -isystem, -D, -U, -std, -O, -g, -include), paths absolute
	link    []string // the user's link flags (-L, -l, -Wl,...)
	arch    []string // the user's -arch/-gencode flags (the GPU build only)

	timeout time.Duration // the build's limit; 0 = CudasrcBuildTimeout
	log     io.Writer     // progress lines of a long build; nil = none
}

// usageErr is a usage error in an --impl cudasrc value (exit 2).
func usageErr(spec, format string, args ...any) error {
	return fmt.Errorf("%w %q: %s", difftest.ErrUnknownImpl, spec, fmt.Sprintf(format, args...))
}

// parseCudasrc reads the rest of an --impl cudasrc:/cudasrc-emu: value: the
// adapter PATH, then compiler flags, split into words like a shell would
// (proc.SplitCommand). PATH is a .cu file, or a folder whose top-level .cu
// files are all compiled. Accepted flags: -I DIR, -isystem DIR, -D
// NAME[=VALUE], -U NAME, -std=..., -O0..-O3, -g, -include FILE, -L DIR,
// -lNAME, -Wl,..., and for the GPU build -arch=... and -gencode=...
// (ignored by the emulator's). Paths are made absolute against the working
// directory. Errors wrap difftest.ErrUnknownImpl: a missing PATH, a folder
// without .cu files, an unknown flag.
func parseCudasrc(spec, arg string, emu bool, root string) (*cudasrcBuild, error) {
	words, err := proc.SplitCommand(arg)
	if err != nil {
		return nil, usageErr(spec, "%v", err)
	}
	path, err := filepath.Abs(words[0])
	if err != nil {
		return nil, usageErr(spec, "%v", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, usageErr(spec, "no adapter at %s: want a .cu file or a folder of them", words[0])
	}
	b := &cudasrcBuild{root: root, emu: emu, path: path}
	switch {
	case st.IsDir():
		cus, _ := filepath.Glob(filepath.Join(path, "*.cu"))
		if len(cus) == 0 {
			return nil, usageErr(spec, "the folder %s holds no .cu file (the adapter and the sources to compile)", words[0])
		}
		sort.Strings(cus)
		for _, cu := range cus {
			if err := regularFile(cu); err != nil {
				return nil, usageErr(spec, "source %v (every top-level .cu file of the folder is compiled)", err)
			}
		}
		b.sources = cus
	case st.Mode().IsRegular() && strings.HasSuffix(path, ".cu"):
		b.sources = []string{path}
	default:
		return nil, usageErr(spec, "%s: want a .cu file or a folder of them", words[0])
	}
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	rest := words[1:]
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		// next returns the value of a flag given as two words (-I DIR).
		next := func() (string, error) {
			if i+1 >= len(rest) {
				return "", usageErr(spec, "%s needs a value", w)
			}
			i++
			return rest[i], nil
		}
		switch {
		case w == "-I" || w == "-isystem" || w == "-include" || w == "-L" || w == "-D" || w == "-U":
			v, err := next()
			if err != nil {
				return nil, err
			}
			switch w {
			case "-include":
				if err := regularFile(v); err != nil {
					return nil, usageErr(spec, "-include %v", err)
				}
				b.compile = append(b.compile, w, abs(v))
			case "-I", "-isystem":
				b.compile = append(b.compile, w, abs(v))
			case "-D", "-U":
				if err := checkMacro(w, v); err != nil {
					return nil, usageErr(spec, "%v", err)
				}
				b.compile = append(b.compile, w+v)
			case "-L":
				b.link = append(b.link, "-L"+abs(v))
			}
		case strings.HasPrefix(w, "-I") || strings.HasPrefix(w, "-isystem"):
			flag := "-I"
			if strings.HasPrefix(w, "-isystem") {
				flag = "-isystem"
			}
			b.compile = append(b.compile, flag, abs(strings.TrimPrefix(w, flag)))
		case strings.HasPrefix(w, "-D") || strings.HasPrefix(w, "-U"):
			if err := checkMacro(w[:2], w[2:]); err != nil {
				return nil, usageErr(spec, "%v", err)
			}
			b.compile = append(b.compile, w)
		case w == "-std=":
			return nil, usageErr(spec, "-std= needs a standard, e.g. -std=c++17")
		case strings.HasPrefix(w, "-std=") || w == "-g" || w == "-O0" || w == "-O1" || w == "-O2" || w == "-O3":
			b.compile = append(b.compile, w)
		case strings.HasPrefix(w, "-L"):
			b.link = append(b.link, "-L"+abs(strings.TrimPrefix(w, "-L")))
		case strings.HasPrefix(w, "-l") && len(w) > 2, strings.HasPrefix(w, "-Wl,") && len(w) > 4:
			b.link = append(b.link, w)
		case strings.HasPrefix(w, "-arch=") || strings.HasPrefix(w, "-gencode="):
			b.arch = append(b.arch, w)
		default:
			return nil, usageErr(spec, "unknown or unsupported flag %q (accepted: -I, -isystem, -D, -U, -std=, -O0..-O3, -g, -include, -L, -l, -Wl, and for the GPU -arch=, -gencode=)", w)
		}
	}
	if err := b.checkIncludes(); err != nil {
		return nil, usageErr(spec, "%v", err)
	}
	return b, nil
}

// regularFile returns nil when p is a regular file or a symlink to one
// (difftest.OpenRegular), else an error naming p and what it is: the
// compiler would block on a FIFO, and a folder or a dangling link is the
// user's mistake, not a build failure.
func regularFile(p string) error {
	f, _, err := difftest.OpenRegular(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s: no such file", p)
	case errors.Is(err, difftest.ErrNotRegular):
		return fmt.Errorf("%s: %v", p, err)
	case err != nil:
		return err
	}
	return f.Close()
}

// macroName matches a -D or -U macro name: an identifier, for -D
// optionally with a function-like macro's parameter list.
var macroName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\(.*\))?$`)

// checkMacro checks the NAME of "-D NAME[=VALUE]" or "-U NAME" (flag "-D"
// or "-U", v the rest): an identifier (-D: with an optional parameter
// list), so the compiler gets no empty or malformed macro.
func checkMacro(flag, v string) error {
	name := v
	if flag == "-D" {
		name, _, _ = strings.Cut(v, "=")
	}
	if !macroName.MatchString(name) || flag == "-U" && strings.Contains(name, "(") {
		return fmt.Errorf("%s needs a macro name (an identifier), got %q", flag, v)
	}
	return nil
}

// has reports whether flags holds a word starting with prefix.
func has(flags []string, prefix string) bool {
	for _, f := range flags {
		if strings.HasPrefix(f, prefix) {
			return true
		}
	}
	return false
}

// compiler returns the command that builds the library and the text that
// identifies the compiler in the cache key (its version, and the
// emulator's translator and headers).
func (b *cudasrcBuild) compiler(ctx context.Context) (string, string, error) {
	if b.emu {
		tool := filepath.Join(b.root, "kernels", "emu", "emu_cxx.py")
		cxx := os.Getenv("CXX")
		if cxx == "" {
			cxx = "g++"
		}
		ver, err := exec.CommandContext(ctx, cxx, "--version").Output()
		if err != nil {
			return "", "", fmt.Errorf("the emulator build needs %s: %v", cxx, err)
		}
		script, err := os.ReadFile(tool)
		if err != nil {
			return "", "", err
		}
		sum := sha256.Sum256(script)
		return tool, "emu_cxx.py " + hex.EncodeToString(sum[:]) + "\n" + cxx + ": " + firstLine(string(ver)), nil
	}
	out, err := exec.CommandContext(ctx, filepath.Join(b.root, "scripts", "setup-cuda"), "--print-nvcc").Output()
	if err != nil {
		return "", "", fmt.Errorf("no nvcc 13.0 for the GPU build (scripts/setup-cuda --print-nvcc failed: %v)", err)
	}
	nvcc := strings.TrimSpace(string(out))
	ver, err := exec.CommandContext(ctx, nvcc, "--version").Output()
	if err != nil {
		return "", "", fmt.Errorf("%s --version: %v", nvcc, err)
	}
	return nvcc, nvcc + "\n" + string(ver), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// commands returns the compiler invocations that build lib from the
// sources in folder dir (temporary), and the make-style dependency files
// (emu: a plain list) they write.
func (b *cudasrcBuild) commands(tool, dir, lib string) ([][]string, []string) {
	info := filepath.Join(b.root, "kernels", "kd_adapter_info.cu")
	exports := filepath.Join(dir, "exports.map")
	inc := []string{"-I", filepath.Join(b.root, "kernels"), "-I", b.path}
	if !isDir(b.path) {
		inc[3] = filepath.Dir(b.path)
	}
	std := []string{"-std=c++20"}
	if has(b.compile, "-std=") {
		std = nil
	}
	opt := []string{"-O2"}
	if has(b.compile, "-O") {
		opt = nil
	}
	if b.emu {
		deps := filepath.Join(dir, "deps.txt")
		cmd := []string{tool, "-include", filepath.Join(b.root, "kernels", "emu", "host_emu.h")}
		cmd = append(cmd, std...)
		cmd = append(cmd, opt...)
		cmd = append(cmd, "-ffp-contract=off", "-fPIC", "-shared", "-fvisibility=hidden")
		cmd = append(cmd, inc...)
		cmd = append(cmd, b.compile...)
		cmd = append(cmd, "--deps", deps, "-o", lib)
		cmd = append(cmd, b.sources...)
		cmd = append(cmd, info)
		cmd = append(cmd, b.link...)
		cmd = append(cmd, "-Wl,--version-script="+exports, "-Wl,-z,defs")
		return [][]string{cmd}, []string{deps}
	}
	arch := cudasrcGencode
	if len(b.arch) > 0 {
		arch = b.arch
	}
	var cmds [][]string
	var deps, objs []string
	for i, src := range append(append([]string(nil), b.sources...), info) {
		obj := filepath.Join(dir, fmt.Sprintf("%d_%s.o", i, strings.TrimSuffix(filepath.Base(src), ".cu")))
		d := obj + ".d"
		cmd := []string{tool, "-c"}
		cmd = append(cmd, std...)
		cmd = append(cmd, opt...)
		cmd = append(cmd, arch...)
		cmd = append(cmd, "-Xcompiler", "-fPIC,-fvisibility=hidden")
		cmd = append(cmd, inc...)
		cmd = append(cmd, b.compile...)
		cmd = append(cmd, "-MD", "-MF", d, "-o", obj, src)
		cmds = append(cmds, cmd)
		deps = append(deps, d)
		objs = append(objs, obj)
	}
	link := []string{tool, "-shared"}
	link = append(link, arch...)
	link = append(link, "-o", lib)
	link = append(link, objs...)
	// The pinned wheels' nvcc (scripts/setup-cuda's .cuda/) keeps the
	// static runtime in lib/, beside bin/, where its nvcc.profile does not
	// look (it names lib64/).
	if rt := filepath.Join(filepath.Dir(filepath.Dir(tool)), "lib"); fileExists(filepath.Join(rt, "libcudart_static.a")) {
		link = append(link, "-L"+rt)
	}
	for _, f := range b.link {
		if w, ok := strings.CutPrefix(f, "-Wl,"); ok {
			link = append(link, "-Xlinker", w)
		} else {
			link = append(link, f)
		}
	}
	link = append(link, "-Xlinker", "--version-script="+exports, "-Xlinker", "-z,defs")
	return append(cmds, link), deps
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// key is the cache key of the build: the recipe, the target, the compiler,
// the flags and the sources' bytes (the headers they include are checked
// against the cached build's list of the files it read).
func (b *cudasrcBuild) key(compilerID string, cmds [][]string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\nemu=%v\n%s\n", cudasrcRecipe, b.emu, compilerID)
	for _, c := range cmds {
		fmt.Fprintf(h, "%q\n", c[1:])
	}
	for _, s := range b.sources {
		sum, err := hashFile(s) // a regular file only: a FIFO put in a source's place cannot block
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %s\n", s, sum)
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// cudasrcCache returns the cache folder: CudasrcCacheEnv, else
// root/build/cudasrc.
func cudasrcCache(root string) string {
	if d := os.Getenv(CudasrcCacheEnv); d != "" {
		return d
	}
	return filepath.Join(root, "build", "cudasrc")
}

// errBuildFailed marks a build whose compiler failed (the user's source
// or flags); other build errors are the machine's.
var errBuildFailed = errors.New("adapter build failed")

// build returns the adapter library, built into the cache unless a
// cached build of the same key still matches every file it read. A
// compiler failure is an error wrapping errBuildFailed whose message is
// the first error line of the compiler's output (file and line) and the
// path of the whole log.
func (b *cudasrcBuild) build(ctx context.Context) (string, error) {
	limit := b.timeout
	if limit <= 0 {
		limit = CudasrcBuildTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tool, id, err := b.compiler(ctx)
	if err != nil {
		return "", err
	}
	cache := cudasrcCache(b.root)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	// The key does not depend on the temporary folder's name.
	probe, _ := b.commands(tool, "DIR", "LIB")
	key, err := b.key(id, probe)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, key)
	lib := filepath.Join(dir, "libadapter.so")
	if fresh(dir) {
		return lib, nil
	}
	tmp, err := os.MkdirTemp(cache, key+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "exports.map"), []byte(cudasrcExports), 0o644); err != nil {
		return "", err
	}
	cmds, depFiles := b.commands(tool, tmp, filepath.Join(tmp, "libadapter.so"))
	stop := b.progress(filepath.Base(tool), limit)
	defer stop()
	var log bytes.Buffer
	for _, c := range cmds {
		fmt.Fprintf(&log, "$ %s\n", strings.Join(c, " "))
		cmd := exec.CommandContext(ctx, c[0], c[1:]...)
		cmd.Dir = tmp
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Run(); err != nil {
			logPath := filepath.Join(cache, key+".log")
			_ = os.WriteFile(logPath, log.Bytes(), 0o644)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return "", fmt.Errorf("building %s: not done within %v (--build-timeout; the log so far: %s)", b.path, limit, logPath)
			}
			if ctx.Err() != nil {
				return "", fmt.Errorf("building %s: %v (log: %s)", b.path, ctx.Err(), logPath)
			}
			return "", fmt.Errorf("%w: %s (%s; the whole log: %s)", errBuildFailed, firstError(log.String(), b.emu), filepath.Base(c[0]), logPath)
		}
	}
	var files []string
	for _, d := range depFiles {
		fs, err := readDeps(d, b.emu, tmp)
		if err != nil {
			return "", err
		}
		files = append(files, fs...)
	}
	list, err := hashFiles(files)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, "deps"), list, 0o644); err != nil {
		return "", err
	}
	_ = os.WriteFile(filepath.Join(tmp, "build.log"), log.Bytes(), 0o644)
	_ = os.Remove(filepath.Join(cache, key+".log")) // an earlier failure's
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil && !fresh(dir) {
		return "", err
	}
	return lib, nil
}

// progress prints, while the build runs, a line to b.log after
// cudasrcProgressAfter and then every cudasrcProgressEvery ("building the
// adapter PATH with nvcc: 35s so far, limit 15m0s (--build-timeout)");
// the returned func stops it.
func (b *cudasrcBuild) progress(tool string, limit time.Duration) (stop func()) {
	if b.log == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		t := time.NewTimer(cudasrcProgressAfter)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(b.log, "difftest: building the adapter %s with %s (%d source file(s)): %v so far, limit %v (--build-timeout)\n",
					b.path, tool, len(b.sources), time.Since(start).Round(time.Second), limit)
				t.Reset(cudasrcProgressEvery)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// fresh reports whether the cached build in dir is complete and every
// file it read still has the bytes it had.
func fresh(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "libadapter.so")); err != nil {
		return false
	}
	list, err := difftest.ReadFileLimit(filepath.Join(dir, "deps"), maxDepsBytes)
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(list))
	for sc.Scan() {
		sum, path, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			return false
		}
		got, err := hashFile(path)
		if err != nil || got != sum {
			return false
		}
	}
	return sc.Err() == nil
}

// hashFiles returns the sha256sum-style list ("HEX  PATH" lines) of the
// distinct files, sorted by path.
func hashFiles(files []string) ([]byte, error) {
	seen := map[string]bool{}
	var paths []string
	for _, f := range files {
		if !seen[f] {
			seen[f] = true
			paths = append(paths, f)
		}
	}
	sort.Strings(paths)
	var out bytes.Buffer
	for _, p := range paths {
		sum, err := hashFile(p)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&out, "%s  %s\n", sum, p)
	}
	return out.Bytes(), nil
}

func hashFile(path string) (string, error) {
	f, _, err := difftest.OpenRegular(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readDeps returns the files a compile read: emu_cxx.py's --deps list
// (one absolute path a line), or an nvcc -MD make rule (prerequisites
// after the colon, backslash-newline continued, spaces escaped), made
// absolute against dir, where the compiler ran.
func readDeps(path string, plain bool, dir string) ([]string, error) {
	data, err := difftest.ReadFileLimit(path, maxDepsBytes)
	if err != nil {
		return nil, err
	}
	var out []string
	if plain {
		for _, l := range strings.Split(string(data), "\n") {
			if l != "" {
				out = append(out, l)
			}
		}
		return out, nil
	}
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	for _, rule := range strings.Split(text, "\n") {
		_, deps, ok := strings.Cut(rule, ": ")
		if !ok {
			continue
		}
		for _, w := range makeWord.FindAllString(deps, -1) {
			w = unescape.ReplaceAllString(w, "$1")
			if !filepath.IsAbs(w) {
				w = filepath.Join(dir, w)
			}
			out = append(out, w)
		}
	}
	return out, nil
}

var (
	makeWord = regexp.MustCompile(`(?:\\.|[^\s\\])+`)
	unescape = regexp.MustCompile(`\\(.)`)
	// errorLine matches a compiler diagnostic that is an error: g++'s
	// "FILE:LINE:COL: error: ...", nvcc's "FILE(LINE): error: ...", the
	// linker's "undefined reference", emu_cxx.py's own.
	errorLine = regexp.MustCompile(`(?i)(:\d+(:\d+)?: (fatal )?error|\(\d+\): (catastrophic )?error|undefined reference|emu_cxx: |nvcc fatal)`)
)

// firstError is the compiler output's first error line (trimmed), with a
// hint when the emulator's link lacks a CUDA runtime function; the last
// line when none looks like an error.
func firstError(log string, emu bool) string {
	var last string
	for _, l := range strings.Split(log, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "$ ") {
			continue
		}
		last = l
		if errorLine.MatchString(l) {
			if emu && strings.Contains(l, "undefined reference to `cuda") {
				l += " (a CUDA runtime function the emulator does not stand in for: kernels/emu/host_emu.h lists those it does)"
			}
			return l
		}
	}
	return last
}
