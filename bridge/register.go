// Registration with the harness: the `cuda` and `emu` implementations.
// The commands `difftest info`, `gpu-selftest` and the hidden worker are
// Info, GPUSelftest and Worker, which cmd/difftest registers.

package bridge

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/difftest"
)

func init() {
	difftest.RegisterImpl("cuda", NewImpl)
	difftest.RegisterImpl("emu", NewEmuImpl)
}

// Worker is `difftest cuda-worker --fatbin PATH --device N --driver LIB`, started by
// Impl with the protocol pipes on fds 3 and 4. Exit 0 at the end of the
// requests (and for --help), 1 after a lost context or an unusable device,
// 2 on bad usage.
func Worker(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("difftest "+WorkerCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fatbin := fs.String("fatbin", DefaultFatbin, "fatbin to load")
	device := fs.Int("device", 0, "CUDA device ordinal")
	driver := fs.String("driver", cuda.LibraryName, "driver library to dlopen (a soname or a file path)")
	baseline := fs.String("baseline", "", "a second fatbin to load as build 1 (difftest bench --baseline)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if os.Getenv(workerEnv) != "1" {
		fmt.Fprintln(stderr, "cuda-worker: runs under `difftest run --impl cuda`, which passes the protocol pipes on fds 3 and 4")
		return 2
	}
	req := os.NewFile(requestFD, "requests")
	rep := os.NewFile(replyFD, "replies")
	if req == nil || rep == nil {
		fmt.Fprintln(stderr, "cuda-worker: runs under `difftest run --impl cuda`, which passes the protocol pipes on fds 3 and 4")
		return 2
	}
	if _, err := req.Stat(); err != nil {
		fmt.Fprintln(stderr, "cuda-worker: no protocol pipe on fd 3 (it runs under `difftest run --impl cuda`)")
		return 2
	}
	image, err := readFatbin(*fatbin)
	if err != nil {
		fmt.Fprintln(stderr, "cuda-worker:", err)
		return 1
	}
	var baseImage []byte
	if *baseline != "" {
		if baseImage, err = readFatbin(*baseline); err != nil {
			fmt.Fprintln(stderr, "cuda-worker:", err)
			return 1
		}
	}
	drv, _ := cuda.OpenLibrary(*driver) // without a driver, drv reports ErrNoDriver from Init
	err = serveBuilds(req, rep, drv, image, baseImage, *device, packers())
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errSticky):
		return 1
	}
	fmt.Fprintln(stderr, "cuda-worker:", err)
	return 1
}
