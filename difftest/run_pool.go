// Every GPU of a host (docs/nightly.md): one worker per device, the cases
// spread across them as each device frees up, one report.
package difftest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"
)

// Pool is an optional interface of an Impl that stands for several
// devices (`--device all` or a list): Members returns one Impl per device,
// each with its own worker, that RunPool runs concurrently. The Pool's own
// Run runs on the first member.
type Pool interface {
	Members() []PoolMember
}

// PoolMember is one device of a Pool.
type PoolMember struct {
	Impl   Impl
	Device string // its ordinal, as records carry it (Record.Device)
}

// DeviceLost is returned by RunPool when every device of the pool was
// lost before the run ended: the cases left were not run.
var DeviceLost = errors.New("every device of the run was lost")

// RunPool runs cfg.Source (or cfg.Items) on the members, one goroutine per member, each
// taking the next item not yet taken when it is free: a slow device does
// not hold the others. Each record carries its member's Device. Records
// reach cfg.OnRecord (and cfg.Progress) one at a time and in the items'
// order, as a sequential Run hands them over: a case that ends before an
// earlier one waits for it (so a report cut short still holds a prefix of
// the run, which difftest merge relies on). When the run stops early, the
// records waiting behind a case that did not end are dropped, as Run
// drops the case that was running; the summary counts exactly the
// records handed over.
//
// A member whose implementation reports its device lost (a *RunError with
// Lost set: its worker cannot be started again) is retired: the case it
// was running goes back to the queue for the others, onLost (when not
// nil) is told, and the run goes on. When every member is lost, RunPool
// stops with an error wrapping DeviceLost and the *RunError. Otherwise it
// stops as Run does (FailFast, a *SuiteError, an *InternalError, an
// Unavailable implementation, a cancelled ctx), the other members
// finishing the case they run, whose records are kept.
func RunPool(ctx context.Context, cfg Config, members []PoolMember, onLost func(device string, err error)) (Summary, error) {
	start := time.Now()
	src, sum, err := cfg.begin()
	if err != nil {
		return sum, err
	}
	if len(members) == 0 {
		return sum, errors.New("a pool without devices")
	}
	total := src.Len()
	pull, stopPull := iter.Pull(src.All()) // items are made as they are taken
	defer stopPull()
	taken := map[int]Item{} // taken and not yet ended: what a lost device gives back
	var (
		mu      sync.Mutex
		next    int   // the position in the source of the next item not yet taken
		retry   []int // positions a lost device gave back
		stopErr error // why the run stops early, first cause
		stopped bool
		done    int
		alive   = len(members)
		pending = map[int]*Record{} // ended, waiting for an earlier position
		out     int                 // the position whose record goes out next
	)
	take := func() (int, Item, bool) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return 0, Item{}, false
		}
		if n := len(retry); n > 0 {
			k := retry[n-1]
			retry = retry[:n-1]
			return k, taken[k], true
		}
		it, ok := pull()
		if !ok {
			return 0, Item{}, false
		}
		taken[next] = it
		next++
		return next - 1, it, true
	}
	stop := func(err error, why string) {
		if !stopped {
			stopped, stopErr = true, err
			sum.Aborted = why
		}
	}
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Add(1)
		go func(m PoolMember) {
			defer wg.Done()
			cr := &CaseRun{Impl: lostAsUnavailable{m.Impl}, Timeout: cfg.Timeout}
			mcfg := cfg
			mcfg.Replay = nil
			if cfg.Replay != nil {
				mcfg.Replay = func(r *Record) string { r.Device = m.Device; return cfg.Replay(r) }
			}
			for {
				if ctx.Err() != nil {
					return
				}
				k, it, ok := take()
				if !ok {
					return
				}
				rec, err := runItem(ctx, cr, mcfg, it)
				if err != nil && ctx.Err() != nil {
					mu.Lock()
					stop(context.Cause(ctx), context.Cause(ctx).Error())
					mu.Unlock()
					return
				}
				var le *RunError
				if errors.As(err, &le) && le.Lost {
					mu.Lock()
					retry = append(retry, k)
					alive--
					if alive == 0 {
						stop(fmt.Errorf("%w: %w", DeviceLost, le), "every device lost: "+le.Msg)
					}
					mu.Unlock()
					if onLost != nil {
						onLost(m.Device, le)
					}
					return
				}
				mu.Lock()
				if err != nil {
					stop(err, err.Error())
					mu.Unlock()
					return
				}
				rec.Device = m.Device
				delete(taken, k)
				pending[k] = rec
				for !stopped && pending[out] != nil {
					r := pending[out]
					delete(pending, out)
					out++
					sum.Add(r)
					done++
					if cfg.OnRecord != nil {
						if err := cfg.OnRecord(r); err != nil {
							stop(err, err.Error())
						}
					}
					if cfg.Progress != nil {
						cfg.Progress(done, total, sum.Failed, time.Since(start))
					}
					if cfg.FailFast && r.Failed() {
						stop(nil, "--failfast after "+r.Case)
					}
				}
				mu.Unlock()
			}
		}(m)
	}
	wg.Wait()
	sum.Elapsed = time.Since(start)
	if stopErr == nil && ctx.Err() != nil {
		stopErr = context.Cause(ctx)
		sum.Aborted = stopErr.Error()
	}
	return sum, stopErr
}

// lostAsUnavailable runs a member: a *RunError with Lost set (a crash of
// a worker that then could not be started again) becomes class
// Unavailable, which RunCase returns as an error instead of failing the
// case, so that RunPool gives the case to another device.
type lostAsUnavailable struct{ Impl }

func (l lostAsUnavailable) Run(ctx context.Context, k Kernel, c *Case, outs []*Buffer) (RunInfo, error) {
	info, err := l.Impl.Run(ctx, k, c, outs)
	var re *RunError
	if errors.As(err, &re) && re.Lost {
		return info, &RunError{Class: Unavailable, Msg: re.Msg, Lost: true}
	}
	return info, err
}
