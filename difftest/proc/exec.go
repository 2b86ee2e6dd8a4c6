// The exec implementation: any program speaking the exec protocol of
// docs/interfaces.md runs as an implementation under test.
//
// Per case, in a fresh temporary folder, the harness writes in.safetensors
// (every input tensor under its contract name; every InOut output, such as
// the paged cache, with its current canary-filled content; __metadata__ =
// {"kernel", "params" (JSON), "case", "outputs"}) and runs
//
//	CMD... /tmp/kerneldiff-exec-NNN/in.safetensors /tmp/kerneldiff-exec-NNN/out.safetensors
//
// The program writes every output of the case under its contract name,
// with the exact dtype and shape of the case's OutputSpec, and exits 0.
// "outputs" lists those specs as JSON, [{"name", "dtype", "shape",
// "inout"}, ...], so a program needs no table of contracts of its own. A
// program that does not implement the case's kernel exits with status
// ExecNotImplemented (125): the case is not tested (skipped, class
// unavailable), as a serve program's kernel it did not list in its hello.

package proc

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// MetaOutputs is the __metadata__ key of an exec request that lists the
// case's outputs (name, dtype, shape, inout) as JSON.
const MetaOutputs = "outputs"

// MetaPoison is the __metadata__ key of an exec request that gives this
// run's poison byte, in decimal ("165" for PoisonA): a program that makes
// its own output buffers fills them with it, so an output it never writes
// still holds the poison the harness looks for (class unwritten, not a
// mismatch of whatever the program filled them with).
const MetaPoison = "poison"

// ExecNotImplemented is the exit status by which an exec program says it
// does not implement the case's kernel (as `git bisect run` reads 125 as
// "cannot test this one"): the case is skipped, not failed.
const ExecNotImplemented = 125

// ExecStderrTail is how many trailing bytes of an exec program's stderr a
// failure message keeps.
const ExecStderrTail = 4096

// SplitCommand splits an exec:CMD command line into words, with a subset of
// POSIX shell quoting and nothing else (no variables, globs, pipes or
// redirections):
//
//   - unquoted blanks (space, tab, newline) separate words;
//   - '...' keeps everything up to the next ' literally;
//   - "..." keeps its text, where a backslash escapes only " \ $ ` and
//     is otherwise kept;
//   - outside quotes, a backslash makes the next character literal;
//   - quotes join adjacent text into one word, and ” or "" is an
//     empty word.
//
// It returns an error for an unterminated quote, a trailing backslash, or
// a command with no words.
func SplitCommand(cmd string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word (possibly an empty quoted one)
	)
	for i := 0; i < len(cmd); i++ {
		switch ch := cmd[i]; ch {
		case ' ', '\t', '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case '\'':
			end := strings.IndexByte(cmd[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("exec command %q: unterminated ' quote at byte %d", cmd, i)
			}
			cur.WriteString(cmd[i+1 : i+1+end])
			i += end + 1
			in = true
		case '"':
			j := i + 1
			for ; j < len(cmd) && cmd[j] != '"'; j++ {
				if cmd[j] == '\\' && j+1 < len(cmd) && strings.IndexByte("\"\\$`", cmd[j+1]) >= 0 {
					j++
				}
				cur.WriteByte(cmd[j])
			}
			if j == len(cmd) {
				return nil, fmt.Errorf("exec command %q: unterminated \" quote at byte %d", cmd, i)
			}
			i = j
			in = true
		case '\\':
			if i+1 == len(cmd) {
				return nil, fmt.Errorf("exec command %q: trailing backslash", cmd)
			}
			i++
			cur.WriteByte(cmd[i])
			in = true
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("exec command %q: no program named", cmd)
	}
	return words, nil
}

// NewExecImpl returns the exec:CMD implementation of docs/interfaces.md. CMD is
// split by SplitCommand (callers that want a usage error before the first
// case call SplitCommand themselves, or use OpenExecImpl; otherwise every
// Run fails with class launch-error). The program is looked up in PATH,
// inherits the environment (plus ExecRunEnv) and working directory, reads
// nothing on stdin, and has its stdout discarded; the last ExecStderrTail
// bytes of its stderr go into failure messages. It runs in its own process
// group; timeout > 0 bounds each case, and on time-out the whole group is
// killed with SIGKILL. After every run, whatever is left of the group is
// killed too, and so is every process that escaped the group (setsid,
// setpgid) but still carries the run's ExecRunEnv entry: the case gets a
// warning naming it (RunInfo.Warnings).
//
// Run's failures are *RunError values:
//
//   - launch-error: the command does not parse, or the implementation is
//     closed;
//   - unavailable: the program cannot be started (no such file, not
//     executable, not in PATH): nothing can be tested, so the run stops
//     (exit 125 unless a case already failed);
//   - crash: non-zero exit status, or killed by a signal (the message gives
//     the status or signal and the stderr tail);
//   - timeout: still running after timeout;
//   - bad-output: exit 0 but out.safetensors is absent, not a regular file
//     (a FIFO, a device, a link to one: refused by its type, never
//     opened to wait), or unreadable, or an output has the wrong dtype or
//     shape;
//   - missing-output: an output of the case is absent from out.safetensors.
//
// Tensors in out.safetensors that are not outputs of the case are
// ignored and never read: only the outputs' bytes are, after the header
// (at most MaxHeaderBytes) has shown their dtypes and shapes right. Outputs are copied into the Buffers only when all of them are
// well-formed. When ctx ends, the group is killed and Run returns ctx's
// error. The exec implementation reports no kernel time. Run is safe for
// concurrent use: each run has its own temporary folder, removed before
// Run returns.
func NewExecImpl(cmd string, timeout time.Duration) difftest.Impl {
	argv, err := SplitCommand(cmd)
	return &execImpl{cmd: cmd, argv: argv, argvErr: err, timeout: timeout, running: map[*execRun]struct{}{}}
}

// OpenExecImpl is NewExecImpl that checks the command before any case
// runs: a command that does not parse is an error wrapping
// ErrUnknownImpl (a usage error, exit 2), and a program that cannot be
// started (exec.LookPath fails: no such file, not executable, a folder,
// not in PATH) is a *RunError of class Unavailable (exit 125: nothing
// could be tested).
func OpenExecImpl(cmd string, timeout time.Duration) (difftest.Impl, error) {
	argv, err := SplitCommand(cmd)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", difftest.ErrUnknownImpl, "exec:"+cmd, err)
	}
	if err := execCheckProgram(argv[0]); err != nil {
		return nil, err
	}
	return NewExecImpl(cmd, timeout), nil
}

// execCheckProgram says why prog cannot be started, as a *RunError of
// class Unavailable, or returns nil.
func execCheckProgram(prog string) error {
	_, err := exec.LookPath(prog)
	if err == nil {
		return nil
	}
	reason := err.Error()
	st, serr := os.Stat(prog)
	switch {
	case strings.ContainsRune(prog, '/') && serr == nil && st.IsDir():
		reason = "is a folder, not a program"
	case errors.Is(err, exec.ErrDot):
		reason = "found only in a relative PATH entry; name it with a path (./" + prog + ")"
	case errors.Is(err, exec.ErrNotFound):
		reason = "not found in PATH"
	case errors.Is(err, fs.ErrNotExist):
		reason = "no such file"
	case errors.Is(err, fs.ErrPermission):
		reason = "not executable"
		if serr == nil {
			reason = fmt.Sprintf("not executable (mode %v)", st.Mode().Perm())
		}
	}
	return &difftest.RunError{Class: difftest.Unavailable, Msg: fmt.Sprintf("cannot start %s: %s (the program must be an executable file, looked up in PATH when its name has no slash); nothing was tested", prog, reason)}
}

// ExecRunEnv is the environment variable every exec program runs with,
// set to a value unique to the run: the harness finds the program's
// descendants by it after the run, also those that left its process group
// (setsid, setpgid), and kills them. A descendant that clears its
// environment is not found.
const ExecRunEnv = "KERNELDIFF_EXEC_RUN"

// execStderrGrace bounds the wait for the program's stderr to close after
// it has exited and its group and tagged descendants have been killed: a
// descendant that escaped both still holds the pipe.
const execStderrGrace = 2 * time.Second

// execCloseGrace bounds how long Close waits for running programs to be
// killed and their temporary folders removed.
const execCloseGrace = 10 * time.Second

type execImpl struct {
	cmd     string
	argv    []string
	argvErr error
	timeout time.Duration

	mu      sync.Mutex
	running map[*execRun]struct{}
	runs    sync.WaitGroup // every Run in progress, until its folder is removed
	closed  bool
	who     execWho // the last version and device an out.safetensors stated
}

// execWho is what an exec program says of itself in out.safetensors'
// __metadata__: "version" (its version line) and "device" (where it ran),
// each kept only when at most ServeMaxText bytes, as a hello's.
type execWho struct{ version, device string }

// Properties implements PropertyProvider: the version line and device the
// last out.safetensors stated (PropImplVersion, PropDevice); none before
// the first run, or when the program states none.
func (e *execImpl) Properties() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	props := map[string]string{}
	if e.who.version != "" {
		props[difftest.PropImplVersion] = e.who.version
	}
	if e.who.device != "" {
		props[difftest.PropDevice] = e.who.device
	}
	return props
}

// execRun is one live program, cancellable by Close.
type execRun struct {
	cancel context.CancelCauseFunc
}

var errExecClosed = errors.New("exec implementation closed")

func (e *execImpl) Name() string { return "exec:" + e.cmd }

// Close kills the process group of every program still running (their Run
// calls return promptly with an error), waits (at most execCloseGrace) for
// those Runs to remove their temporary folders, and makes later Runs fail.
func (e *execImpl) Close() error {
	e.mu.Lock()
	e.closed = true
	for r := range e.running {
		r.cancel(errExecClosed)
	}
	e.mu.Unlock()
	done := make(chan struct{})
	go func() {
		e.runs.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-time.After(execCloseGrace):
		return fmt.Errorf("exec: a run did not end within %v of Close", execCloseGrace)
	}
}

func (e *execImpl) Run(ctx context.Context, k difftest.Kernel, c *difftest.Case, outs []*difftest.Buffer) (difftest.RunInfo, error) {
	if e.argvErr != nil {
		return difftest.RunInfo{}, &difftest.RunError{Class: difftest.LaunchError, Msg: e.argvErr.Error()}
	}
	if len(outs) != len(c.Outputs) {
		return difftest.RunInfo{}, fmt.Errorf("exec: case %s has %d outputs, got %d buffers", c.ID, len(c.Outputs), len(outs))
	}
	for i, o := range c.Outputs {
		if b := outs[i]; b == nil || b.Tensor == nil || len(b.Data) != o.Bytes() {
			return difftest.RunInfo{}, fmt.Errorf("exec: case %s: buffer %d does not hold output %s (%d bytes)", c.ID, i, o.Name, o.Bytes())
		}
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return difftest.RunInfo{}, &difftest.RunError{Class: difftest.LaunchError, Msg: errExecClosed.Error()}
	}
	e.runs.Add(1)
	e.mu.Unlock()
	defer e.runs.Done()

	dir, err := os.MkdirTemp("", "kerneldiff-exec-")
	if err != nil {
		return difftest.RunInfo{}, fmt.Errorf("exec: %w", err)
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "in.safetensors"), filepath.Join(dir, "out.safetensors")
	if err := execWriteInput(in, c, outs); err != nil {
		return difftest.RunInfo{}, fmt.Errorf("exec: case %s: %w", c.ID, err)
	}

	warnings, err := e.runProgram(ctx, in, out)
	info := difftest.RunInfo{Warnings: warnings}
	var ni *notImplementedError
	if errors.As(err, &ni) {
		return info, &difftest.RunError{Class: difftest.Unavailable, Skip: true,
			Msg: fmt.Sprintf("the program does not implement %s (exit status %d): not tested; %s", c.Kernel, ExecNotImplemented, ni.Msg)}
	}
	if err != nil {
		return info, err
	}
	note, who, err := execReadOutput(out, c, outs)
	if err == nil && who != (execWho{}) {
		e.mu.Lock()
		e.who = who
		e.mu.Unlock()
	}
	if note = programNote(note); note != "" {
		info.Warnings = append(info.Warnings, note)
	}
	return info, err
}

// runProgram runs the command on in and out and classifies its end. The
// warnings name descendants that escaped the process group.
func (e *execImpl) runProgram(ctx context.Context, in, out string) ([]string, error) {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if e.timeout > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeoutCause(runCtx, e.timeout, context.DeadlineExceeded)
		defer stop()
	}
	r := &execRun{cancel: cancel}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, &difftest.RunError{Class: difftest.LaunchError, Msg: errExecClosed.Error()}
	}
	e.running[r] = struct{}{}
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.running, r)
		e.mu.Unlock()
	}()

	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("exec %s: %w", e.argv[0], err)
	}
	// stderr is a pipe of ours, not an io.Writer, so that Wait returns when
	// the program exits, not when the last descendant holding the pipe does.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	tag := ExecRunEnv + "=" + rand.Text()
	cmd := exec.CommandContext(runCtx, e.argv[0], append(slices.Clip(e.argv[1:]), in, out)...)
	cmd.Env = append(os.Environ(), tag)
	cmd.Stderr = pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		// The program was there when the run began (OpenExecImpl) or was
		// never checked: either way no case can run.
		return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: fmt.Sprintf("cannot start %s: %v; nothing can be tested", e.argv[0], err)}
	}
	pw.Close()
	tail := &execTail{max: ExecStderrTail}
	tailDone := make(chan struct{})
	go func() {
		defer close(tailDone)
		_, _ = io.Copy(tail, pr)
	}()
	werr := cmd.Wait()
	elapsed := time.Since(start)
	// Kill whatever the program left in its group (ESRCH when nothing is
	// left), then whatever left the group but carries the run's tag.
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	warnings := execKillEscaped(tag, pgid)
	select {
	case <-tailDone:
	case <-time.After(execStderrGrace):
	}
	pr.Close()
	<-tailDone

	if runCtx.Err() != nil {
		switch cause := context.Cause(runCtx); {
		case ctx.Err() != nil:
			return warnings, fmt.Errorf("exec %s: %w", e.argv[0], ctx.Err())
		case errors.Is(cause, errExecClosed):
			return warnings, &difftest.RunError{Class: difftest.Crash, Msg: "killed: " + errExecClosed.Error() + tail.suffix()}
		default:
			return warnings, &difftest.RunError{Class: difftest.Timeout, Msg: fmt.Sprintf("no exit after %v; process group killed%s", e.timeout, tail.suffix())}
		}
	}
	if werr != nil && !errors.Is(werr, exec.ErrWaitDelay) {
		status := werr.Error()
		if ps := cmd.ProcessState; ps != nil {
			if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				status = fmt.Sprintf("killed by signal %d (%v)", int(ws.Signal()), ws.Signal())
			} else {
				status = fmt.Sprintf("exit status %d", ps.ExitCode())
			}
		}
		re := &difftest.RunError{Class: difftest.Crash, Msg: fmt.Sprintf("%s after %v%s", status, elapsed.Round(time.Millisecond), tail.suffix())}
		if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == ExecNotImplemented {
			return warnings, &notImplementedError{re}
		}
		return warnings, re
	}
	return warnings, nil
}

// execWriteInput writes in.safetensors: every input, then every InOut
// output with the Buffer's current content (replacing an input of the same
// name, since the Buffer is what the implementation must start from), and
// the metadata kernel, params, case, outputs and poison (MetaPoison).
func execWriteInput(path string, c *difftest.Case, outs []*difftest.Buffer) error {
	tensors := make([]*difftest.Tensor, 0, len(c.Inputs)+len(outs))
	inout := map[string]*difftest.Tensor{}
	for i, o := range c.Outputs {
		if o.InOut {
			inout[o.Name] = &difftest.Tensor{Name: o.Name, DType: o.DType, Shape: o.Shape, Data: outs[i].Data}
		}
	}
	for _, t := range c.Inputs {
		if inout[t.Name] == nil {
			tensors = append(tensors, t)
		}
	}
	for _, o := range c.Outputs {
		if t := inout[o.Name]; t != nil {
			tensors = append(tensors, t)
		}
	}
	params, err := difftest.CaptureParamsJSON(c.Params)
	if err != nil {
		return err
	}
	type spec struct {
		Name  string         `json:"name"`
		DType difftest.DType `json:"dtype"`
		Shape []int          `json:"shape"`
		InOut bool           `json:"inout"`
	}
	specs := make([]spec, len(c.Outputs))
	for i, o := range c.Outputs {
		specs[i] = spec{o.Name, o.DType, o.Shape, o.InOut}
	}
	outputs, err := json.Marshal(specs)
	if err != nil {
		return err
	}
	meta := map[string]string{difftest.MetaKernel: c.Kernel, difftest.MetaParams: params, difftest.MetaCase: c.ID, MetaOutputs: string(outputs)}
	if len(outs) > 0 && outs[0].Guard > 0 {
		meta[MetaPoison] = strconv.Itoa(int(outs[0].Full[0])) // the guard band holds the run's poison
	}
	return difftest.WriteSafetensors(path, tensors, meta)
}

// execReadOutput checks out.safetensors against the case's outputs and,
// when every output is present and well-formed, copies them into outs.
// The file is bounded by what the contract needs before anything is
// allocated: it must be a regular file (a FIFO, a device or a link to one
// is refused by its type), its header is bounded (difftest.OpenSafetensors), and
// only the outputs' bytes are read, each after its dtype and shape match
// the contract; other tensors are not read at all. It returns the
// program's note (MetaNote), read from the bounded header, also with an
// error, and the version and device the file's __metadata__ states
// (execWho).
func execReadOutput(path string, c *difftest.Case, outs []*difftest.Buffer) (string, execWho, error) {
	sf, err := difftest.OpenSafetensors(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", execWho{}, &difftest.RunError{Class: difftest.BadOutput, Msg: "exited 0 but wrote no out.safetensors"}
		}
		return "", execWho{}, &difftest.RunError{Class: difftest.BadOutput, Msg: "unreadable out.safetensors: " + execDetail(err)}
	}
	defer sf.Close()
	note, _ := sf.Metadata(MetaNote)
	var missing []string
	for _, o := range c.Outputs {
		dtype, shape, ok := sf.Entry(o.Name)
		if !ok {
			missing = append(missing, o.Name)
			continue
		}
		if dtype != o.DType || !slices.Equal(shape, o.Shape) {
			return note, execWho{}, &difftest.RunError{Class: difftest.BadOutput, Msg: fmt.Sprintf("out.safetensors: %s is %s%v, the contract says %s%v", o.Name, dtype, shape, o.DType, o.Shape)}
		}
	}
	if len(missing) > 0 {
		return note, execWho{}, &difftest.RunError{Class: difftest.MissingOutput, Msg: fmt.Sprintf("out.safetensors has no %s (holds: %s)", strings.Join(missing, ", "), execNames(sf.Names()))}
	}
	got := make([]*difftest.Tensor, len(c.Outputs))
	for i, o := range c.Outputs {
		if got[i], err = sf.Read(o.Name); err != nil {
			return note, execWho{}, &difftest.RunError{Class: difftest.BadOutput, Msg: "unreadable out.safetensors: " + execDetail(err)}
		}
	}
	for i := range c.Outputs {
		copy(outs[i].Data, got[i].Data)
	}
	var who execWho
	if v, _ := sf.Metadata("version"); len(v) <= ServeMaxText {
		who.version = v
	}
	if d, _ := sf.Metadata("device"); len(d) <= ServeMaxText {
		who.device = d
	}
	return note, who, nil
}

// MetaNote is the out.safetensors metadata key under which an exec
// program leaves a note on its run (python -m kerneldiff exec: "output
// 'page_indices' still holds only the poison byte 0xA5 …"); the harness
// copies it into the case's warnings, as a serve program's "message" on
// an "ok" reply.
const MetaNote = "note"

// ProgramNoteMax bounds a program's note (a serve "ok" reply's message,
// an exec out.safetensors' MetaNote) as the record keeps it, in bytes.
const ProgramNoteMax = 1024

// programNote renders a program's note on a run that it completed as one
// warning line, "the program says: …", at most ProgramNoteMax bytes of the
// note (cut on a rune boundary, with "…"); "" for an empty note.
func programNote(note string) string {
	note = strings.TrimSpace(difftest.CaptureOneLine(strings.ToValidUTF8(note, "\uFFFD")))
	if note == "" {
		return ""
	}
	if len(note) > ProgramNoteMax {
		cut := ProgramNoteMax
		for cut > 0 && !utf8.RuneStart(note[cut]) {
			cut--
		}
		note = note[:cut] + "…"
	}
	return difftest.ProgramSays + note
}

// execDetail is a *CaptureError's message without the file name (the
// temporary path is gone by now), or err's message.
func execDetail(err error) string {
	var ce *difftest.CaptureError
	if errors.As(err, &ce) {
		return difftest.CaptureOneLine(ce.Detail())
	}
	return err.Error()
}

func execNames(names []string) string {
	if len(names) == 0 {
		return "no tensors"
	}
	return strings.Join(names, ", ")
}

// execTail keeps the last max bytes written to it.
type execTail struct {
	max     int
	buf     []byte
	dropped bool
}

func (t *execTail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.dropped = true
	}
	return len(p), nil
}

// suffix renders the tail for a one-line message: "; stderr: ..." or "".
func (t *execTail) suffix() string {
	b := t.buf
	if t.dropped {
		// Start on a rune boundary.
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	s := difftest.CaptureOneLine(strings.ToValidUTF8(strings.TrimSpace(string(b)), "\uFFFD"))
	if s == "" {
		return "; stderr empty"
	}
	if t.dropped {
		s = "…" + s
	}
	return "; stderr: " + s
}

// notImplementedError is the crash of an exec program that exited with
// ExecNotImplemented: Run turns it into a skip ("not tested").
type notImplementedError struct{ *difftest.RunError }

func (e *notImplementedError) Unwrap() error { return e.RunError }
