// Registration with the harness: the `cuda` and `emu` implementations, the
// `cudasrc:` and `cudasrc-emu:` prefixes (cudasrc.go), and
// the worker process's side of them (WorkerConfig, OpenWorkerPipes,
// ServeWorker), which cmd/difftest's hidden worker command calls.

package bridge

import (
	"errors"
	"flag"
	"os"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/difftest"
)

func init() {
	difftest.RegisterImpl("cuda", NewImpl)
	difftest.RegisterImpl("emu", NewEmuImpl)
	difftest.RegisterImplPrefixArg(CudasrcPrefix, "PATH", NewCudasrcImpl)
	difftest.RegisterImplPrefixArg(CudasrcEmuPrefix, "PATH", NewCudasrcEmuImpl)
}

// WorkerConfig is what a worker process serves: the flags Impl starts it
// with (`difftest cuda-worker --fatbin PATH --device N --driver LIB
// [--baseline PATH]`, or `--adapter LIB` instead of the fatbins: a
// bring-your-own adapter library, docs/byo.md).
type WorkerConfig struct {
	Fatbin   string // the fatbin to load
	Device   int    // CUDA device ordinal
	Driver   string // driver library to dlopen: a soname or a file path
	Baseline string // a second fatbin to load as build 1; "" for none
	Adapter  string // an adapter library to run the kernels with instead of the fatbin; "" for none
}

// Flags defines the worker's flags on fs, writing into c, with their
// defaults (DefaultFatbin, device 0, cuda.LibraryName, no baseline).
func (c *WorkerConfig) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Fatbin, "fatbin", DefaultFatbin, "fatbin to load")
	fs.IntVar(&c.Device, "device", 0, "CUDA device ordinal")
	fs.StringVar(&c.Driver, "driver", cuda.LibraryName, "driver library to dlopen (a soname or a file path)")
	fs.StringVar(&c.Baseline, "baseline", "", "a second fatbin to load as build 1 (difftest bench --baseline)")
	fs.StringVar(&c.Adapter, "adapter", "", "an adapter library to run the kernels with instead of the fatbin (--impl cudasrc)")
}

// ErrContextLost is what ServeWorker returns after it replied with a
// sticky error (the CUDA context is lost; the reply said so).
var ErrContextLost = errSticky // worker.go's name for it

// OpenWorkerPipes returns the protocol pipes a worker process serves
// (requests on fd 3, replies on fd 4). The error, a usage error, says the
// process was not started by the `cuda` implementation: its environment
// lacks the worker marker, or fd 3 is not open.
func OpenWorkerPipes() (req, rep *os.File, err error) {
	notUnder := errors.New("runs under `difftest run --impl cuda`, which passes the protocol pipes on fds 3 and 4")
	if os.Getenv(workerEnv) != "1" {
		return nil, nil, notUnder
	}
	req = os.NewFile(requestFD, "requests")
	rep = os.NewFile(replyFD, "replies")
	if req == nil || rep == nil {
		return nil, nil, notUnder
	}
	if _, err := req.Stat(); err != nil {
		return nil, nil, errors.New("no protocol pipe on fd 3 (it runs under `difftest run --impl cuda`)")
	}
	return req, rep, nil
}

// ServeWorker reads c's fatbins (bounded, MaxFatbinBytes), opens c.Driver
// and serves the worker protocol on req and rep until the requests end
// (nil); with c.Adapter, it serves over that adapter library instead of
// the fatbins (serveAdapter). Errors: an unreadable fatbin, an unusable
// device or adapter library, a broken pipe; ErrContextLost after a sticky
// error. Without a driver library the hello reply says the device is
// unavailable.
func ServeWorker(req, rep *os.File, c WorkerConfig) error {
	if c.Adapter != "" {
		drv, _ := cuda.OpenLibrary(c.Driver)
		return serveAdapter(req, rep, drv, c.Adapter, c.Device, packers())
	}
	image, err := ReadFatbin(c.Fatbin)
	if err != nil {
		return err
	}
	var baseImage []byte
	if c.Baseline != "" {
		if baseImage, err = ReadFatbin(c.Baseline); err != nil {
			return err
		}
	}
	drv, _ := cuda.OpenLibrary(c.Driver) // without a driver, drv reports ErrNoDriver from Init
	return serveBuilds(req, rep, drv, image, baseImage, c.Device, packers())
}
