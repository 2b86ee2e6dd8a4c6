package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/boundtest"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// repoRoot is the source tree these tests run in.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil || !isTree(root) {
		t.Fatalf("%s is not the kerneldiff source tree (%v)", root, err)
	}
	return root
}

// The flags of an --impl cudasrc value: paths made absolute, compile and
// link flags apart, -arch kept for the GPU; usage errors (exit 2) for a
// missing adapter, a folder without .cu files and an unknown flag.
func TestParseCudasrc(t *testing.T) {
	root := repoRoot(t)
	wd, _ := os.Getwd()
	b, err := parseCudasrc("cudasrc:x", "../examples/cuda_adapter -I inc -DA=1 -Ufoo -isystem/sys -std=c++17 -O3 -L lib -lm -Wl,-rpath,/r -arch=sm_90", false, root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "examples", "cuda_adapter", "adapter.cu")}
	if !slices.Equal(b.sources, want) {
		t.Errorf("sources %v, want %v", b.sources, want)
	}
	if want := []string{"-I", filepath.Join(wd, "inc"), "-DA=1", "-Ufoo", "-isystem", "/sys", "-std=c++17", "-O3"}; !slices.Equal(b.compile, want) {
		t.Errorf("compile flags %q, want %q", b.compile, want)
	}
	if want := []string{"-L" + filepath.Join(wd, "lib"), "-lm", "-Wl,-rpath,/r"}; !slices.Equal(b.link, want) {
		t.Errorf("link flags %q, want %q", b.link, want)
	}
	if !slices.Equal(b.arch, []string{"-arch=sm_90"}) {
		t.Errorf("arch %q", b.arch)
	}
	// The user's -std and -O replace the defaults, once.
	cmds, _ := b.commands("nvcc", "DIR", "LIB")
	if c := strings.Join(cmds[0], " "); strings.Contains(c, "-std=c++20") || strings.Contains(c, "-O2") || !strings.Contains(c, "-arch=sm_90") || strings.Contains(c, "-gencode") {
		t.Errorf("nvcc compile command %s", c)
	}
	for _, tc := range []struct{ arg, want string }{
		{"/nonexistent/adapter.cu", "no adapter at /nonexistent/adapter.cu"},
		{"../bridge", "holds no .cu file"},
		{"../examples/cuda_adapter/topk_rows.cuh", "want a .cu file or a folder of them"},
		{"../examples/cuda_adapter -fno-exceptions", `unknown or unsupported flag "-fno-exceptions"`},
		{"../examples/cuda_adapter -I", "-I needs a value"},
		{"'../examples", "unterminated"},
		{"../examples/cuda_adapter -D ''", "-D needs a macro name"},
		{"../examples/cuda_adapter -U=x", "-U needs a macro name"},
		{"../examples/cuda_adapter -std=", "-std= needs a standard"},
		{"../examples/cuda_adapter -include /nonexistent/h.h", "-include /nonexistent/h.h: no such file"},
		{"../examples/cuda_adapter -include ../examples", "-include ../examples: not a regular file (a folder)"},
	} {
		_, err := parseCudasrc("cudasrc:"+tc.arg, tc.arg, true, root)
		if err == nil || !errors.Is(err, difftest.ErrUnknownImpl) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want a usage error saying %q", tc.arg, err, tc.want)
		}
	}
}

// A folder's .cu entries must be regular files (a symlink to one is fine):
// a FIFO would block the build (its hash reads the sources) past SIGTERM,
// a folder or a dangling link is named as a usage error, not a build error.
func TestParseCudasrcFolderEntries(t *testing.T) {
	root := repoRoot(t)
	for _, tc := range []struct {
		name string
		make func(p string) error
		want string
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "not a regular file (a FIFO)"},
		{"dir", func(p string) error { return os.Mkdir(p, 0o755) }, "not a regular file (a folder)"},
		{"dangling", func(p string) error { return os.Symlink("/nonexistent/x.cu", p) }, "no such file"},
	} {
		dir := t.TempDir()
		texttest.WriteFile(t, filepath.Join(dir, "a.cu"), "// empty\n", 0o644)
		if err := tc.make(filepath.Join(dir, "b.cu")); err != nil {
			t.Fatal(err)
		}
		boundtest.Returns(t, tc.name+": parseCudasrc", 10*time.Second, func() {
			_, err := parseCudasrc("cudasrc-emu:"+dir, dir, true, root)
			if err == nil || !errors.Is(err, difftest.ErrUnknownImpl) || !strings.Contains(err.Error(), "b.cu") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: err %v, want a usage error naming b.cu and saying %q", tc.name, err, tc.want)
			}
		})
	}
	// A symlink to a regular .cu file is a source.
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "examples", "cuda_adapter", "adapter.cu"), filepath.Join(dir, "a.cu")); err != nil {
		t.Fatal(err)
	}
	if b, err := parseCudasrc("cudasrc-emu:"+dir, dir, true, root); err != nil || len(b.sources) != 1 {
		t.Errorf("symlinked source: %v", err)
	}
}

// The first error line of a compiler's log, with the emulator's hint for a
// runtime function it does not stand in for; readDeps reads nvcc's make
// rules (continued lines, escaped spaces).
func TestFirstErrorAndDeps(t *testing.T) {
	for _, tc := range []struct {
		log  string
		emu  bool
		want string
	}{
		{"$ g++ -c x.cu\nIn file included from a.cu:3:\n/src/a.cu:8:15: error: 'const struct kd_topk_params' has no member named 'x'\n    8 | return p->x;\n", true,
			"/src/a.cu:8:15: error: 'const struct kd_topk_params' has no member named 'x'"},
		{"a.cu(12): error: identifier \"q\" is undefined\n1 error detected\n", false, `a.cu(12): error: identifier "q" is undefined`},
		{"/usr/bin/ld: 0_a.o: in function `f':\na.cu:(.text+0x1): undefined reference to `cudaEventCreate'\ncollect2: error: ld returned 1 exit status\n", true,
			"a.cu:(.text+0x1): undefined reference to `cudaEventCreate' (a CUDA runtime function the emulator does not stand in for: kernels/emu/host_emu.h lists those it does)"},
		{"something odd\nlast words\n", false, "last words"},
	} {
		if got := firstError(tc.log, tc.emu); got != tc.want {
			t.Errorf("firstError(%q) = %q, want %q", tc.log, got, tc.want)
		}
	}
	d := filepath.Join(t.TempDir(), "x.o.d")
	if err := os.WriteFile(d, []byte("x.o: /src/a.cu /inc/my\\ header.h \\\n  /usr/include/stdio.h rel.h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readDeps(d, false, "/build")
	if want := []string{"/src/a.cu", "/inc/my header.h", "/usr/include/stdio.h", "/build/rel.h"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("readDeps = %q, %v; want %q", got, err, want)
	}
}

// emuDriver returns the emulated driver the cudasrc-emu runs use:
// DriverEnv's when set, else build/emu-driver/libcuda.so.1, brought up to
// date by scripts/build-emu-driver (make emu-lib; quick when current).
func emuDriver(t *testing.T, root string) string {
	t.Helper()
	if p := os.Getenv(DriverEnv); p != "" {
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(root, "scripts", "build-emu-driver"), filepath.Join(root, "build", "emu-driver")).CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/build-emu-driver: %v\n%s", err, out)
	}
	return filepath.Join(root, DefaultEmuDriver)
}

// cudasrcRun runs `difftest run --impl IMPL ARGS... --json FILE` in the
// source tree and returns the exit code, stdout, stderr and the case
// records by case id.
func cudasrcRun(t *testing.T, bin, root, driver, impl string, args ...string) (int, string, string, map[string]difftest.Record) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "r.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"run", "--impl", impl, "--json", js}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), DriverEnv+"="+driver)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	recs := map[string]difftest.Record{}
	if f, err := os.Open(js); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var r difftest.Record
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.Type == "case" {
				recs[r.Case] = r
			}
		}
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String(), recs
}

// The bring-your-own path end to end on the emulator, through the CLI: the
// example adapter (examples/cuda_adapter, README) is built with emu_cxx.py
// and passes every topk_transform case of the quick suite (f32, bf16 and
// f16 scores), the kernels it does not implement are not tested (their
// inputs not drawn: Impl.Offers), the
// pipeline runs their stages on the reference, and the run is labelled
// emulated. Then two broken adapters: one mapping every row through
// page-table row 0 fails with the diagnosis of the catalog mutant
// topk-page-row0; one whose kernel traps fails each case with launch-error
// (a sticky cudaErrorLaunchFailure, the worker replaced) and declines
// K = 2048 (not tested). Builds are cached in build/cudasrc.
func TestCudasrcEmuEndToEnd(t *testing.T) {
	bin := buildDifftest(t)
	root := repoRoot(t)
	drv := emuDriver(t, root)

	code, stdout, stderr, recs := cudasrcRun(t, bin, root, drv, "cudasrc-emu:examples/cuda_adapter", "--suite", "quick")
	if code != 0 {
		t.Fatalf("example adapter: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var topk, skipped, pipeline int
	for id, r := range recs {
		switch {
		case strings.HasPrefix(id, "topk_transform/"):
			topk++
			if r.Verdict != difftest.VerdictPass {
				t.Errorf("%s: %s %s", id, r.Verdict, r.Message)
			}
		case strings.HasPrefix(id, "pipeline/"):
			pipeline++
			if r.Verdict != difftest.VerdictPass || !strings.Contains(strings.Join(r.Warnings, " "), "norm_rope_store ran on the reference") {
				t.Errorf("%s: %s %v", id, r.Verdict, r.Warnings)
			}
		default:
			skipped++
			if r.Verdict != difftest.VerdictSkip || !strings.Contains(r.Message, "the adapter defines kd_adapter_topk_transform, not kd_adapter_") {
				t.Errorf("%s: %s %q, want skip: not implemented", id, r.Verdict, r.Message)
			}
			if r.InputSHA256 != "" {
				t.Errorf("%s: not offered, yet its inputs were drawn (input_sha256 %s)", id, r.InputSHA256)
			}
		}
	}
	if topk < 20 || skipped < 10 || pipeline != 1 {
		t.Errorf("%d topk_transform, %d skipped, %d pipeline cases: the quick suite changed?", topk, skipped, pipeline)
	}
	if !strings.Contains(stdout, "emulated: the adapter's CUDA source") {
		t.Errorf("the table does not say the run was emulated:\n%s", stdout)
	}

	code, stdout, _, recs = cudasrcRun(t, bin, root, drv, "cudasrc-emu:bridge/testdata/cudasrc/page_row0.cu", "--suite", "quick", "--run", "^topk_transform/lengths-k512$")
	r := recs["topk_transform/lengths-k512"]
	if code != 1 || r.Verdict != difftest.VerdictFail || r.Class != difftest.Mismatch || !strings.Contains(strings.Join(r.Diagnosis, " "), "topk-page-row0") {
		t.Errorf("page-row-0 adapter: exit %d, %s %s %q, diagnosis %v, want exit 1, a mismatch diagnosed as topk-page-row0:\n%s", code, r.Verdict, r.Class, r.Message, r.Diagnosis, stdout)
	}

	// Right outputs, then scores[0][0] written on the device: the worker's
	// read-back of the inputs fails it, naming the element.
	code, stdout, _, recs = cudasrcRun(t, bin, root, drv, "cudasrc-emu:bridge/testdata/cudasrc/writes_input.cu", "--suite", "quick", "--run", "^topk_transform/(lengths-k512|bf16-lengths-k512)$")
	for _, id := range []string{"topk_transform/lengths-k512", "topk_transform/bf16-lengths-k512"} {
		r := recs[id]
		if r.Verdict != difftest.VerdictFail || r.Class != difftest.InputModified || !strings.Contains(r.Message, "input scores changed during the run: scores[0][0] was 0x") || !strings.Contains(r.Message, "; 1 of ") {
			t.Errorf("writes-input adapter: %s: %s %s %q, want input-modified naming scores[0][0]:\n%s", id, r.Verdict, r.Class, r.Message, stdout)
		}
	}
	if code != 1 {
		t.Errorf("writes-input adapter: exit %d, want 1", code)
	}

	// A launch that never ends: the time-out's message quotes the
	// emulator's hang report, naming the spinning block and thread.
	code, stdout, _, recs = cudasrcRun(t, bin, root, drv, "cudasrc-emu:bridge/testdata/cudasrc/spin.cu", "--suite", "quick", "--run", "^topk_transform/lengths-k512$", "--timeout", "4s")
	if r := recs["topk_transform/lengths-k512"]; code != 1 || r.Class != difftest.Timeout ||
		!strings.Contains(r.Message, "emu: hang report: launch of grid (2, 1, 1), block (32, 1, 1) still running after 3600 ms") ||
		!strings.Contains(r.Message, "emu: hang report: block (1, 0, 0): thread (0, 0, 0) runs, 0 of 32 threads returned") {
		t.Errorf("spinning adapter: exit %d, %s %q, want a timeout naming block (1, 0, 0) thread (0, 0, 0):\n%s", code, r.Class, r.Message, stdout)
	}

	code, stdout, _, recs = cudasrcRun(t, bin, root, drv, "cudasrc-emu:bridge/testdata/cudasrc/trap.cu", "--suite", "quick", "--run", "^topk_transform/(lengths|equal|needle)")
	if code != 1 || len(recs) != 4 {
		t.Fatalf("trap adapter: exit %d, %d records, want 1 and 4:\n%s", code, len(recs), stdout)
	}
	for id, r := range recs {
		if strings.HasSuffix(id, "k2048") {
			if r.Verdict != difftest.VerdictSkip || !strings.Contains(r.Message, "KD_ADAPTER_UNSUPPORTED") {
				t.Errorf("%s: %s %q, want skip: declined", id, r.Verdict, r.Message)
			}
			continue
		}
		if r.Class != difftest.LaunchError || !strings.Contains(r.Message, "kd_adapter_topk_transform: cudaErrorLaunchFailure (719)") {
			t.Errorf("%s: %s %q, want launch-error from kd_adapter_topk_transform", id, r.Class, r.Message)
		}
	}
}

// An adapter that does not compile: exit 125 (nothing could be tested)
// with one line on stderr naming the file and line of the first error and
// the log; nothing is cached.
func TestCudasrcCompileError(t *testing.T) {
	bin := buildDifftest(t)
	root := repoRoot(t)
	drv := emuDriver(t, root)
	cache := t.TempDir()
	t.Setenv(CudasrcCacheEnv, cache)
	code, stdout, stderr, _ := cudasrcRun(t, bin, root, drv, "cudasrc-emu:bridge/testdata/cudasrc/syntax_error.cu", "--suite", "quick")
	msg := strings.TrimSpace(stderr)
	if code != 125 || strings.Contains(msg, "\n") {
		t.Fatalf("exit %d, stderr %q, want 125 and one line\n%s", code, msg, stdout)
	}
	texttest.Contains(t, "stderr", msg, "adapter build failed", "bridge/testdata/cudasrc/syntax_error.cu:8:", "no_such_field", "emu_cxx.py", "the whole log: "+cache)
	if libs, _ := filepath.Glob(filepath.Join(cache, "*", "libadapter.so")); len(libs) != 0 {
		t.Errorf("a failed build left %v in the cache", libs)
	}
}

// The GPU flavour of the example adapter builds and links with nvcc (where
// scripts/setup-cuda finds or installs nvcc 13.0; there is no GPU to run it
// here): a shared library exporting the adapter and info functions and
// nothing else, with the CUDA runtime linked in statically and a fatbin of
// the default targets.
func TestCudasrcGPUBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles with nvcc")
	}
	root := repoRoot(t)
	if err := exec.Command(filepath.Join(root, "scripts", "setup-cuda"), "--check").Run(); err != nil {
		t.Skipf("no nvcc 13.0 here (scripts/setup-cuda --check: %v)", err)
	}
	b, err := parseCudasrc("cudasrc:examples/cuda_adapter", "../examples/cuda_adapter", false, root)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := b.build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("nm", "-D", "--defined-only", lib).Output()
	if err != nil {
		t.Fatal(err)
	}
	var exported []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[1] == "T" {
			exported = append(exported, f[2])
		}
	}
	slices.Sort(exported)
	if want := []string{"kd_adapter_error_name", "kd_adapter_params_size", "kd_adapter_synchronize", "kd_adapter_topk_transform"}; !slices.Equal(exported, want) {
		t.Errorf("%s exports %v, want %v", lib, exported, want)
	}
	needed, err := exec.Command("readelf", "-dW", lib).Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(needed), "libcudart") {
		t.Errorf("%s needs a shared libcudart; want the runtime linked in statically:\n%s", lib, needed)
	}
	sections, err := exec.Command("readelf", "-SW", lib).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sections), ".nv_fatbin") {
		t.Errorf("%s has no .nv_fatbin section", lib)
	}
}

// The adapter README.md and docs/byo.md show is the example's, function
// for function: a change to examples/cuda_adapter/adapter.cu that the docs
// do not follow fails here.
func TestDocsShowTheExampleAdapter(t *testing.T) {
	fn := func(text, name string) string {
		t.Helper()
		start := strings.Index(text, "int kd_adapter_topk_transform(")
		if start < 0 {
			t.Fatalf("%s shows no kd_adapter_topk_transform", name)
		}
		end := strings.Index(text[start:], "\n}\n")
		if end < 0 {
			t.Fatalf("%s: kd_adapter_topk_transform has no closing brace", name)
		}
		return text[start : start+end+3]
	}
	src, err := os.ReadFile("../examples/cuda_adapter/adapter.cu")
	if err != nil {
		t.Fatal(err)
	}
	want := fn(string(src), "adapter.cu")
	for _, doc := range []string{"../README.md", "../docs/byo.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if got := fn(string(b), doc); got != want {
			t.Errorf("%s shows\n%s\nexamples/cuda_adapter/adapter.cu has\n%s", doc, got, want)
		}
	}
}

// checkAdapterSymbols refuses a library whose kd_adapter_* functions are
// not the contracts' (a misspelt contract would leave its cases silently
// untested) or that defines a contract's function with C++ linkage (a
// signature other than kernels/kd_adapter.h's: an overload never called),
// and accepts the adapter and helper functions themselves, GCC's .cold
// clones included.
func TestCheckAdapterSymbols(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++")
	}
	build := func(src string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "a.cc"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		lib := filepath.Join(dir, "a.so")
		if out, err := exec.Command(cxx, "-shared", "-fPIC", "-O0", "-o", lib, filepath.Join(dir, "a.cc")).CombinedOutput(); err != nil {
			t.Fatalf("g++: %v\n%s", err, out)
		}
		return lib
	}
	good := `extern "C" int kd_adapter_topk_transform(const void *, void *) { return 0; }
extern "C" int kd_adapter_synchronize(void) { return 0; }
`
	if err := checkAdapterSymbols(build(good)); err != nil {
		t.Errorf("good library: %v", err)
	}
	for _, tc := range []struct{ src, want string }{
		{good + `extern "C" int kd_adapter_norm_rope_stor(const void *, void *) { return 0; }`,
			"kd_adapter_norm_rope_stor (nearest contract: kd_adapter_norm_rope_store), which no contract has (kernels/kd_adapter.h: kd_adapter_indexer_logits, kd_adapter_norm_rope_store, kd_adapter_topk_transform;"},
		// A misspelt definition has no declaration to give it C linkage:
		// mangled, beside a correct adapter, and alone.
		{good + `struct kd_topk_params; int kd_adapter_topk_transfrom(const kd_topk_params *, void *) { return 0; }`,
			"defines kd_adapter_topk_transfrom (C++ linkage; nearest contract: kd_adapter_topk_transform), which no contract has"},
		{`int kd_adapter_indexer_logit(const void *, void *) { return 0; }`,
			"defines kd_adapter_indexer_logit (C++ linkage; nearest contract: kd_adapter_indexer_logits), which no contract has"},
		{good + `struct other; int kd_adapter_norm_rope_store(const other *, void *) { return 0; }`,
			"kd_adapter_norm_rope_store with C++ linkage"},
	} {
		err := checkAdapterSymbols(build(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.src, err, tc.want)
		}
	}
}

func TestNearestName(t *testing.T) {
	names := []string{"kd_adapter_indexer_logits", "kd_adapter_norm_rope_store", "kd_adapter_topk_transform"}
	for in, want := range map[string]string{
		"kd_adapter_topk_transfrom": "kd_adapter_topk_transform", "kd_adapter_topk": "kd_adapter_topk_transform",
		"kd_adapter_normropestore": "kd_adapter_norm_rope_store", "kd_adapter_logits": "kd_adapter_indexer_logits",
	} {
		if got := nearestName(in, names); got != want {
			t.Errorf("nearestName(%q) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"transfrom", "transform", 1}, {"kitten", "sitting", 3}, {"ab", "ba", 1}} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
	if nearestName("x", nil) != "" {
		t.Error("nearestName of no names is not empty")
	}
}
