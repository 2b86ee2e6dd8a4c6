// The subcommands over bridge (`difftest info`, `gpu-selftest` and the GPU
// worker process of the cuda implementation: info.go, gpuselftest.go,
// worker.go), added to the built-in ones.

package main

import (
	"github.com/kerneldiff/kerneldiff/bridge"
	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/cli"
)

func init() {
	cli.RegisterCommand(cli.Command{
		Name:    "info",
		Summary: "device, driver, fatbin images and build of this difftest",
		Usage:   "info [--fatbin FILE] [--device N]",
		Run:     runInfo,
	})
	cli.RegisterCommand(cli.Command{
		Name:    "gpu-selftest",
		Summary: "check that the suite catches every CUDA fault build (-DKD_FAULT_<NAME>)",
		Usage:   "gpu-selftest [--suite NAME|FILE|DIR] [--fatbin FILE] [--reference] [flags]",
		Run:     runGPUSelftest,
	})
	cli.RegisterCommand(cli.Command{
		Name:    bridge.WorkerCommand,
		Summary: "GPU worker process of the cuda implementation (internal)",
		Hidden:  true,
		Run:     runWorker,
	})
}
