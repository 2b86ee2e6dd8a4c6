// A suite that is a folder of capture files (`difftest run --suite DIR`):
// real inputs recorded from a serving stack (the Python package's capture
// and record) or saved failures, run as cases.

package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// LoadCaptureDir makes a suite of the capture files (*.safetensors) of
// dir, in name order, one case each: the case id is the capture's own
// (its "case" metadata, or KERNEL/FILE-NAME for a capture without one).
// Every file is read and checked against its kernel's contract now
// (ReadCapture), so a bad capture stops the run before its first case
// with a *CaptureError naming the file, tensor, index and rule; each is
// read again, one at a time, as its case runs. Files of other names and
// sub-folders are ignored; a special file named *.safetensors is an
// error. A folder with no capture, more than MaxSuiteCases of them, or
// two captures of one case id is a *SuiteError. The seed does not change
// a capture's inputs: under --repeat every seed runs the same bytes.
func LoadCaptureDir(dir string) (*difftest.Suite, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, &difftest.SuiteError{File: dir, Err: err}
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".safetensors") && !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	switch {
	case len(names) == 0:
		return nil, &difftest.SuiteError{File: dir, Err: fmt.Errorf("the folder holds no capture file (*.safetensors)")}
	case len(names) > MaxSuiteCases:
		return nil, &difftest.SuiteError{File: dir, Err: fmt.Errorf("the folder holds %d capture files, above the limit of %d cases (MaxSuiteCases)", len(names), MaxSuiteCases)}
	}
	s := &difftest.Suite{Name: dir}
	seen := map[string]string{}
	for _, n := range names {
		path := filepath.Join(dir, n)
		c, _, err := difftest.ReadCapture(path)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[c.ID]; dup {
			return nil, &difftest.SuiteError{File: dir, Case: c.ID, Err: fmt.Errorf("captures %s and %s are both case %s: rename one's \"case\" metadata", prev, n, c.ID)}
		}
		seen[c.ID] = n
		spec := difftest.CaseSpec{Kernel: c.Kernel, Family: c.Family, Name: strings.TrimPrefix(c.ID, c.Kernel+"/")}
		s.Cases = append(s.Cases, difftest.SuiteCase{Spec: spec, File: path, Capture: path})
	}
	return s, nil
}
