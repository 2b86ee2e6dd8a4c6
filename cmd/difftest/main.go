// Command difftest runs compiled CUDA kernels (or any other implementation)
// against kerneldiff's Go references on byte-identical seeded inputs and
// reports every case with a verdict, a failure class and a replay command.
//
//	difftest run [--suite NAME|FILE] [--impl cuda|reference|mutant:NAME|exec:CMD] [--fatbin FILE] [flags]
//	difftest list [suites|cases|impls|mutants|families|contracts] [--suite NAME|FILE] [--json]
//	difftest replay [--impl IMPL] FILE.safetensors
//	difftest selftest [--suite NAME|FILE] [--seed N]
//	difftest merge -o OUT.jsonl [--junit FILE] SHARD.jsonl...
//	difftest bench [--suite bench] [--baseline FATBIN|IMPL] [--runs N] [--cold flush|rotate] [--json FILE] [--max-slowdown X]
//	difftest report RUN.jsonl [BENCH.json ...] [FIGURE.svg ...] -o report.html
//	difftest gpu-selftest [--suite NAME|FILE|DIR] [--fatbin FILE] [--reference] [flags]
//	difftest gpu-check [--device N] [--steps "info suite ..."] [--dist DIR]
//	difftest info [--fatbin FILE] [--device N]
//	difftest help
//
// `list families` prints each kernel's input families and the suite
// params they accept. `list contracts` prints each kernel's tensors,
// output shapes and params keys (--json: the form
// python/src/kerneldiff/contracts.json holds, docs/adding-a-kernel.md). `run --device all` (or a list) runs one GPU worker
// per device; `run --shard auto` takes its shard from a Slurm array, a
// Kubernetes indexed Job or KD_SHARD. --fatbin defaults to build/kernels.fatbin, relative
// to the working directory. Every command prints its flags with --help
// and exits 0. (cuda-worker, the GPU worker process of the cuda
// implementation, is internal.)
//
// Exit codes (docs/interfaces.md, for git bisect run): 0 all passed, 1 a case
// failed, 2 usage or input file error, 3 internal error (difftest itself
// crashed, a Go fatal error such as out of memory included; the stack is
// in a file named on stderr), 125 nothing could be
// tested, and
// 128 + N when a person stopped the run with signal N (SIGINT 130, SIGTERM
// 143, SIGHUP 129) after the finished cases were reported and flushed and
// the temporary files removed. A second SIGINT or SIGTERM exits at once,
// without the clean-up.
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/cli"
	"github.com/kerneldiff/kerneldiff/difftest"

	// The cuda and emu implementations (its commands: commands.go).
	_ "github.com/kerneldiff/kerneldiff/bridge"
	// Kernel contracts register themselves; kernels/all imports every
	// kernel folder (generated: docs/adding-a-kernel.md).
	_ "github.com/kerneldiff/kerneldiff/kernels/all"
)

func main() {
	// A crash Go cannot recover (out of memory) exits 3, not 2: the
	// command runs in a supervised child (cli.Supervise). Not where a test
	// binary calls main (the flags doc): the child would be the test
	// binary, running its tests.
	if !testing.Testing() {
		if code, ok := cli.Supervise(os.Args, os.Stderr); ok {
			os.Exit(code)
		}
	}
	ctx, again, stop := cli.NotifyInterrupt(context.Background())
	go func() {
		if s, ok := <-again; ok {
			sig, _ := s.(syscall.Signal)
			fmt.Fprintf(os.Stderr, "difftest: %s again: exiting without waiting for the clean-up\n", difftest.SignalName(sig))
			os.Exit(128 + int(sig))
		}
	}()
	code := cli.MainAs(ctx, os.Args[0], os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
