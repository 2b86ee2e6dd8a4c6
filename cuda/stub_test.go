package cuda

import (
	_ "embed"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// stubSource is the stand-in driver, embedded so that the test binary
// built for a GPU machine (scripts/gpu-bundle) carries it.
//
//go:embed testdata/stubcuda.c
var stubSource []byte

// buildStub compiles stubSource into a shared library in dir with the C
// compiler cgo uses (CC, else gcc; skipped without one) and returns its
// path.
func buildStub(t *testing.T, dir, name string, defines ...string) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) to build the stub driver: %v", cc, err)
	}
	src := filepath.Join(dir, "stubcuda.c")
	if err := os.WriteFile(src, stubSource, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	args := append([]string{"-shared", "-fPIC", "-o", out}, defines...)
	args = append(args, src)
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, b)
	}
	return out
}

// Each OpenLibrary binds the path it is given, whatever was opened
// before: two stub drivers answer with their own versions and timer
// symbols side by side, and a missing library or one without the entry
// points still fails after a success. (The shim once kept the first
// library for the life of the process and returned it for any later
// path, so these failures went unseen once a real driver had been bound.)
func TestOpenLibraryBindsItsOwnPath(t *testing.T) {
	dir := t.TempDir()
	a := buildStub(t, dir, "libstub-a.so", "-DKD_STUB_VERSION=13000")
	b := buildStub(t, dir, "libstub-b.so", "-DKD_STUB_VERSION=12040", "-DKD_STUB_OLD_TIMER")
	drvA, err := OpenLibrary(a)
	if err != nil {
		t.Fatalf("OpenLibrary(%s): %v", a, err)
	}
	drvB, err := OpenLibrary(b)
	if err != nil {
		t.Fatalf("OpenLibrary(%s): %v", b, err)
	}
	_, errMissing := OpenLibrary(filepath.Join(dir, "libstub-missing.so"))
	tests := []struct {
		name    string
		drv     Driver
		version int
		elapsed string
	}{
		{"CUDA 13.0 stub, timer _v2", drvA, 13000, "cuEventElapsedTime_v2"},
		{"CUDA 12.4 stub, timer before 12.8", drvB, 12040, "cuEventElapsedTime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.drv.Init(); err != nil {
				t.Fatalf("Init: %v", err)
			}
			if v, err := tt.drv.Version(); err != nil || v != tt.version {
				t.Errorf("Version = %d, %v; want %d", v, err, tt.version)
			}
			if s := ElapsedSymbol(tt.drv); s != tt.elapsed {
				t.Errorf("ElapsedSymbol = %q, want %q", s, tt.elapsed)
			}
			_, err := tt.drv.DeviceCount()
			var ce *CUDAError
			if !errors.As(err, &ce) || ce.Code != ErrorNoDevice || ce.Call != "cuDeviceGetCount" {
				t.Errorf("DeviceCount: %v, want the stub's CUDA_ERROR_NO_DEVICE from cuDeviceGetCount", err)
			}
			_, err = tt.drv.EventElapsed(0, 0)
			if !errors.As(err, &ce) || ce.Call != tt.elapsed {
				t.Errorf("EventElapsed: %v, want an error of %s", err, tt.elapsed)
			}
		})
	}
	if !errors.Is(errMissing, ErrNoDriver) || errors.Is(errMissing, ErrMissingSymbol) {
		t.Errorf("a missing library after two successful opens: %v, want ErrNoDriver alone", errMissing)
	}
	if _, err := OpenLibrary("libc.so.6"); !errors.Is(err, ErrMissingSymbol) {
		t.Errorf("libc after two successful opens: %v, want ErrMissingSymbol", err)
	}
}
