// Bounded reads of the files a user or a child process names (docs/interfaces.md: every read of a file or of a child's output is bounded before it is
// allocated). A special file (a FIFO, a device, a socket) is refused by its
// type, never opened in a way that could block and never read.

package difftest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/kerneldiff/kerneldiff/difftest/filekind"
)

// ErrNotRegular is wrapped by the errors of OpenRegular and ReadFileLimit
// for a path that names no regular file (after symbolic links): a folder,
// a FIFO, a character or block device, a socket.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error of ReadFileLimit for a file larger
// than its limit.
var ErrTooLarge = errors.New("file too large")

// OpenRegular opens path for reading when it names a regular file,
// following symbolic links, and returns the open file and its size. Any
// other kind of file is refused by its type: path is first checked with
// os.Stat and is not opened at all unless it is a regular file; it is then
// opened with O_NONBLOCK, so that a FIFO put in its place between the
// check and the open cannot block, and the open file is checked again
// (fstat). The error wraps ErrNotRegular (with the kind: "a FIFO", "a
// character device", …) or the *fs.PathError of the failed call.
func OpenRegular(path string) (*os.File, int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, notRegular(st.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, notRegular(st.Mode())
	}
	return f, st.Size(), nil
}

// ReadFileLimit reads the regular file at path (OpenRegular) whole, when
// it holds at most limit bytes. A larger file is refused from its size
// before anything is read, with an error wrapping ErrTooLarge that states
// the size and the limit; a file that grows while it is read is refused
// the same way, having read at most limit+1 bytes.
func ReadFileLimit(path string, limit int64) ([]byte, error) {
	f, size, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > limit {
		return nil, fmt.Errorf("%w: %d bytes, above the limit of %d bytes", ErrTooLarge, size, limit)
	}
	buf, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(buf)) > limit {
		return nil, fmt.Errorf("%w: grew past the limit of %d bytes while it was read", ErrTooLarge, limit)
	}
	return buf, nil
}

// notRegular names the kind of a file that is not regular.
func notRegular(m fs.FileMode) error {
	return fmt.Errorf("%w (%s)", ErrNotRegular, filekind.Of(m))
}
