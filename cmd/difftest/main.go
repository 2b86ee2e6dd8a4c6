// Command difftest runs compiled CUDA kernels (or any other implementation)
// against kerneldiff's Go references on byte-identical seeded inputs and
// reports every case with a verdict, a failure class and a replay command.
//
//	difftest run [--suite default|quick|FILE] [--impl cuda|reference|mutant:NAME|exec:CMD] [flags]
//	difftest list [suites|cases|impls|mutants]
//	difftest replay [--impl IMPL] FILE.safetensors
//	difftest selftest [--suite default] [--seed N]
//	difftest merge -o OUT.jsonl [--junit FILE] SHARD.jsonl...
//	difftest info
//
// Exit codes (DESIGN.md §7, for git bisect run): 0 all passed, 1 a case
// failed, 2 usage or input file error, 125 nothing could be tested.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/cli"

	// The cuda implementation, `difftest info` and the GPU worker.
	_ "github.com/kerneldiff/kerneldiff/bridge"
	// Kernel contracts register themselves.
	_ "github.com/kerneldiff/kerneldiff/kernels/normrope"
	_ "github.com/kerneldiff/kerneldiff/kernels/topk"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
