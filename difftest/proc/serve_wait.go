// Waiting on a serve program without ever waiting forever: every wait for
// a message also ends when the program exits (even where a descendant
// that left its group keeps the reply pipe open), when its time-out
// passes, or when the run is stopped; the shared memory is sealed so that
// the program cannot make the harness fault.

package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"golang.org/x/sys/unix"
)

// serveExitReadGrace is how long a wait goes on reading the reply pipe
// after the program has exited: a reply written just before exiting is
// still taken, and a pipe a descendant keeps open ends the wait.
const serveExitReadGrace = 250 * time.Millisecond

// serveShmReserve is the size a memfd is sealed at: sparse (no memory is
// used until a page is touched), so that the harness grows its mapping,
// never the file, for every case up to this size.
const serveShmReserve = 1 << 40

// Why await returned.
const (
	awaitMessage   = iota // a message, or the end of the stream (ok false)
	awaitTimeout          // timeout fired
	awaitCancelled        // ctx ended
)

// await waits for the program's next message. ok is false when the
// stream ended: the reply pipe closed, or the program exited and nothing
// more came within serveExitReadGrace. timeout may be nil (no time-out).
func (p *serveProc) await(ctx context.Context, timeout <-chan time.Time) (m serveMsg, ok bool, why int) {
	select {
	case m, ok = <-p.msgs:
		return m, ok, awaitMessage
	case <-timeout:
		return m, false, awaitTimeout
	case <-ctx.Done():
		return m, false, awaitCancelled
	case <-p.done:
	}
	grace := time.NewTimer(serveExitReadGrace)
	defer grace.Stop()
	select {
	case m, ok = <-p.msgs:
		return m, ok, awaitMessage
	case <-grace.C:
		return m, false, awaitMessage
	case <-ctx.Done():
		return m, false, awaitCancelled
	}
}

// writeRequest writes req on the request pipe. The write gives up (an
// error) when the program does not take it within timeout (0: no
// time-out), when the program has exited, or when ctx ends: a program
// that never reads its requests cannot block the harness on a full pipe.
func (p *serveProc) writeRequest(ctx context.Context, req ServeRequest, timeout time.Duration) error {
	if timeout > 0 {
		_ = p.reqW.SetWriteDeadline(time.Now().Add(timeout))
	} else {
		_ = p.reqW.SetWriteDeadline(time.Time{})
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
		case <-p.done:
		case <-stop:
			return
		}
		_ = p.reqW.SetWriteDeadline(time.Now())
	}()
	return WriteServeMessage(p.reqW, req)
}

// newSealedShm creates the memfd of the serve protocol, sized
// serveShmReserve (or n, when larger or when the reserve is refused) and
// sealed with F_SEAL_SHRINK, F_SEAL_GROW and F_SEAL_SEAL: from then on no
// one, the program on fd 5 included, can change its size, so the
// harness's mapping can never lose its pages under it (SIGBUS).
func newSealedShm(n int64) (*os.File, int64, error) {
	fd, err := unix.MemfdCreate("kerneldiff-serve", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, 0, fmt.Errorf("serve: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "kerneldiff-serve-shm")
	size := max(n, serveShmReserve)
	if err := f.Truncate(size); err != nil {
		size = alignUp(n)
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, 0, fmt.Errorf("serve: sizing the shared memory to %d bytes: %w", size, err)
		}
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("serve: sealing the shared memory: %w", err)
	}
	return f, size, nil
}

// errFault is copyNoFault's error for a fault in the shared memory.
var errFault = errors.New("the shared memory faulted while it was read (was it truncated?)")

// copyNoFault copies src into dst, turning a memory fault while reading a
// mapping (which sealing prevents; this is the second line) into an error
// instead of a crash of the harness.
func copyNoFault(dst, src []byte) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			err = errFault
		}
	}()
	copy(dst, src)
	return nil
}
