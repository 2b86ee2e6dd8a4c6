package bridge

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/boundtest"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// KD_LIBCUDA naming a FIFO: `run --impl cuda` used to hang in dlopen; it
// now refuses it at once (`info`: cmd/difftest's TestInfoDriverFIFO).
func TestDriverEnvFIFO(t *testing.T) {
	fifo := boundtest.FIFO(t, filepath.Join(t.TempDir(), "libcuda.so.1"))
	t.Setenv(DriverEnv, fifo)
	boundtest.Returns(t, "NewImpl", 20*time.Second, func() {
		_, err := NewImpl(difftest.ImplOptions{})
		var re *difftest.RunError
		if !errors.As(err, &re) || re.Class != difftest.Unavailable || !strings.Contains(re.Msg, "KD_LIBCUDA: driver library "+fifo+" is a FIFO") {
			t.Errorf("NewImpl: %v, want unavailable naming the FIFO", err)
		}
	})
}

// bench --baseline FATBIN reads its file bounded, never blocking: a
// device (/dev/zero), a FIFO and a sparse 6 GiB file are refused before
// anything is read or allocated.
func TestBaselineFatbinBounded(t *testing.T) {
	dir := t.TempDir()
	main := texttest.WriteFile(t, filepath.Join(dir, "main.fatbin"), "not a module", 0o600)
	fifo := boundtest.FIFO(t, filepath.Join(dir, "base.fifo"))
	sparse := filepath.Join(dir, "sparse.fatbin")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(6 << 30); err != nil {
		t.Skipf("no sparse file here: %v", err)
	}
	f.Close()
	for base, want := range map[string]string{
		"/dev/zero": "not a regular file (a character device)",
		fifo:        "not a regular file (a FIFO)",
		sparse:      "file too large: 6442450944 bytes, above the limit of 268435456 bytes",
	} {
		boundtest.Returns(t, "--baseline "+base, 20*time.Second, func() {
			_, err := NewImpl(difftest.ImplOptions{Fatbin: main, Baseline: base})
			var re *difftest.RunError
			if !errors.As(err, &re) || re.Class != difftest.Unavailable || !strings.Contains(re.Msg, "baseline fatbin: ") || !strings.Contains(re.Msg, want) {
				t.Errorf("--baseline %s: %v, want unavailable with %q", base, err, want)
			}
		})
	}
}
