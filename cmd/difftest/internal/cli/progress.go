package cli

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress shows one updating line on a terminal: done/total, failures,
// elapsed time. When stderr is not a terminal it prints nothing.
type progress struct {
	w  io.Writer
	on bool
}

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	if !ok {
		return &progress{}
	}
	st, err := f.Stat()
	return &progress{w: w, on: err == nil && st.Mode()&os.ModeCharDevice != 0}
}

func (p *progress) update(done, total, failed int, elapsed time.Duration) {
	if !p.on {
		return
	}
	fmt.Fprintf(p.w, "\r\033[K[%d/%d] %d failed, %s", done, total, failed, elapsed.Round(100*time.Millisecond))
}

func (p *progress) done() {
	if p.on {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
