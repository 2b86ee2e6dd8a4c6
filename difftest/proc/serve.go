// The serve implementation: a long-lived program speaking the serve
// protocol (docs/python.md, "The serve protocol, version 1"),
// started once and sent one request per run of a case, with every tensor
// in a shared memory file mapped by both sides.
//
// Wire format: each message is a 4-byte little-endian length N
// (1 ≤ N ≤ ServeMaxMessage) and N bytes of one JSON object. The program
// reads requests on fd 3, writes replies on fd 4, and maps the memfd on
// fd 5. Its first message is a hello naming the protocol, the kernels it
// implements, its device and its version.

package proc

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// Limits of the serve protocol.
const (
	// ServeProtocol is the protocol version the harness speaks; a hello
	// with another is refused.
	ServeProtocol = 1
	// ServeMaxMessage bounds one message in either direction (bytes of
	// JSON after the 4-byte length); the length is checked before
	// anything is allocated.
	ServeMaxMessage = 1 << 20
	// ServeMaxText bounds the hello's device and version strings and a
	// reply's device (bytes).
	ServeMaxText = 256
	// ServeAlign is the alignment of every tensor offset in the shared
	// memory (bytes).
	ServeAlign = 4096
	// ServeHelloTimeout bounds the wait for the hello after a start.
	ServeHelloTimeout = 60 * time.Second
	// ServeExitGrace is how long Close waits for the program to exit
	// after the end of its requests before it kills the process group.
	ServeExitGrace = 5 * time.Second
	// ServeProtocolEnv is set to the protocol version in the program's
	// environment.
	ServeProtocolEnv = "KD_SERVE_PROTOCOL"
)

// serveErrorExitWait is how long an error reply waits for the program to
// exit (as one does after a sticky CUDA error) before the next request.
const serveErrorExitWait = 200 * time.Millisecond

// The descriptors the program finds open.
const (
	serveRequestFD = 3
	serveReplyFD   = 4
	serveShmFD     = 5
)

// ServeHello is the program's first message.
type ServeHello struct {
	Type     string   `json:"type"`     // "hello"
	Protocol int      `json:"protocol"` // ServeProtocol
	Kernels  []string `json:"kernels"`  // contract names it implements
	Device   string   `json:"device"`   // free text, ≤ ServeMaxText bytes
	Version  string   `json:"version"`  // free text, ≤ ServeMaxText bytes
}

// ServeTensor places one tensor of a request in the shared memory: the
// tensor is [Offset, Offset+NBytes); an output's guarded buffer is
// [Offset−Guard, Offset+NBytes+Guard). DType is a safetensors dtype name.
type ServeTensor struct {
	Name   string `json:"name"`
	DType  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	Offset int64  `json:"offset"`
	NBytes int64  `json:"nbytes"`
	Guard  int64  `json:"guard,omitempty"` // outputs only
}

// ServeRequest is one run of a case.
type ServeRequest struct {
	Type    string          `json:"type"` // "run"
	Seq     uint64          `json:"seq"`  // 1, 2, … over the harness's life
	Kernel  string          `json:"kernel"`
	Case    string          `json:"case"`
	Params  json.RawMessage `json:"params"`
	ShmSize int64           `json:"shm_size"` // fd 5's size for this request
	Inputs  []ServeTensor   `json:"inputs"`
	Outputs []ServeTensor   `json:"outputs"`
}

// ServeReply answers one request.
type ServeReply struct {
	Type         string `json:"type"`   // "result"
	Seq          uint64 `json:"seq"`    // the request's
	Status       string `json:"status"` // "ok", "error" or ServeUnsupported
	Message      string `json:"message,omitempty"`
	KernelTimeNS int64  `json:"kernel_time_ns,omitempty"`
	Device       string `json:"device,omitempty"`
}

// WriteServeMessage frames v (a JSON object) onto w. It fails for a
// message over ServeMaxMessage bytes.
func WriteServeMessage(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > ServeMaxMessage {
		return fmt.Errorf("serve message of %d bytes exceeds the %d-byte limit", len(b), ServeMaxMessage)
	}
	buf := make([]byte, 4+len(b))
	binary.LittleEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

// errServeFrame marks a framing error (bad length) from ReadServeMessage.
var errServeFrame = errors.New("serve framing")

// ReadServeMessage reads one framed message from r and returns its JSON
// bytes. A length of 0 or over ServeMaxMessage is an error before any
// allocation; a stream that ends inside a message returns
// io.ErrUnexpectedEOF, one that ends between messages io.EOF.
func ReadServeMessage(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n == 0 || n > ServeMaxMessage {
		return nil, fmt.Errorf("%w: message length %d, want 1 … %d", errServeFrame, n, ServeMaxMessage)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

// NewServeImpl starts CMD (split by SplitCommand) as a serve-protocol
// program and waits for its hello. Nothing can be tested (a *RunError of
// class Unavailable, exit 125) when the command does not parse or start,
// when the program exits or stays silent for ServeHelloTimeout before its
// hello, or when the hello is malformed, of another protocol, or names
// none of this build's kernels.
//
// Run's failures are *RunError values, for that case only:
//
//   - unavailable: the case's kernel is not among the hello's kernels (the
//     runner records the case as not tested and goes on);
//   - crash: the program died during the request (exit status, signal and
//     its stderr tail), answered another request's seq, or replied with
//     status "error" (its message);
//   - timeout: no reply within timeout; the process group is killed;
//   - bad-output: a message that breaks the framing, is not JSON, is over
//     ServeMaxMessage, or is not a "result";
//   - input-modified: an input's bytes in the shared memory changed.
//
// After a crash, a time-out or a bad message the program is killed and a
// new one started for the next run (with a new hello, which must name the
// same protocol). Outputs come back as their whole guarded buffers, so the
// harness checks guards, poison and canaries itself. The program's
// stderr keeps only its last ExecStderrTail bytes; stdout is discarded.
func NewServeImpl(cmd string, timeout time.Duration) (difftest.Impl, error) {
	return NewServeImplContext(context.Background(), cmd, timeout)
}

// NewServeImplContext is NewServeImpl whose wait for the hello also ends
// when ctx does (a person pressed Ctrl-C): the program is killed and the
// error is a *RunError of class Unavailable that names ctx's cause.
func NewServeImplContext(ctx context.Context, cmd string, timeout time.Duration) (difftest.Impl, error) {
	return newServeImpl(ctx, cmd, timeout, ServeHelloTimeout)
}

func newServeImpl(ctx context.Context, cmd string, timeout, hello time.Duration) (difftest.Impl, error) {
	argv, err := SplitCommand(cmd)
	if err != nil {
		return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: err.Error()}
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: fmt.Sprintf("serve: cannot start %s: %v", argv[0], err)}
	}
	s := &serveImpl{cmd: cmd, argv: argv, timeout: timeout, helloTimeout: hello}
	if rerr := s.start(ctx); rerr != nil {
		rerr.Class = difftest.Unavailable
		return nil, rerr
	}
	return s, nil
}

type serveImpl struct {
	cmd          string
	argv         []string
	timeout      time.Duration
	helloTimeout time.Duration

	mu     sync.Mutex
	p      *serveProc
	hello  ServeHello
	shm    *os.File // the memfd, sealed at shmCap bytes
	shmCap int64
	mem    []byte // its mapping
	seq    uint64
	starts int
	closed bool
}

// serveProc is one running program.
type serveProc struct {
	cmd     *exec.Cmd
	tag     string // ExecRunEnv=…: finds descendants that left the group
	reqW    *os.File
	msgs    chan serveMsg // closed when the reply stream ends
	done    chan struct{} // closed when the process has been reaped
	waitErr error
	tail    *execTail
	tailMu  sync.Mutex
}

type serveMsg struct {
	data []byte
	err  error
}

func (s *serveImpl) Name() string { return "serve:" + s.cmd }

// Properties implements PropertyProvider: the program's device and its
// version string (from its hello), as PropDevice and PropImplVersion.
func (s *serveImpl) Properties() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]string{difftest.PropDevice: s.hello.Device, difftest.PropImplVersion: s.hello.Version}
}

// ensureShm makes the mapping of the memfd at least n bytes. The memfd
// is sealed (newSealedShm): the program can neither shrink it (which
// would make the harness's own copies fault with SIGBUS) nor grow it.
// When n exceeds the sealed size, a new memfd replaces it, and the
// running program, which holds the old one on fd 5, is stopped (dropped
// reports it; the next request starts a new one).
func (s *serveImpl) ensureShm(n int64) (dropped []string, err error) {
	if s.shm == nil || n > s.shmCap {
		if s.p != nil {
			dropped = append(dropped, "the shared memory was replaced by a larger one; the serve program is started again on it")
			dropped = append(dropped, s.drop()...)
		}
		s.releaseShm()
		f, size, err := newSealedShm(n)
		if err != nil {
			return dropped, err
		}
		s.shm, s.shmCap = f, size
	}
	if int64(len(s.mem)) >= n {
		return dropped, nil
	}
	if s.mem != nil {
		if err := unix.Munmap(s.mem); err != nil {
			return dropped, fmt.Errorf("serve: munmap: %w", err)
		}
		s.mem = nil
	}
	mem, err := unix.Mmap(int(s.shm.Fd()), 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return dropped, fmt.Errorf("serve: mmap of %d bytes: %w", n, err)
	}
	s.mem = mem
	return dropped, nil
}

// start launches the program and reads its hello; the caller holds mu or
// is the constructor.
func (s *serveImpl) start(ctx context.Context) *difftest.RunError {
	if _, err := s.ensureShm(ServeAlign); err != nil {
		return &difftest.RunError{Class: difftest.Crash, Msg: err.Error()}
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return &difftest.RunError{Class: difftest.Crash, Msg: "serve: pipe: " + err.Error()}
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return &difftest.RunError{Class: difftest.Crash, Msg: "serve: pipe: " + err.Error()}
	}
	p := &serveProc{reqW: reqW, msgs: make(chan serveMsg, 1), done: make(chan struct{}), tail: &execTail{max: ExecStderrTail}}
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Stdin = nil
	cmd.Stdout = nil
	cmd.Stderr = lockedWriter{&p.tailMu, p.tail}
	cmd.ExtraFiles = []*os.File{reqR, repW, s.shm} // fds 3, 4, 5
	p.tag = ExecRunEnv + "=" + rand.Text()
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", ServeProtocolEnv, ServeProtocol), p.tag)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	p.cmd = cmd
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{reqR, reqW, repR, repW} {
			f.Close()
		}
		return &difftest.RunError{Class: difftest.Crash, Msg: fmt.Sprintf("serve: cannot start %s: %v", s.argv[0], err)}
	}
	reqR.Close()
	repW.Close()
	s.starts++
	go func() {
		defer close(p.msgs)
		defer repR.Close()
		for {
			b, err := ReadServeMessage(repR)
			if err != nil {
				if !errors.Is(err, io.EOF) {
					p.msgs <- serveMsg{err: err}
				}
				return
			}
			p.msgs <- serveMsg{data: b}
		}
	}()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()

	timer := time.NewTimer(s.helloTimeout)
	defer timer.Stop()
	m, ok, why := p.await(ctx, timer.C)
	switch why {
	case awaitTimeout:
		p.kill()
		return &difftest.RunError{Class: difftest.Crash, Msg: fmt.Sprintf("serve: no hello within %v%s", s.helloTimeout, p.stderr())}
	case awaitCancelled:
		p.kill()
		return &difftest.RunError{Class: difftest.Timeout, Msg: "serve: interrupted while waiting for the hello: " + difftest.SafeLine(context.Cause(ctx).Error())}
	}
	if !ok {
		p.kill()
		return &difftest.RunError{Class: difftest.Crash, Msg: "serve: the program ended before its hello: " + p.death()}
	}
	if m.err != nil {
		p.kill()
		return &difftest.RunError{Class: difftest.Crash, Msg: "serve: unreadable hello: " + m.err.Error() + p.stderr()}
	}
	h, herr := parseHello(m.data)
	if herr != nil {
		p.kill()
		return &difftest.RunError{Class: difftest.Crash, Msg: "serve: " + herr.Error()}
	}
	if s.starts > 1 && !slices.Equal(h.Kernels, s.hello.Kernels) {
		p.kill()
		return &difftest.RunError{Class: difftest.Crash, Msg: fmt.Sprintf("serve: the restarted program implements %v, the first %v", h.Kernels, s.hello.Kernels)}
	}
	s.hello = h
	s.p = p
	return nil
}

// parseHello checks the hello message.
func parseHello(b []byte) (ServeHello, error) {
	var h ServeHello
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("hello is not a JSON object of the protocol: %v", err)
	}
	switch {
	case h.Type != "hello":
		return h, fmt.Errorf("first message has type %q, want \"hello\"", h.Type)
	case h.Protocol != ServeProtocol:
		return h, fmt.Errorf("hello speaks protocol %d; this difftest speaks %d", h.Protocol, ServeProtocol)
	case len(h.Device) > ServeMaxText || len(h.Version) > ServeMaxText:
		return h, fmt.Errorf("hello device or version longer than %d bytes", ServeMaxText)
	}
	known := 0
	for _, k := range h.Kernels {
		if _, ok := difftest.LookupKernel(k); ok {
			known++
		}
	}
	if known == 0 {
		names := make([]string, 0)
		for _, k := range difftest.Kernels() {
			names = append(names, k.Name())
		}
		return h, fmt.Errorf("hello names kernels %q, none of this build's (%s)", h.Kernels, strings.Join(names, ", "))
	}
	return h, nil
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// stderr renders the program's stderr tail for a message.
func (p *serveProc) stderr() string {
	p.tailMu.Lock()
	defer p.tailMu.Unlock()
	return p.tail.suffix()
}

// kill ends the process group and reaps the program, then kills its
// descendants that left the group (setsid); it returns the warning that
// names them, if any.
func (p *serveProc) kill() []string {
	p.reqW.Close()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	return serveEscapes(execKillEscaped(p.tag, p.cmd.Process.Pid))
}

// serveEscapes rewords exec's warning for a serve program.
func serveEscapes(w []string) []string {
	for i := range w {
		w[i] = strings.Replace(w[i], "the exec program", "the serve program", 1)
	}
	return w
}

// death describes how a reaped program ended, with its stderr tail.
func (p *serveProc) death() string {
	<-p.done
	status := "exited 0"
	if p.waitErr != nil {
		status = p.waitErr.Error()
		if ps := p.cmd.ProcessState; ps != nil {
			if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				status = fmt.Sprintf("killed by signal %d (%v)", int(ws.Signal()), ws.Signal())
			} else {
				status = fmt.Sprintf("exit status %d", ps.ExitCode())
			}
		}
	}
	return status + p.stderr()
}

// drop kills the current program (the next Run starts another) and
// returns the warning naming descendants that escaped its group.
func (s *serveImpl) drop() []string {
	var w []string
	if s.p != nil {
		w = s.p.kill()
		s.p = nil
	}
	return w
}

func alignUp(n int64) int64 { return (n + ServeAlign - 1) / ServeAlign * ServeAlign }

// layout places the case's tensors in the shared memory: inputs first
// (those an InOut output replaces are sent as that output), then each
// output's guarded buffer, every tensor at a multiple of ServeAlign.
func layout(c *difftest.Case, outs []*difftest.Buffer) (ins []ServeTensor, inData [][]byte, outT []ServeTensor, size int64) {
	inout := map[string]bool{}
	for _, o := range c.Outputs {
		if o.InOut {
			inout[o.Name] = true
		}
	}
	off := int64(0)
	for _, t := range c.Inputs {
		if inout[t.Name] {
			continue
		}
		ins = append(ins, ServeTensor{Name: t.Name, DType: string(t.DType), Shape: t.Shape, Offset: off, NBytes: int64(len(t.Data))})
		inData = append(inData, t.Data)
		off = alignUp(off + int64(len(t.Data)))
	}
	for _, b := range outs {
		g := int64(b.Guard)
		n := int64(len(b.Full)) - 2*g
		off = alignUp(off)
		outT = append(outT, ServeTensor{Name: b.Name, DType: string(b.DType), Shape: b.Shape, Offset: off + g, NBytes: n, Guard: g})
		off = alignUp(off + int64(len(b.Full)))
	}
	return ins, inData, outT, max(off, ServeAlign)
}

// Offers implements difftest.KernelOfferer: the kernels of the
// program's hello. The runner draws no inputs for a case of another
// kernel (it is not tested).
func (s *serveImpl) Offers(kernel string) (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offers(kernel)
}

// offers is Offers with mu held.
func (s *serveImpl) offers(kernel string) (bool, string) {
	if slices.Contains(s.hello.Kernels, kernel) {
		return true, ""
	}
	return false, fmt.Sprintf("the serve program implements %s, not %s", strings.Join(s.hello.Kernels, ", "), kernel)
}

func (s *serveImpl) Run(ctx context.Context, k difftest.Kernel, c *difftest.Case, outs []*difftest.Buffer) (difftest.RunInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return difftest.RunInfo{}, &difftest.RunError{Class: difftest.Crash, Msg: "serve implementation closed"}
	}
	if ok, why := s.offers(c.Kernel); !ok {
		return difftest.RunInfo{}, &difftest.RunError{Class: difftest.Unavailable, Msg: why, Skip: true}
	}
	if len(outs) != len(c.Outputs) {
		return difftest.RunInfo{}, fmt.Errorf("serve: case %s has %d outputs, got %d buffers", c.ID, len(c.Outputs), len(outs))
	}
	ins, inData, osp, size := layout(c, outs)
	warnings, err := s.ensureShm(size)
	if err != nil {
		return difftest.RunInfo{Warnings: warnings}, err
	}
	for i, t := range ins {
		copy(s.mem[t.Offset:t.Offset+t.NBytes], inData[i])
	}
	for i, t := range osp {
		copy(s.mem[t.Offset-t.Guard:], outs[i].Full)
	}
	if s.p != nil {
		select {
		case <-s.p.done:
			// It exited between requests (say, after reporting a sticky
			// CUDA error): not this case's fault; a fresh one runs it.
			warnings = append(warnings, "the serve program had exited after its last reply ("+s.p.death()+"); started again for this case")
			warnings = append(warnings, s.drop()...)
		default:
		}
	}
	if s.p == nil {
		if rerr := s.start(ctx); rerr != nil {
			return difftest.RunInfo{Warnings: warnings}, rerr
		}
	}
	s.seq++
	req := ServeRequest{Type: "run", Seq: s.seq, Kernel: c.Kernel, Case: c.ID, Params: difftest.MarshalParams(c), ShmSize: int64(len(s.mem)), Inputs: ins, Outputs: osp}
	p := s.p
	if err := p.writeRequest(ctx, req, s.timeout); err != nil {
		w := append(warnings, s.drop()...)
		return difftest.RunInfo{Warnings: w}, &difftest.RunError{Class: difftest.Crash, Msg: "serve: the program is gone before the request: " + p.death()}
	}
	var timeout <-chan time.Time
	if s.timeout > 0 {
		t := time.NewTimer(s.timeout)
		defer t.Stop()
		timeout = t.C
	}
	m, ok, why := p.await(ctx, timeout)
	switch why {
	case awaitTimeout:
		w := append(warnings, s.drop()...)
		return difftest.RunInfo{Warnings: w}, &difftest.RunError{Class: difftest.Timeout, Msg: fmt.Sprintf("no reply after %v; process group killed%s", s.timeout, p.stderr())}
	case awaitCancelled:
		w := s.drop()
		return difftest.RunInfo{Warnings: w}, fmt.Errorf("serve: %w", ctx.Err())
	}
	if !ok {
		w := s.drop()
		return difftest.RunInfo{Warnings: w}, &difftest.RunError{Class: difftest.Crash, Msg: "serve: the program died during the request: " + p.death()}
	}
	if m.err != nil {
		w := s.drop()
		return difftest.RunInfo{Warnings: w}, &difftest.RunError{Class: difftest.BadOutput, Msg: "serve: unreadable reply: " + m.err.Error()}
	}
	r, rerr := parseReply(m.data, req.Seq)
	if rerr != nil {
		w := s.drop()
		return difftest.RunInfo{Warnings: w}, rerr
	}
	if r.Status == ServeUnsupported {
		return difftest.RunInfo{Warnings: warnings}, &difftest.RunError{Class: difftest.Unavailable, Skip: true,
			Msg: "the program does not support this case: not tested; " + difftest.CaptureOneLine(r.Message)}
	}
	if r.Status == "error" {
		// A program that cannot go on (a sticky CUDA error) replies, then
		// exits: take it down now, so the next case starts a fresh one
		// instead of finding it gone.
		select {
		case <-p.done:
			warnings = append(warnings, "the serve program exited after reporting the error ("+p.death()+"); it is started again for the next case")
			warnings = append(warnings, s.drop()...)
		case <-time.After(serveErrorExitWait):
		}
		return difftest.RunInfo{Warnings: warnings}, &difftest.RunError{Class: difftest.Crash, Msg: "the program reported an error: " + difftest.CaptureOneLine(r.Message)}
	}
	if note := programNote(r.Message); note != "" {
		warnings = append(warnings, note)
	}
	info := difftest.RunInfo{KernelTime: time.Duration(r.KernelTimeNS), Warnings: warnings}
	for i, t := range osp {
		if err := copyNoFault(outs[i].Full, s.mem[t.Offset-t.Guard:t.Offset+t.NBytes+t.Guard]); err != nil {
			w := s.drop()
			return difftest.RunInfo{Warnings: w}, &difftest.RunError{Class: difftest.Crash, Msg: "serve: output " + t.Name + ": " + err.Error()}
		}
	}
	for i, t := range ins {
		given := &difftest.Tensor{Name: t.Name, DType: difftest.DType(t.DType), Shape: t.Shape, Data: inData[i]}
		if ch := difftest.DiffInput(given, s.mem[t.Offset:t.Offset+t.NBytes]); ch != nil {
			return info, &difftest.RunError{Class: difftest.InputModified, Msg: ch.String() + " (the shared memory, read after the reply)"}
		}
	}
	return info, nil
}

// parseReply checks a reply to request seq.
func parseReply(b []byte, seq uint64) (ServeReply, *difftest.RunError) {
	var r ServeReply
	if err := json.Unmarshal(b, &r); err != nil {
		return r, &difftest.RunError{Class: difftest.BadOutput, Msg: "serve: reply is not a JSON object of the protocol: " + difftest.CaptureOneLine(err.Error())}
	}
	switch {
	case r.Type != "result":
		return r, &difftest.RunError{Class: difftest.BadOutput, Msg: fmt.Sprintf("serve: reply has type %q, want \"result\"", difftest.CaptureOneLine(r.Type))}
	case r.Seq != seq:
		return r, &difftest.RunError{Class: difftest.Crash, Msg: fmt.Sprintf("serve: protocol error: reply for request %d to request %d", r.Seq, seq)}
	case r.Status != "ok" && r.Status != "error" && r.Status != ServeUnsupported:
		return r, &difftest.RunError{Class: difftest.BadOutput, Msg: fmt.Sprintf("serve: reply status %q, want \"ok\", \"error\" or %q", difftest.CaptureOneLine(r.Status), ServeUnsupported)}
	case r.KernelTimeNS < 0:
		return r, &difftest.RunError{Class: difftest.BadOutput, Msg: fmt.Sprintf("serve: negative kernel_time_ns %d", r.KernelTimeNS)}
	case len(r.Device) > ServeMaxText:
		return r, &difftest.RunError{Class: difftest.BadOutput, Msg: fmt.Sprintf("serve: reply device longer than %d bytes", ServeMaxText)}
	}
	return r, nil
}

// Close ends the program's requests (end of file on fd 3), waits up to
// ServeExitGrace for it to exit, then kills its process group, and
// releases the shared memory.
func (s *serveImpl) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var err error
	if p := s.p; p != nil {
		s.p = nil
		p.reqW.Close()
		select {
		case <-p.done:
		case <-time.After(ServeExitGrace):
			err = fmt.Errorf("serve: the program did not exit within %v of its last request; killed", ServeExitGrace)
		}
		if w := p.kill(); len(w) > 0 && err == nil {
			err = errors.New(w[0])
		}
	}
	s.releaseShm()
	return err
}

// releaseShm unmaps the shared memory and closes its memfd, when there
// are any.
func (s *serveImpl) releaseShm() {
	if s.mem != nil {
		_ = unix.Munmap(s.mem)
		s.mem = nil
	}
	if s.shm != nil {
		s.shm.Close()
		s.shm = nil
	}
}

// ServeUnsupported is the reply status by which a serve program says it
// implements the kernel but not this case's configuration (a store
// format, a dtype it does not handle): the case is not tested (skipped,
// class unavailable), as under exec's ExecNotImplemented, instead of
// failing. Its message says what is unsupported.
const ServeUnsupported = "unsupported"
