package cuda

import (
	"fmt"
	"os"
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest/filekind"
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
	return fmt.Errorf("driver library %s is %s, not a shared library file", path, filekind.Of(st.Mode()))
}
