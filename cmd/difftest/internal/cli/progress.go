package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// progress shows one updating line on a terminal: done/total, failures,
// elapsed time, redrawn after each case and every half second between
// (a long case does not freeze the clock). When stderr is not a
// terminal it prints nothing.
type progress struct {
	w     io.Writer
	start time.Time
	stop  chan struct{}
	wg    sync.WaitGroup

	mu                  sync.Mutex
	done, total, failed int
}

func newProgress(w io.Writer) *progress {
	p := &progress{start: time.Now()}
	f, ok := w.(*os.File)
	if !ok {
		return p
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return p
	}
	p.w, p.stop = w, make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.draw()
			}
		}
	}()
	return p
}

// update records the counts after a case (difftest.Config.Progress).
func (p *progress) update(done, total, failed int, _ time.Duration) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	p.done, p.total, p.failed = done, total, failed
	p.mu.Unlock()
	p.draw()
}

func (p *progress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.total == 0 {
		return
	}
	fmt.Fprintf(p.w, "\r\033[K[%d/%d] %d failed, %s", p.done, p.total, p.failed, time.Since(p.start).Round(100*time.Millisecond))
}

// finish stops the redraws and clears the line.
func (p *progress) finish() {
	if p.w == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	fmt.Fprint(p.w, "\r\033[K")
}
