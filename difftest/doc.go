// Package difftest is kerneldiff's kernel-agnostic harness core
// (docs/architecture.md, docs/running.md, docs/interfaces.md,
// docs/mutants.md): the Case, Tensor, Kernel and Impl types, errors,
// params, poison, records, the case pipeline and the runner, chains,
// replay commands, captures and exit codes. It never imports a kernel
// package nor any package beside it; kernels and implementations register
// themselves (RegisterKernel, RegisterImpl, RegisterImplPrefix), and the
// run takes its diagnosis as a hook (Config.Diagnose).
//
// # Layers
//
// Beside the core, each importing it and never the reverse (a test,
// layers_test.go, enforces the order):
//
//	difftest/suite        suites: parsing, the matrix form, capture folders, shards, --suite (Resolve)
//	difftest/proc         the exec and serve protocols (registers exec: and serve:)
//	difftest/bench        timing and A/B; difftest/bench/stats, its statistics (stdlib only)
//	difftest/triage       diagnosis, shrinking, the selftest
//	difftest/report       JSON Lines, JUnit, merge and its checks
//
// Below it are the leaves rng (Philox), numeric and detmath. Rendering
// (the table, HTML, the bench table) and every subcommand live under
// cmd/difftest.
//
// # The case pipeline (CaseRun.RunCase)
//
// For each case: draw the inputs from (seed, case id) with key
// rng.CaseKey(seed, id); validate them; hash them (InputDigest); allocate
// every output with GuardBytes (4 KiB) of guard on both sides and fill
// output and guards with PoisonA (0xA5); run the implementation under the
// per-case time-out; check that no input changed (input-modified), that
// the guards are intact and that no byte outside Kernel.Written changed
// (guard); run again with PoisonB (0x5A) and repeat those checks; flag
// every written byte that kept PoisonA in the first run and PoisonB in the
// second (unwritten); compare the two runs with Kernel.Equivalent
// (nondeterministic); and compare the first run with the reference, which
// runs beside the implementation into PoisonA-filled outputs
// (Kernel.Check). The first failing step gives the case its class; the
// comparison with the reference still runs for its metrics whenever the
// first run produced outputs, and a failure it also finds is kept as a
// warning.
//
// A panicking implementation fails its case with class crash; a
// *RunError keeps its class; a run past the time-out is class timeout (an
// in-process implementation that ignores its context is abandoned, with
// buffers the harness never reuses). An implementation reporting itself
// Unavailable stops the run.
//
// # Exit codes (ExitCode)
//
// 0: every case passed. 1: at least one failed. 2: usage error, a bad
// suite file (malformed TOML, unknown key, kernel, family or parameter,
// duplicate case) or a bad capture file (wrong dtype or shape, contract
// violation). 125: nothing could be tested, or nothing the run says can be
// trusted: no driver, device or image (Unavailable before any case
// failed), a generator that draws inputs its own contract rejects, a
// reference or comparator that fails (*InternalError), a panic of the
// harness itself, an interrupted run, or no case run at all. An
// Unavailable implementation after a case has already failed exits 1: a
// real failure marks the commit bad for git bisect.
//
// # Reports
//
// Every case yields a Record. The CLI streams them as JSON Lines (a
// Header line first, one "case" line per case written as it ends, a
// Summary line last; report.ReadJSONL reads a file cut short by a crash), prints
// the human table and writes JUnit XML (report.WriteJUnit: one
// <testsuite> per seed, one <testcase> per case). Shards (--shard I/N,
// 0-based, split by the case's index in the seed-major expanded suite)
// are joined by report.Merge.
package difftest
