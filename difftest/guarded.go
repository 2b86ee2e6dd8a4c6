// The guarded side of every file the tool writes (docs/interfaces.md:
// every file the tool opens is checked by type and bound): an output path
// is checked before any work is done, so that a mistake in a flag is a
// usage error at once, never a finished run that cannot be saved, a
// replaced FIFO or device node, or an input file overwritten by its own
// report.

package difftest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kerneldiff/kerneldiff/difftest/filekind"
)

// CheckOutputPath reports why path, named by flag (as "--json"), cannot
// be written as a regular output file: an existing path that is not a
// regular file (a folder, a FIFO, a device such as /dev/null, a socket),
// or a folder that does not exist. "" (flag not given) is fine. Nothing is
// created.
func CheckOutputPath(flag, path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("%s %s: is %s, not a file", flag, path, filekind.Of(st.Mode()))
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%s %s: folder %s does not exist", flag, path, dir)
	}
	return nil
}

// SamePath reports whether a and b name one file: the same absolute path,
// or (both existing) the same file after links.
func SamePath(a, b string) bool {
	if aa, err := filepath.Abs(a); err == nil {
		if bb, err := filepath.Abs(b); err == nil && aa == bb {
			return true
		}
	}
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// CheckNotInput reports an output path out (named by outFlag) that is one
// of the run's inputs, given as pairs (flag, path): the same file, or,
// for an input that is a folder of capture files, a .safetensors file in
// it. Writing a report over its own suite, capture or fatbin destroys the
// input; it is refused before anything runs. Empty paths, and inputs that
// do not exist (an embedded suite's name), are skipped.
func CheckNotInput(outFlag, out string, inFlagsAndPaths ...string) error {
	if out == "" {
		return nil
	}
	for k := 0; k+1 < len(inFlagsAndPaths); k += 2 {
		inFlag, in := inFlagsAndPaths[k], inFlagsAndPaths[k+1]
		if in == "" {
			continue
		}
		if _, err := os.Stat(in); err != nil {
			continue
		}
		if SamePath(out, in) {
			return fmt.Errorf("%s %s: is the input file of %s: give the output its own file", outFlag, out, inFlag)
		}
		if st, err := os.Stat(in); err == nil && st.IsDir() && strings.HasSuffix(out, ".safetensors") && SamePath(filepath.Dir(out), in) {
			return fmt.Errorf("%s %s: is a capture file in the folder of %s: give the output its own file", outFlag, out, inFlag)
		}
	}
	return nil
}

// CreateStream opens path for writing a report that is streamed as the
// run goes (--json): a regular file is created or truncated; a FIFO (a
// named pipe, or a pipe such as bash's >(…) or /dev/stdout piped) is
// written to as it is, opened without blocking (ErrNoReader when nobody
// has it open for reading), so that a stalled reader can be given up on
// (the file is pollable: SetWriteDeadline ends a blocked write). A
// folder, a device (/dev/null included) or a socket is refused by its
// type, and never opened.
func CreateStream(flag, path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err == nil && st.Mode()&os.ModeNamedPipe != 0 {
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if errors.Is(err, syscall.ENXIO) {
			return nil, fmt.Errorf("%s %s: %w", flag, path, ErrNoReader)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		return f, nil
	}
	if err := CheckOutputPath(flag, path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NONBLOCK, 0o666)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s %s: is %s, not a file", flag, path, filekind.Of(st.Mode()))
		}
		return nil, err
	}
	return f, nil
}

// ErrNoReader is wrapped by CreateStream's error for a FIFO that nobody
// has open for reading (writing to it would block until someone does).
var ErrNoReader = errors.New("a FIFO with no reader")

// MaxReportFile bounds a JSON Lines report ReadJSONLFile reads (merge's
// shards): about a million case lines, far beyond a nightly's shard; a
// larger file is refused from its size before anything is read, so that
// what is parsed from it is bounded too.
const MaxReportFile = 2 << 30
