// Worker protocol: how the harness process and its GPU worker talk.
//
// The worker is the same binary started as `difftest cuda-worker --fatbin
// PATH --device N`. It reads requests on file descriptor 3 and writes
// replies on file descriptor 4 (pipes the parent passes as extra files);
// stdin is /dev/null, and stdout/stderr go to the parent, which keeps
// their tail for crash reports. Keeping the protocol off stdout means
// nothing the driver, a sanitizer or a library prints can corrupt it.
//
// Both pipes carry one encoding/gob stream each. The worker first sends a
// hello reply (Seq 0): the device it opened, or the reason it cannot run
// (Class "unavailable"). Then, per case, the parent sends one request and
// the worker answers with one reply of the same Seq (any other Seq is a
// protocol error: the parent kills the worker and fails the case as a
// crash). A reply with Sticky set means the CUDA context is lost (an
// illegal address, a launch failure, or any other error after which a
// probe of the context failed); the worker exits after sending it and the
// parent starts a new one for the next case. End of the request stream
// makes the worker exit 0.

package bridge

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// WorkerCommand is the hidden subcommand that runs the worker.
const WorkerCommand = "cuda-worker"

// workerEnv is set to "1" in the worker's environment by its parent; the
// worker command refuses to run without it, so that started by hand it
// never writes to whatever fds 3 and 4 happen to be.
const workerEnv = "KD_CUDA_WORKER"

// Protocol file descriptors in the worker.
const (
	requestFD = 3
	replyFD   = 4
)

// wireTensor is an input tensor on the wire.
type wireTensor struct {
	Name  string
	DType difftest.DType
	Shape []int
	Data  []byte
}

// wireOutput is an output buffer on the wire: the whole guarded
// allocation (Full) and the guard width; the kernel sees Full[Guard:].
type wireOutput struct {
	Name  string
	DType difftest.DType
	Shape []int
	Full  []byte
	Guard int
}

// request asks the worker to run one case.
type request struct {
	Seq     uint64
	Kernel  string
	CaseID  string
	Params  json.RawMessage
	Inputs  []wireTensor
	Outputs []wireOutput
	// Module selects the build: 0 the fatbin, 1 the baseline fatbin
	// (--baseline; bench.go).
	Module int
	// Bench, when set, asks for timed runs of the case instead of one run
	// (bench.go); Bandwidth, when set, for the copy bandwidth (the case
	// fields are then empty).
	Bench     *benchSpec
	Bandwidth *bandwidthSpec
}

// reply answers a request (or, with Seq 0, says hello).
type reply struct {
	Seq         uint64
	Device      string   // hello: "NVIDIA H200 (sm_90, CUDA 13.0 driver)"
	Outputs     [][]byte // the Full bytes of each output, in request order
	KernelNanos int64    // device time between the events around the launch
	Class       difftest.Class
	Msg         string
	Sticky      bool // the context is lost; the worker exits after this reply
	// Props (hello only): report properties, keys difftest.PropDevice,
	// PropDriver and PropCUDA.
	Props map[string]string
	// DeviceCount (hello only): the devices the driver reports, for
	// --device all.
	DeviceCount int
	// Adapters (hello only, over an adapter library): the contracts whose
	// kd_adapter_<contract> the library defines, sorted.
	Adapters []string
	// Declined: the adapter declined the case (KD_ADAPTER_UNSUPPORTED);
	// Class is then unavailable and the case is not tested.
	Declined bool
	// Bench and Bandwidth answer those requests.
	Bench     *benchReply
	Bandwidth *bandwidthReply
}

// tail keeps the last max bytes written to it (a worker's stdout and
// stderr) and, wherever it comes, the first Go crash report's headline
// block: the line before the headline, the headline, and the three lines
// after it (see crashHeadline). The runtime's goroutine and register
// dumps that follow a headline run to several KiB, so the last bytes
// alone would lose it.
type tail struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	line  []byte   // the line being written, up to maxLine bytes
	prev  string   // the last complete line
	crash []string // the headline block, once seen
	after int      // lines of the block still to come
}

// maxLine bounds the bytes of one line that tail looks at for a headline.
const maxLine = 1024

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	for _, c := range p {
		if c != '\n' {
			if len(t.line) < maxLine {
				t.line = append(t.line, c)
			}
			continue
		}
		l := string(t.line)
		t.line = t.line[:0]
		switch {
		case t.crash == nil && isCrashHeadline(l):
			t.crash, t.after = []string{t.prev, l}, 3
		case t.after > 0:
			t.crash = append(t.crash, l)
			t.after--
		}
		t.prev = l
	}
	return len(p), nil
}

// String returns the last max bytes.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Crash returns the first crash report's headline block, or "" when none
// has been written.
func (t *tail) Crash() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.crash, "\n")
}

// crashHeadline returns why a Go process died, from its output (or the
// block tail.Crash keeps): the runtime's headline ("panic: …", "fatal error: …", or
// "SIGSEGV: segmentation violation" for a signal in C code) with the
// lines the runtime prints right after it about the signal ("[signal …]",
// "PC=… addr=…", "signal arrived during cgo execution"), preceded by the
// line printed just before it, if any (a C library's or a kernel
// emulator's last words before abort). Lines are joined by "; ". It returns "" when
// the output holds no such headline.
func crashHeadline(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !isCrashHeadline(l) {
			continue
		}
		var parts []string
		if i > 0 && strings.TrimSpace(lines[i-1]) != "" {
			parts = append(parts, strings.TrimSpace(lines[i-1]))
		}
		parts = append(parts, strings.TrimSpace(l))
		for _, n := range lines[i+1 : min(len(lines), i+4)] {
			n = strings.TrimSpace(n)
			if strings.HasPrefix(n, "[signal ") || strings.HasPrefix(n, "PC=") || n == "signal arrived during cgo execution" {
				parts = append(parts, n)
			}
		}
		return strings.Join(parts, "; ")
	}
	return ""
}

// isCrashHeadline reports whether l opens a Go runtime crash report.
func isCrashHeadline(l string) bool {
	for _, p := range []string{"panic: ", "fatal error: ", "unexpected fault address", "unexpected signal"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	// "SIGSEGV: segmentation violation", "SIGABRT: abort", …
	sig, _, ok := strings.Cut(l, ": ")
	if !ok || len(sig) < 4 || !strings.HasPrefix(sig, "SIG") {
		return false
	}
	for _, c := range sig[3:] {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
