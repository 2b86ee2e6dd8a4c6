package cuda

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// CheckLibraryPath refuses a driver library path (KD_LIBCUDA) that names
// something dlopen must not open: a path with a slash that exists and is
// not a regular file after links (a FIFO, on which dlopen's open(2) would
// block forever; a device such as /dev/zero; a folder; a socket). A bare
// soname (libcuda.so.1) and a path that does not exist are left to
// dlopen, which reports them.
func CheckLibraryPath(path string) error {
	if !strings.ContainsRune(path, '/') {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().IsRegular() {
		return nil
	}
	kind := "not a regular file"
	switch m := st.Mode(); {
	case m.IsDir():
		kind = "a folder"
	case m&fs.ModeNamedPipe != 0:
		kind = "a FIFO"
	case m&fs.ModeCharDevice != 0:
		kind = "a character device"
	case m&fs.ModeDevice != 0:
		kind = "a block device"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	}
	return fmt.Errorf("driver library %s is %s, not a shared library file", path, kind)
}
