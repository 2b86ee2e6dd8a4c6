// Include targets that would hang a bring-your-own build: a FIFO (or a
// device, a socket) named by an #include in the source folder blocks the
// compiler on open, for the whole build time limit, with no output.

package bridge

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/filekind"
)

// Bounds of the include check: the entries of the source folder it walks
// and the bytes of each file it reads for #include lines.
const (
	maxIncludeScanEntries = 20000
	maxIncludeScanBytes   = 4 << 20
)

// includeLine matches an #include directive and captures its name, quoted
// or in angle brackets.
var includeLine = regexp.MustCompile(`^\s*#\s*include\s*["<]([^">]+)[">]`)

// checkIncludes refuses, before the build, an #include in the source
// folder (the adapter's folder, or the folder of the adapter file) whose
// target inside that folder is not a regular file: a FIFO, a device or a
// socket, which the compiler would block on or fail to read. The target is
// looked for beside the including file, then in each -I and -isystem
// folder, as the compiler does. The error names the target, what it is,
// and the file and line that include it. The folder is walked only when it
// holds some non-regular file (at most maxIncludeScanEntries entries), and
// only files of at most maxIncludeScanBytes are read.
func (b *cudasrcBuild) checkIncludes() error {
	dir := b.path
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = filepath.Dir(b.path)
	}
	odd := map[string]fs.FileMode{}
	var texts []string
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if n++; n > maxIncludeScanEntries {
			return filepath.SkipAll
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir // .git and the like
			}
			return nil
		}
		st, err := os.Stat(p) // through a symlink
		if err != nil {
			return nil
		}
		switch {
		case st.Mode().IsRegular():
			if st.Size() <= maxIncludeScanBytes {
				texts = append(texts, p)
			}
		case !st.IsDir():
			odd[p] = st.Mode()
		}
		return nil
	})
	if len(odd) == 0 {
		return nil
	}
	var search []string
	for i := 0; i+1 < len(b.compile); i++ {
		if b.compile[i] == "-I" || b.compile[i] == "-isystem" {
			search = append(search, b.compile[i+1])
		}
	}
	for _, t := range texts {
		data, err := difftest.ReadFileLimit(t, maxIncludeScanBytes)
		if err != nil || !bytes.Contains(data, []byte("include")) {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64<<10), maxIncludeScanBytes)
		for line := 1; sc.Scan(); line++ {
			m := includeLine.FindSubmatch(sc.Bytes())
			if m == nil {
				continue
			}
			name := string(m[1])
			for _, base := range append([]string{filepath.Dir(t)}, search...) {
				target := filepath.Clean(filepath.Join(base, name))
				if filepath.IsAbs(name) {
					target = filepath.Clean(name)
				}
				if mode, bad := odd[target]; bad {
					rel, _ := filepath.Rel(dir, t)
					return fmt.Errorf("%s is %s, not a regular file, and %s:%d includes it (#include %q): the compiler would block on it; make it a regular file or remove the #include",
						target, filekind.Of(mode), rel, line, name)
				}
				if _, err := os.Stat(target); err == nil {
					break // the compiler takes the first it finds
				}
			}
		}
	}
	return nil
}
