package cuda

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/internal/boundtest"
)

// KD_LIBCUDA naming a FIFO used to hang dlopen forever: it is refused by
// its type, at once, as a missing driver.
func TestOpenLibraryRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := boundtest.FIFO(t, filepath.Join(dir, "libcuda.so.1"))
	for path, kind := range map[string]string{fifo: "a FIFO", "/dev/zero": "a character device", dir: "a folder"} {
		done := make(chan error, 1)
		go func() {
			d, err := OpenLibrary(path)
			if d == nil {
				err = errors.New("nil Driver")
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "is "+kind+", not a shared library file") {
				t.Errorf("%s: %v, want ErrNoDriver naming %s", path, err, kind)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: OpenLibrary still blocked after 10 s", path)
		}
	}
	if err := CheckLibraryPath("libcuda.so.1"); err != nil {
		t.Errorf("a bare soname: %v", err)
	}
	if err := CheckLibraryPath(filepath.Join(dir, "missing.so")); err != nil {
		t.Errorf("a missing path is left to dlopen: %v", err)
	}
}
