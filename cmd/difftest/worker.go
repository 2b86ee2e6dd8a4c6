// The hidden `difftest cuda-worker`: the worker process of the cuda
// implementation (bridge.ServeWorker), started by bridge.Impl.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/kerneldiff/kerneldiff/bridge"
	"github.com/kerneldiff/kerneldiff/difftest"
)

// runWorker is `difftest cuda-worker --fatbin PATH --device N --driver
// LIB`, started by bridge.Impl with the protocol pipes on fds 3 and 4.
// Exit 0 at the end of the requests (and for --help), 1 after a lost
// context or an unusable device, 2 on bad usage (not started by Impl).
func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("difftest "+bridge.WorkerCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c bridge.WorkerConfig
	c.Flags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return difftest.ExitPass
		}
		return difftest.ExitUsage
	}
	req, rep, err := bridge.OpenWorkerPipes()
	if err != nil {
		fmt.Fprintln(stderr, "cuda-worker:", err)
		return difftest.ExitUsage
	}
	err = bridge.ServeWorker(req, rep, c)
	switch {
	case err == nil:
		return difftest.ExitPass
	case errors.Is(err, bridge.ErrContextLost): // the reply said so
		return difftest.ExitFail
	}
	fmt.Fprintln(stderr, "cuda-worker:", err)
	return difftest.ExitFail
}
