// The in-process implementations ("reference", "mutant:NAME") and the
// resolution of an --impl name to an Impl (docs/architecture.md "Implementations").
package difftest

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
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
	return RunInfo{}, k.Reference(c, tensorsOf(outs))
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
		return RunInfo{}, k.Reference(c, tensorsOf(outs))
	}
	return RunInfo{}, m.Mutant.Run(c, tensorsOf(outs))
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
// "reference", every "mutant:NAME", "exec:CMD" and the registered
// factories (sorted).
func ImplNames() []string {
	names := []string{"reference"}
	registry.Lock()
	for n := range registry.impls {
		names = append(names, n)
	}
	registry.Unlock()
	sort.Strings(names[1:])
	names = append(names, "exec:CMD", "serve:CMD")
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

// NewImpl resolves an --impl value: "reference", "mutant:NAME", "exec:CMD"
// (CMD is split into words by SplitCommand and its program checked by
// OpenExecImpl), "serve:CMD" (started here: NewServeImpl) or a registered
// factory name such as "cuda". An implementation that cannot run here (an
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
	case strings.HasPrefix(name, "exec:"):
		cmd := strings.TrimPrefix(name, "exec:")
		if strings.TrimSpace(cmd) == "" {
			return nil, fmt.Errorf("%w %q: exec: needs a command", ErrUnknownImpl, name)
		}
		return OpenExecImpl(cmd, opts.Timeout)
	case strings.HasPrefix(name, "serve:"):
		cmd := strings.TrimPrefix(name, "serve:")
		if strings.TrimSpace(cmd) == "" {
			return nil, fmt.Errorf("%w %q: serve: needs a command", ErrUnknownImpl, name)
		}
		ctx := opts.Context
		if ctx == nil {
			ctx = context.Background()
		}
		return NewServeImplContext(ctx, cmd, opts.Timeout)
	}
	f, ok := LookupImpl(name)
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownImpl, name, strings.Join(ImplNames(), ", "))
	}
	return f(opts)
}

// runGuarded calls impl.Run with a per-run time-out and turns the ways an
// implementation can fail into a *RunError with its class: a panic is
// Crash (with the panicking frame), a run past the deadline is Timeout, a
// plain error is Crash. An in-process implementation that ignores ctx
// cannot be stopped: on time-out its goroutine is abandoned, still
// holding its own buffers, which the harness never reuses.
func runGuarded(ctx context.Context, impl Impl, k Kernel, c *Case, outs []*Buffer, timeout time.Duration) (RunInfo, *RunError) {
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
			return RunInfo{}, &RunError{Class: Timeout, Msg: fmt.Sprintf("ran past the %v time-out", timeout)}
		}
		return RunInfo{}, &RunError{Class: Timeout, Msg: "interrupted: " + ctx.Err().Error()}
	}
}

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
