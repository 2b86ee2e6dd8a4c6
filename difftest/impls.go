// The in-process implementations ("reference", "mutant:NAME") and the
// resolution of an --impl name to an Impl (docs/architecture.md "Implementations").
package difftest

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"
)

// ReferenceImpl runs each kernel's Go reference (Kernel.Reference). It
// must pass every case; `difftest selftest` checks that it does.
type ReferenceImpl struct{}

// Name returns "reference".
func (ReferenceImpl) Name() string { return "reference" }

// Run computes the reference outputs into outs.
func (ReferenceImpl) Run(_ context.Context, k Kernel, c *Case, outs []*Buffer) (RunInfo, error) {
	return RunInfo{}, k.Reference(c, TensorsOf(outs))
}

// Close does nothing.
func (ReferenceImpl) Close() error { return nil }

// MutantImpl runs one catalog mutant (docs/mutants.md) for the cases of its
// own kernel, and the reference for the cases of every other kernel: the
// mutant is the whole tool with exactly one fault.
type MutantImpl struct {
	Kernel string // the mutant's kernel
	Mutant Mutant
}

// Name returns "mutant:NAME".
func (m MutantImpl) Name() string { return "mutant:" + m.Mutant.Name }

// Run runs the mutant on cases of its kernel, the reference on others.
func (m MutantImpl) Run(_ context.Context, k Kernel, c *Case, outs []*Buffer) (RunInfo, error) {
	if k.Name() != m.Kernel {
		return RunInfo{}, k.Reference(c, TensorsOf(outs))
	}
	return RunInfo{}, m.Mutant.Run(c, TensorsOf(outs))
}

// Close does nothing.
func (MutantImpl) Close() error { return nil }

// FindMutant returns the catalog mutant with that name and its kernel.
func FindMutant(name string) (Kernel, Mutant, bool) {
	for _, k := range Kernels() {
		for _, m := range k.Mutants() {
			if m.Name == name {
				return k, m, true
			}
		}
	}
	return nil, Mutant{}, false
}

// ImplNames lists the implementation names this build can resolve:
// "reference", the registered factories (sorted), PREFIX+ARG for each
// registered prefix (sorted: "exec:CMD", "serve:CMD", with bridge
// "cudasrc:PATH") and every "mutant:NAME".
func ImplNames() []string {
	names := append([]string{"reference"}, impls.Names()...)
	for _, p := range implPrefixes() {
		names = append(names, p.prefix+p.arg)
	}
	for _, k := range Kernels() {
		for _, m := range k.Mutants() {
			names = append(names, "mutant:"+m.Name)
		}
	}
	return names
}

// DefaultImpl is the implementation `difftest run` uses without --impl:
// "cuda" when this build registers it, otherwise "" (the caller must ask
// for one).
func DefaultImpl() string {
	if _, ok := LookupImpl("cuda"); ok {
		return "cuda"
	}
	return ""
}

// ErrUnknownImpl is wrapped by NewImpl's error for a name it cannot resolve.
var ErrUnknownImpl = errors.New("unknown implementation")

// NewImpl resolves an --impl value: "reference", "mutant:NAME", a
// registered prefix and its command ("exec:CMD" and "serve:CMD", which
// difftest/proc registers: RegisterImplPrefix) or a registered factory
// name such as "cuda". An implementation that cannot run here (an
// exec or serve program that cannot be started included) is a *RunError
// of class Unavailable; an unknown name wraps ErrUnknownImpl.
func NewImpl(name string, opts ImplOptions) (Impl, error) {
	switch {
	case name == "reference":
		return ReferenceImpl{}, nil
	case strings.HasPrefix(name, "mutant:"):
		k, m, ok := FindMutant(strings.TrimPrefix(name, "mutant:"))
		if !ok {
			return nil, fmt.Errorf("%w %q: no such mutant (see `difftest list mutants`)", ErrUnknownImpl, name)
		}
		return MutantImpl{Kernel: k.Name(), Mutant: m}, nil
	}
	for _, p := range implPrefixes() {
		if strings.HasPrefix(name, p.prefix) {
			arg := strings.TrimPrefix(name, p.prefix)
			if strings.TrimSpace(arg) == "" {
				what := "a command"
				if p.arg != "CMD" {
					what = "a " + strings.ToLower(p.arg)
				}
				return nil, fmt.Errorf("%w %q: %s needs %s", ErrUnknownImpl, name, p.prefix, what)
			}
			return p.open(arg, opts)
		}
	}
	f, ok := LookupImpl(name)
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownImpl, name, strings.Join(ImplNames(), ", "))
	}
	return f(opts)
}

// RunGuarded calls impl.Run with a per-run time-out and turns the ways an
// implementation can fail into a *RunError with its class: a panic is
// Crash (with the panicking frame), a run past the deadline is Timeout, a
// plain error is Crash. An in-process implementation that ignores ctx
// cannot be stopped: on time-out its goroutine is abandoned, still
// holding its own buffers, which the harness never reuses.
func RunGuarded(ctx context.Context, impl Impl, k Kernel, c *Case, outs []*Buffer, timeout time.Duration) (RunInfo, *RunError) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	type result struct {
		info RunInfo
		err  error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: &RunError{Class: Crash, Msg: fmt.Sprintf("panic: %v (%s)", p, panicFrame(debug.Stack()))}}
			}
		}()
		info, err := impl.Run(ctx, k, c, outs)
		done <- result{info, err}
	}()
	select {
	case r := <-done:
		if r.err == nil {
			return r.info, nil
		}
		var re *RunError
		if errors.As(r.err, &re) {
			return r.info, re
		}
		if errors.Is(r.err, context.DeadlineExceeded) {
			return r.info, &RunError{Class: Timeout, Msg: fmt.Sprintf("ran past the %v time-out", timeout)}
		}
		return r.info, &RunError{Class: Crash, Msg: r.err.Error()}
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// An implementation that honours ctx stops its run and says
			// what it stopped (the GPU worker's or program's last
			// output): wait briefly for that, the better message.
			select {
			case r := <-done:
				var re *RunError
				if errors.As(r.err, &re) && re.Class == Timeout {
					return r.info, re
				}
			case <-time.After(timeoutReportGrace):
			}
			return RunInfo{}, &RunError{Class: Timeout, Msg: fmt.Sprintf("ran past the %v time-out", timeout)}
		}
		return RunInfo{}, &RunError{Class: Timeout, Msg: "interrupted: " + ctx.Err().Error()}
	}
}

// timeoutReportGrace is how long RunGuarded waits, after a case's
// time-out, for the implementation's own time-out report.
const timeoutReportGrace = 2 * time.Second

// panicFrame picks the first stack frame below the runtime's panic
// machinery: "file.go:123".
func panicFrame(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	seenPanic := false
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "panic(") {
			seenPanic = true
			continue
		}
		if seenPanic && strings.Contains(l, ".go:") && !strings.Contains(l, "/runtime/") {
			if i := strings.LastIndex(l, "/"); i >= 0 {
				l = l[i+1:]
			}
			if i := strings.Index(l, " +0x"); i >= 0 {
				l = l[:i]
			}
			return l
		}
	}
	return "no frame"
}

// ImplOpener opens the implementation that an --impl value names after a
// registered prefix: arg is the rest of the value ("python3 impl.py" for
// "exec:python3 impl.py"), never blank. An implementation that cannot run
// here is a *RunError of class Unavailable.
type ImplOpener func(arg string, opts ImplOptions) (Impl, error)

type implPrefix struct {
	prefix string
	arg    string // what follows the prefix, for ImplNames: "CMD", "PATH"
	open   ImplOpener
}

// RegisterImplPrefix adds a family of implementations named by a prefix
// and a command, such as "exec:" and "serve:" (difftest/proc registers
// both). NewImpl hands the rest of the value to open; an empty or blank
// rest is an ErrUnknownImpl ("PREFIX needs a command", or "a path" for an
// ARG of PATH). It panics on a duplicate prefix.
func RegisterImplPrefix(prefix string, open ImplOpener) {
	RegisterImplPrefixArg(prefix, "CMD", open)
}

// RegisterImplPrefixArg is RegisterImplPrefix for a family whose argument
// is not a command: arg names it in ImplNames ("PATH" for bridge's
// "cudasrc:PATH").
func RegisterImplPrefixArg(prefix, arg string, open ImplOpener) {
	prefixes.Add(prefix, implPrefix{prefix, arg, open})
}

// implPrefixes returns the registered prefixes, sorted.
func implPrefixes() []implPrefix { return prefixes.Values() }
