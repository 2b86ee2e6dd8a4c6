// Package proc runs implementations that are other programs: the exec
// protocol (--impl exec:CMD, one process per run of a case) and the serve
// protocol (--impl serve:CMD, one long-lived process, tensors in shared
// memory). Importing it registers both prefixes with the core
// (difftest.RegisterImplPrefix), so difftest.NewImpl resolves them.
//
// # Exec wire format
//
// Per run, in a fresh temporary folder, the harness writes in.safetensors
// and runs
//
//	CMD... DIR/in.safetensors DIR/out.safetensors
//
// in.safetensors holds every input tensor under its contract name, and
// every InOut output (the paged cache) with its canary-filled content;
// its __metadata__ is {"kernel": NAME, "params": JSON, "case": ID}. The
// program writes out.safetensors with every output of the case under its
// contract name, with exactly the dtype and shape of the case's
// OutputSpec, and exits 0. A safetensors file is an 8-byte little-endian
// header length, a JSON header ({"NAME": {"dtype", "shape",
// "data_offsets": [begin, end]}, "__metadata__": {...}}) and the raw
// little-endian bytes. A non-zero exit is crash (with the stderr tail,
// ExecStderrTail bytes); a missing output is missing-output; a wrong
// dtype or shape, or a file that is not safetensors, is bad-output; a run
// past the time-out kills the process group (timeout). out.safetensors is
// bounded by the case's outputs before anything is allocated. Its
// __metadata__ may say who wrote it: "version" (the program's own version
// line, e.g. the Python package's "kerneldiff-py 0.3 (python 3.11.2,
// numpy 2.2.6, torch 2.9.1)") and "device" (where it ran), each at most
// ServeMaxText bytes (a longer one is ignored); the report's header shows
// the last ones stated as properties impl_version and device.
//
// # Serve wire format
//
// The harness starts CMD once (again after it dies or is killed) with
// KD_SERVE_PROTOCOL=1 in its environment and three descriptors: requests
// on fd 3, replies on fd 4, and the shared memory (a memfd) on fd 5. Each
// message, either way, is a 4-byte little-endian length N (1 ≤ N ≤
// ServeMaxMessage) followed by N bytes of one JSON object
// (WriteServeMessage, ReadServeMessage).
//
//   - The program's first message is a ServeHello: {"type": "hello",
//     "protocol": 1, "kernels": [...], "device": "...", "version": "..."}
//     (device and version ≤ ServeMaxText bytes), within ServeHelloTimeout.
//     The report's header shows device and version as the properties
//     device and impl_version: the version is the program's own line (the
//     Python package sends its own, python's, numpy's and, once imported,
//     torch's and CUDA's versions), which stands where a GPU run shows its
//     driver and fatbin.
//   - Each run of a case is a ServeRequest: {"type": "run", "seq", "kernel",
//     "case", "params", "shm_size", "inputs": [ServeTensor...], "outputs":
//     [ServeTensor...]}. A ServeTensor names a tensor's dtype (a
//     safetensors name), shape, offset and nbytes in the shared memory
//     (offsets aligned to ServeAlign); an output also has "guard": its
//     guarded buffer [offset−guard, offset+nbytes+guard) arrives filled
//     with the run's poison, and the program writes only the middle.
//   - The program answers with one ServeReply: {"type": "result", "seq"
//     (the request's), "status": "ok"|"error", "message",
//     "kernel_time_ns", "device"}.
//
// The harness then checks the inputs' bytes (input-modified), the guards,
// and the outputs as for any implementation. Nothing the program sends is
// trusted for a size; a malformed or oversized message is bad-output, a
// death during a request is crash, no reply within the time-out kills the
// process group (timeout), and a kernel the hello does not name is
// unavailable for its cases.
package proc

import (
	"context"

	"github.com/kerneldiff/kerneldiff/difftest"
)

func init() {
	difftest.RegisterImplPrefix("exec:", func(cmd string, opts difftest.ImplOptions) (difftest.Impl, error) {
		return OpenExecImpl(cmd, opts.Timeout)
	})
	difftest.RegisterImplPrefix("serve:", func(cmd string, opts difftest.ImplOptions) (difftest.Impl, error) {
		ctx := opts.Context
		if ctx == nil {
			ctx = context.Background()
		}
		return NewServeImplContext(ctx, cmd, opts.Timeout)
	})
}
