package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/boundtest"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// Every flag of the study that cannot work is a usage error (2) before
// any case runs: nothing on stdout, and the message names the flag.
func TestStudyRefusesUpFront(t *testing.T) {
	dir := t.TempDir()
	fifo := boundtest.FIFO(t, filepath.Join(dir, "fifo"))
	fatbin := texttest.WriteFile(t, filepath.Join(dir, "k.fatbin"), "fatbin", 0o600)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--svg", dir}, "--svg " + dir + ": is a folder, not a file"},
		{[]string{"--json", dir}, "--json " + dir + ": is a folder, not a file"},
		{[]string{"--svg", fifo}, "is a FIFO, not a file"},
		{[]string{"--json", "/dev/null"}, "is a character device, not a file"},
		{[]string{"--svg", filepath.Join(dir, "no", "such", "x.svg")}, "does not exist"},
		{[]string{"--fatbin", fatbin, "--json", fatbin}, "is the input file of --fatbin"},
		{[]string{"--json", filepath.Join(dir, "a"), "--svg", filepath.Join(dir, "a")}, "name the same file"},
		{[]string{"--K", "-1"}, "--K -1: must be in [1, 16384]"},
		{[]string{"--K", "0"}, "--K 0: must be in [1, 16384]"},
		{[]string{"--K", "9223372036854775807"}, "--K 9223372036854775807: must be in [1, 16384]"},
		{[]string{"--H", "0"}, "--H 0: must be in [1, 64]"},
		{[]string{"--P", "3"}, "--P 3: must be a power of two"},
		{[]string{"--device", "-1"}, "--device -1: must be ≥ 0"},
		{[]string{"--timeout", "-1s"}, "--timeout -1s: must be ≥ 0"},
		{[]string{"--margin", "NaN"}, `param "margin"`},
		{[]string{"--margin", "1e308"}, `param "margin"`},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"needle", "--lengths", "700"}, tt.args...)
		code := runStudy(context.Background(), args, &out, &errb)
		if code != difftest.ExitUsage || out.Len() != 0 || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2, no output, %q", tt.args, code, out.String(), errb.String(), tt.want)
		}
	}
}
