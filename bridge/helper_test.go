package bridge

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A worker whose adapter (or a library it loads) forks helpers that
// outlive it and hold its stdout and stderr: Close returns at once, not
// when the helpers exit, and kills both, the one in the worker's process
// group and the one that left it with setsid.
func TestWorkerHelpersDoNotOutliveClose(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KD_TEST_HELPER_DIR", dir)
	im, err := newImpl(5*time.Second, spawnTest("fake-forks-helper"), testPackers())
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, name := range []string{"group.pid", "setsid.pid"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	}
	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- im.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close has not returned after 20 s: it waits for the helpers that hold the worker's output")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	for i, pid := range pids {
		if helperAlive(pid) {
			t.Errorf("helper %d (pid %d, %s) still runs after Close", i, pid, []string{"in the worker's group", "setsid"}[i])
		}
	}
}

// helperAlive reports whether pid is a live process (not gone, not a
// zombie), waiting up to a second for a killed one to go.
func helperAlive(pid int) bool {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
		alive := !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
		if alive {
			if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
				if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
					alive = false
				}
			}
		}
		if !alive || time.Now().After(deadline) {
			return alive
		}
	}
}
