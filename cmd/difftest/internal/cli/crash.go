package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// crashDir is where reportCrash writes the stack of a recovered panic
// ("" = os.TempDir()); tests point it elsewhere.
var crashDir = ""

// reportCrash handles a panic recovered at the top of the command line:
// the panic value and the stack go to a new file (difftest-crash-*.txt in
// the temporary folder), and stderr gets one line naming the file. It
// returns difftest.ExitInternal. When the file cannot be written, the
// stack goes to stderr after that line instead.
func reportCrash(stderr io.Writer, p any, stack []byte) int {
	dir := crashDir
	if dir == "" {
		dir = os.TempDir()
	}
	msg := difftest.SafeLine(fmt.Sprint(p))
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	f, err := os.CreateTemp(dir, "difftest-crash-*.txt")
	if err == nil {
		_, err = fmt.Fprintf(f, "difftest internal error at %s\nargs: %q\npanic: %v\n\n%s", time.Now().UTC().Format(time.RFC3339), os.Args, p, stack)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "difftest: internal error (a bug in difftest, not in the input): panic: %s (exit %d; the stack could not be saved: %v)\n%s", msg, difftest.ExitInternal, err, stack)
		return difftest.ExitInternal
	}
	name, _ := filepath.Abs(f.Name())
	fmt.Fprintf(stderr, "difftest: internal error (a bug in difftest, not in the input): panic: %s; stack in %s (exit %d)\n", msg, name, difftest.ExitInternal)
	return difftest.ExitInternal
}
