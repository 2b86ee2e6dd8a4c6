package bridge

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/boundtest"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// An #include whose target in the source folder is a FIFO (which would
// block the compiler on open for the whole build limit, with no output) is
// refused before the build, naming the target, what it is, and the file
// and line that include it; beside the including file and through -I. A
// FIFO no source includes is left alone.
func TestCudasrcIncludedFIFORefused(t *testing.T) {
	root := repoRoot(t)
	dir := t.TempDir()
	texttest.WriteFile(t, filepath.Join(dir, "adapter.cu"), "// the adapter\n#include <stdio.h>\n  #  include \"blocks.h\"\n", 0o644)
	if err := syscall.Mkfifo(filepath.Join(dir, "blocks.h"), 0o644); err != nil {
		t.Fatal(err)
	}
	boundtest.Returns(t, "parseCudasrc", 10*time.Second, func() {
		_, err := parseCudasrc("cudasrc-emu:"+dir, dir, true, root)
		if err == nil || !errors.Is(err, difftest.ErrUnknownImpl) {
			t.Fatalf("err %v, want a usage error", err)
		}
		texttest.Contains(t, "error", err.Error(), filepath.Join(dir, "blocks.h")+" is a FIFO, not a regular file", "adapter.cu:3 includes it", `#include "blocks.h"`)
	})

	// Through -I: the target in a subfolder.
	dir = t.TempDir()
	texttest.WriteFile(t, filepath.Join(dir, "adapter.cu"), "#include \"sub.h\"\n", 0o644)
	if err := os.Mkdir(filepath.Join(dir, "inc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "inc", "sub.h"), 0o644); err != nil {
		t.Fatal(err)
	}
	boundtest.Returns(t, "parseCudasrc -I", 10*time.Second, func() {
		_, err := parseCudasrc("cudasrc-emu:"+dir, dir+" -I "+filepath.Join(dir, "inc"), true, root)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "inc", "sub.h")+" is a FIFO") {
			t.Errorf("through -I: err %v", err)
		}
	})

	// A FIFO nothing includes.
	dir = t.TempDir()
	texttest.WriteFile(t, filepath.Join(dir, "adapter.cu"), "#include \"real.h\"\n", 0o644)
	texttest.WriteFile(t, filepath.Join(dir, "real.h"), "// fine\n", 0o644)
	if err := syscall.Mkfifo(filepath.Join(dir, "notes.fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := parseCudasrc("cudasrc-emu:"+dir, dir, true, root); err != nil {
		t.Errorf("a FIFO no source includes: %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for the progress goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A build still running after cudasrcProgressAfter says so on the log,
// with the adapter, the compiler, the time so far and the limit, and
// again every cudasrcProgressEvery; none once it stops.
func TestCudasrcBuildProgress(t *testing.T) {
	defer func(a, e time.Duration) { cudasrcProgressAfter, cudasrcProgressEvery = a, e }(cudasrcProgressAfter, cudasrcProgressEvery)
	cudasrcProgressAfter, cudasrcProgressEvery = 50*time.Millisecond, 100*time.Millisecond
	var log syncBuffer
	b := &cudasrcBuild{path: "/src/adapter.cu", sources: []string{"/src/adapter.cu"}, log: &log}
	stop := b.progress("nvcc", 7*time.Minute)
	time.Sleep(300 * time.Millisecond)
	stop()
	got := log.String()
	n := strings.Count(got, "\n")
	if n < 2 || n > 4 {
		t.Errorf("%d progress lines in 300 ms, want 2 to 4:\n%s", n, got)
	}
	texttest.Contains(t, "progress", got, "difftest: building the adapter /src/adapter.cu with nvcc (1 source file(s)): ", "so far, limit 7m0s (--build-timeout)")
	time.Sleep(200 * time.Millisecond)
	if log.String() != got {
		t.Errorf("progress after stop:\n%s", log.String())
	}
	// A build without a log prints nothing and stops at once.
	(&cudasrcBuild{}).progress("nvcc", time.Minute)()
}
