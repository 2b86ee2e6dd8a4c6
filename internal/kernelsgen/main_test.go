package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// TestGeneratedFilesFresh fails when a generated list of kernels differs
// from what the kernel folders give: a kernel folder was added, removed or
// its header's entry list changed without `make generate`.
func TestGeneratedFilesFresh(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	k, err := Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	if s := Stale(root, k.Files()); len(s) > 0 {
		t.Fatalf("stale generated files %v: run make generate (go run ./internal/kernelsgen)", s)
	}
}

// write creates root/rel with content s.
func write(t *testing.T, root, rel, s string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	texttest.WriteFile(t, p, s, 0o644)
}

// TestScanHandWorked scans a made-up tree: a CUDA kernel with two entry
// points over continued lines, a Go-only kernel, a folder that registers
// nothing (the emulator) and a test file that registers (ignored).
func TestScanHandWorked(t *testing.T) {
	root := t.TempDir()
	write(t, root, "kernels/alpha/kernel.go", "package alpha\nfunc init() { difftest.RegisterKernel(K{}) }\n")
	write(t, root, "kernels/alpha/alpha.cu", "#include \"alpha.h\"\n")
	write(t, root, "kernels/alpha/alpha.h", "/* x */\n#define KD_ALPHA_ENTRIES(X) \\\n    X(alpha_op, kd_alpha_64, kd_alpha_params, KD_ALPHA_THREADS) \\\n    X(alpha_op, kd_alpha_128, kd_alpha_params, (32 * 4))\n#define OTHER 1\n")
	write(t, root, "kernels/beta/kernel.go", "package beta\nfunc init() { difftest.RegisterKernel(K{}) }\n")
	write(t, root, "kernels/emu/libcuda_emu.cu", "int main() {}\n")
	write(t, root, "kernels/gamma/x_test.go", "package gamma\nfunc init() { difftest.RegisterKernel(K{}) }\n")
	k, err := Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"alpha", "beta"}; !slices.Equal(k.GoDirs, want) {
		t.Errorf("GoDirs %v, want %v", k.GoDirs, want)
	}
	if want := []string{"alpha"}; !slices.Equal(k.CUDADirs, want) {
		t.Errorf("CUDADirs %v, want %v", k.CUDADirs, want)
	}
	want := []Entry{
		{"alpha_op", "alpha", "kd_alpha_64", "kd_alpha_params", "KD_ALPHA_THREADS"},
		{"alpha_op", "alpha", "kd_alpha_128", "kd_alpha_params", "(32 * 4)"},
	}
	if !slices.Equal(k.Entries, want) {
		t.Errorf("Entries %+v, want %+v", k.Entries, want)
	}
	f := k.Files()
	for _, s := range []string{`_ "github.com/kerneldiff/kerneldiff/kernels/alpha"`, `_ "github.com/kerneldiff/kerneldiff/kernels/beta"`} {
		if !strings.Contains(string(f["kernels/all/all_gen.go"]), s) {
			t.Errorf("all_gen.go lacks %s", s)
		}
	}
	if !strings.Contains(string(f["kernels/kernels.cu"]), "#include \"alpha/alpha.cu\"\n\n#define KD_KERNEL_ENTRIES(X) \\\n    KD_ALPHA_ENTRIES(X)\n") {
		t.Errorf("kernels.cu:\n%s", f["kernels/kernels.cu"])
	}
	if !strings.HasSuffix(string(f["kernels/entries.txt"]), "alpha_op\talpha\tkd_alpha_128\tkd_alpha_params\t(32 * 4)\n") {
		t.Errorf("entries.txt:\n%s", f["kernels/entries.txt"])
	}
	// One adapter function for the contract's two entry points.
	h := string(f["kernels/kd_adapter.h"])
	texttest.Contains(t, "kd_adapter.h", h,
		"#include \"alpha/alpha.h\"\n",
		"#define KD_ADAPTER_KERNELS(X) \\\n    X(alpha_op, kd_alpha_params)\n",
		"KD_ADAPTER_API int kd_adapter_alpha_op(const kd_alpha_params *p, cudaStream_t stream);\n",
	)
	if n := strings.Count(h, "KD_ADAPTER_API int kd_adapter_"); n != 1 {
		t.Errorf("kd_adapter.h declares %d adapter functions, want 1", n)
	}
}

// TestScanErrors checks that a CUDA folder without its entry list, and an
// entry point declared twice, are errors naming the file and the rule.
func TestScanErrors(t *testing.T) {
	root := t.TempDir()
	write(t, root, "kernels/alpha/alpha.cu", "\n")
	write(t, root, "kernels/alpha/alpha.h", "#define KD_ALPHA_THREADS 64\n")
	if _, err := Scan(root); err == nil || !strings.Contains(err.Error(), "kernels/alpha/alpha.h: no #define KD_ALPHA_ENTRIES(X)") {
		t.Errorf("no entry list: err %v", err)
	}
	write(t, root, "kernels/alpha/alpha.h", "#define KD_ALPHA_ENTRIES(X) X(a, kd_same, p, 1)\n")
	write(t, root, "kernels/beta/beta.cu", "\n")
	write(t, root, "kernels/beta/beta.h", "#define KD_BETA_ENTRIES(X) X(b, kd_same, q, 1)\n")
	if _, err := Scan(root); err == nil || !strings.Contains(err.Error(), "entry point kd_same is declared by kernels/alpha/alpha.h and kernels/beta/beta.h") {
		t.Errorf("duplicate entry: err %v", err)
	}
	// One contract, two structs: no one adapter function could take both.
	write(t, root, "kernels/beta/beta.h", "#define KD_BETA_ENTRIES(X) X(a, kd_other, q, 1)\n")
	if _, err := Scan(root); err == nil || !strings.Contains(err.Error(), "contract a: entry kd_same takes p (kernels/alpha/alpha.h), entry kd_other takes q (kernels/beta/beta.h)") {
		t.Errorf("two structs for one contract: err %v", err)
	}
}
