package proc_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/proc"
)

// The serve memfd is sealed: nobody (the program on fd 5 included) can
// shrink or grow it, or add or remove seals.
func TestServeShmSealed(t *testing.T) {
	f, size, err := proc.NewSealedShm(8192)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if size < 8192 {
		t.Fatalf("size %d < 8192", size)
	}
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL
	if seals&want != want {
		t.Errorf("seals %#x, want %#x set", seals, want)
	}
	for _, n := range []int64{0, size - 1, size + 1} {
		if err := f.Truncate(n); !errors.Is(err, syscall.EPERM) {
			t.Errorf("ftruncate to %d: %v, want EPERM", n, err)
		}
	}
	if st, _ := f.Stat(); st.Size() != size {
		t.Errorf("size now %d, want %d", st.Size(), size)
	}
}

// A program that shrinks (or grows) the shared memory before replying
// used to kill difftest with SIGBUS while it copied the outputs out: now
// its ftruncate fails, and every case passes.
func TestServeShrinkCannotFault(t *testing.T) {
	bin := serveBuild(t)
	items := serveItems(t, `^topk_transform/(lengths-k512|straddle-k512|masked-k512)$`)
	for _, mode := range []string{"shrink", "grow"} {
		t.Run(mode, func(t *testing.T) {
			impl := serveStart(t, bin, time.Minute, "-mode "+mode)
			recs, sum, err := serveRun(t, impl, items, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Passed != len(items) {
				for _, r := range recs {
					t.Logf("%s: %s %s: %s", r.Case, r.Verdict, r.Class, r.Message)
				}
				t.Fatalf("passed %d of %d", sum.Passed, len(items))
			}
		})
	}
}

// A program that dies during a request while a setsid child keeps its
// reply pipe open fails that case as a crash at once, even with no
// time-out (it used to hang forever under --timeout 0); the child is
// killed.
func TestServeDeathWithPipeHeldOpen(t *testing.T) {
	bin := serveBuild(t)
	pidfile := filepath.Join(t.TempDir(), "child.pid")
	const bad = "topk_transform/lengths-k512"
	impl := serveStart(t, bin, 0, "-mode die-setsid -match "+difftest.ShellQuote("^"+bad+"$")+" -pidfile "+difftest.ShellQuote(pidfile))
	items := serveItems(t, `^topk_transform/(lengths-k512|straddle-k512)$`)
	t0 := time.Now()
	recs, sum, err := serveRun(t, impl, items, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
	r := recs[bad]
	if r == nil || r.Class != difftest.Crash || !strings.Contains(r.Message, "died during the request: exit status 3") {
		t.Fatalf("%s: %+v, want a crash naming exit status 3", bad, r)
	}
	if sum.Failed != 1 || sum.Passed != len(items)-1 {
		t.Errorf("passed %d, failed %d of %d", sum.Passed, sum.Failed, len(items))
	}
	waitGone(t, pidfile)
}

// The same before the hello: unavailable at once, not after the 60 s
// hello time-out.
func TestServeNoHelloPipeHeldOpen(t *testing.T) {
	bin := serveBuild(t)
	pidfile := filepath.Join(t.TempDir(), "child.pid")
	t0 := time.Now()
	_, err := proc.NewServeImpl(difftest.ShellQuote(bin)+" -mode no-hello-setsid -pidfile "+difftest.ShellQuote(pidfile), 0)
	var re *difftest.RunError
	if !errors.As(err, &re) || re.Class != difftest.Unavailable || !strings.Contains(re.Msg, "ended before its hello: exit status 3") {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(t0); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
	waitGone(t, pidfile)
}

// SIGINT (the context) ends the wait for the hello at once, not after the
// hello time-out.
func TestServeHelloInterrupted(t *testing.T) {
	bin := serveBuild(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	t0 := time.Now()
	_, err := proc.NewServeImplHelloContext(ctx, difftest.ShellQuote(bin)+" -mode no-hello", 0, time.Minute)
	var re *difftest.RunError
	if !errors.As(err, &re) || re.Class != difftest.Unavailable || !strings.Contains(re.Msg, "interrupted while waiting for the hello") {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

// waitGone waits for the process whose pid is in pidfile to be gone.
func waitGone(t *testing.T, pidfile string) {
	t.Helper()
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(b))
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("setsid child %d still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
