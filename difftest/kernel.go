package difftest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest/registry"
)

// GeneratorVersion identifies the input generators (docs/running.md): the
// bit-to-value transforms of package rng and every kernel's generator built
// on them. Any change to how a kernel turns Philox words (or anything else)
// into input values bumps it; it is recorded in every report and capture.
//
//	1  the first generators
//	2  norm_rope_store's YaRN freqs tables: base frequencies correctly
//	   rounded (math/big) and sin/cos by detmath.SinCos, so the tables are
//	   the same on every host (with math.Pow the three "positions" cases
//	   of the default suite drew other inputs on arm64 than on amd64;
//	   math.Sin and math.Cos could have too)
const GeneratorVersion = 2

// CaseSpec is one entry of a suite: which kernel, which input family, and
// the family's parameters as decoded from the suite file (TOML values:
// int64, float64, bool, string, []any).
type CaseSpec struct {
	Kernel string         `toml:"kernel" json:"kernel"`
	Family string         `toml:"family" json:"family"`
	Name   string         `toml:"name" json:"name"` // unique within the kernel; the case id is Kernel + "/" + Name
	Params map[string]any `toml:"params" json:"params,omitempty"`
}

// ID returns the case id, Kernel + "/" + Name.
func (s CaseSpec) ID() string { return s.Kernel + "/" + s.Name }

// OutputSpec describes one output tensor of a case. InOut outputs (the
// paged cache) also arrive as an input: the implementation receives them
// filled with the canary and must keep every byte it does not own.
type OutputSpec struct {
	Name  string
	DType DType
	Shape []int
	InOut bool
}

// Bytes returns the output's size in bytes.
func (o OutputSpec) Bytes() int {
	n := o.DType.Size()
	for _, d := range o.Shape {
		n *= d
	}
	return n
}

// Case is one fully materialised test case: the same Inputs bytes go to
// every implementation.
type Case struct {
	ID      string       // kernel/name, as in CaseSpec.ID
	Kernel  string       // kernel name, e.g. "topk_transform"
	Family  string       // input family
	Seed    uint64       // suite seed the inputs were drawn from
	Key     uint64       // Philox key derived from (Seed, ID)
	Params  any          // the kernel's own parameter struct; JSON-marshalable
	Inputs  []*Tensor    // contract order, contract names
	Outputs []OutputSpec // contract order, contract names

	// Generator is the GeneratorVersion that drew the inputs as a
	// replayed capture's "generator" metadata states it; 0 for a case
	// this build drew (GeneratorVersion) or a capture that does not say.
	Generator int
	// Impl is the --impl a replayed capture was saved from (its "impl"
	// metadata, SaveCapture), which `difftest replay` runs when no --impl
	// is given; empty for a case this build drew or a capture of a live
	// call (kerneldiff.capture, record).
	Impl string
}

// Input returns the input tensor with the given contract name, or nil.
func (c *Case) Input(name string) *Tensor {
	for _, t := range c.Inputs {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Range is a half-open byte range [Off, Off+Len) of one output tensor.
type Range struct{ Off, Len int }

// Class is a failure class (docs/running.md). The empty class means pass.
type Class string

// Failure classes. Kernel comparators use Mismatch and NonFinite; the
// harness assigns the others.
const (
	Pass             Class = ""
	Mismatch         Class = "mismatch"         // outputs differ from the reference beyond the contract's tolerance
	NonFinite        Class = "non-finite"       // NaN/Inf where the reference is finite
	Unwritten        Class = "unwritten"        // poison left where the contract says "written"
	Guard            Class = "guard"            // a guard band or an untouched (canary) byte changed
	InputModified    Class = "input-modified"   // an input's SHA-256 changed across the run
	Nondeterministic Class = "nondeterministic" // runs with poison A and B disagree
	IllegalAddress   Class = "illegal-address"  // GPU memory fault
	Timeout          Class = "timeout"          // ran past the per-case time-out
	LaunchError      Class = "launch-error"     // the kernel could not be launched
	Crash            Class = "crash"            // implementation panicked, or its process died / exited non-zero
	MissingOutput    Class = "missing-output"   // an exec implementation wrote no tensor of that name
	BadOutput        Class = "bad-output"       // an output of the wrong dtype or shape
	InvalidCase      Class = "invalid-input"    // the case broke its contract and was not run
	Unavailable      Class = "unavailable"      // the implementation cannot run here (no driver, no image)
)

// Element is one compared element in a failure report.
type Element struct {
	Tensor string `json:"tensor"`
	Index  string `json:"index"` // e.g. "[3][17]" or "row 3 pos 17"
	Got    string `json:"got"`
	Want   string `json:"want"`
	// Ratio is |d| / allowed for an element compared within a tolerance
	// (> 1 fails; 0 is an exact match), nil for one compared exactly (a
	// top-k index, a canary byte), which has no ratio: reports print and
	// write one only where it is set.
	Ratio *float64 `json:"ratio,omitempty"`
}

// RatioOf returns a pointer to a copy of r, for Element.Ratio.
func RatioOf(r float64) *float64 { return &r }

// Result is a comparator's verdict on one case.
type Result struct {
	Class   Class          `json:"class,omitempty"`
	Message string         `json:"message,omitempty"` // one line: which element, got, want
	Metrics map[string]any `json:"metrics,omitempty"`
	Worst   []Element      `json:"worst,omitempty"`
	// Warnings are notes on a result that is not a failure, e.g. "no
	// written token has a specified value: only the canaries were
	// checked"; the runner copies them into the record.
	Warnings []string `json:"warnings,omitempty"`
}

// Failed reports whether the result is a failure.
func (r Result) Failed() bool { return r.Class != Pass }

// CheckOneOutput is the first step of a comparator whose contract has one
// output, named name: got and want must each hold exactly one tensor, and
// check (the output's dtype and shape rule) must accept it. It returns a
// BadOutput result saying which rule failed and ok false, or ok true.
func CheckOneOutput(name string, got, want []*Tensor, check func(*Tensor) error) (r Result, ok bool) {
	for _, ts := range [][]*Tensor{got, want} {
		if len(ts) != 1 {
			return Result{Class: BadOutput, Message: fmt.Sprintf("want 1 output (%s), got %d", name, len(ts))}, false
		}
		if err := check(ts[0]); err != nil {
			return Result{Class: BadOutput, Message: err.Error()}, false
		}
	}
	return Result{}, true
}

// Kernel is one kernel contract: generation, validation, reference,
// comparison and its mutant catalog. Kernel packages implement it and call
// RegisterKernel from init; the harness never imports them.
type Kernel interface {
	// Name is the contract name, e.g. "topk_transform".
	Name() string
	// Families lists the input families NewCase accepts.
	Families() []string
	// NewCase draws the inputs of spec from the Philox stream keyed by key
	// (see rng.CaseKey). Unknown families or parameters are errors.
	NewCase(spec CaseSpec, seed, key uint64) (*Case, error)
	// FromTensors rebuilds a case from a capture file's tensors and its
	// params JSON (replay). It reads the tensors' names, dtypes and
	// shapes, never their Data: ReadCapture calls it with every tensor as
	// the file's header declares it and Data nil, and reads the bytes of
	// the returned inputs afterwards. So it must check each input's dtype
	// and shape against the params and the kernel's size limits (nothing
	// is read before it is bounded), and return the inputs with the
	// declared names, dtypes and shapes.
	FromTensors(id string, params json.RawMessage, tensors map[string]*Tensor) (*Case, error)
	// Validate checks the contract's preconditions; it returns an
	// *InputError naming the tensor, index and rule.
	Validate(c *Case) error
	// Reference computes the exact outputs into outs (pre-filled with the
	// canary; the reference writes only what the contract says is written).
	Reference(c *Case, outs []*Tensor) error
	// Written lists, per output, the byte ranges the contract says an
	// implementation writes. Every other byte must keep the canary.
	Written(c *Case) [][]Range
	// Equivalent reports whether two runs' outputs are the same result
	// (top-k as sets, stores bytewise over Written); nil if so.
	Equivalent(c *Case, a, b []*Tensor) error
	// Check compares got with the reference's want.
	Check(c *Case, got, want []*Tensor) Result
	// Mutants returns the catalog of docs/mutants.md for this kernel.
	Mutants() []Mutant
}

// SpecChecker is an optional interface of a Kernel: CheckSpec reports the
// error NewCase would return for spec (an unknown family or parameter, a
// mistyped or out-of-range value), without drawing any input. It must
// return nil exactly when NewCase would succeed for every seed. Loading a
// suite checks every case with it (suite.CheckCaseSpec) before any case runs; a
// kernel without it has each case drawn once and discarded instead.
type SpecChecker interface {
	CheckSpec(spec CaseSpec) error
}

// Unspecifier is an optional interface of a Kernel: Unspecified lists, per
// output, the byte ranges whose content the contract leaves unspecified,
// such as indexer_logits' positions past a row's length without `clean`
// (DeepGEMM's clean_logits = false, docs/contracts/indexer_logits.md). An implementation may
// write them or leave them: the runner exempts them from the canary check
// of the bytes outside Written, and Written must not list them, so they are
// not checked for poison either. The guard bands around the output are
// checked as always. Nil, or a kernel without the interface, means none.
type Unspecifier interface {
	Unspecified(c *Case) [][]Range
}

// FamilyDescriber is an optional interface of a Kernel: DescribeFamilies
// documents every input family NewCase accepts (the names Families
// returns, in that order) with the suite params NewCase reads for it, so
// that `difftest list families` can show suite authors what to write.
type FamilyDescriber interface {
	DescribeFamilies() []FamilyInfo
}

// FamilyInfo describes one input family: its name as in suite files, a
// one-line description of the inputs it draws and the bug class it
// guards, and every suite param NewCase accepts for it.
type FamilyInfo struct {
	Name   string
	Doc    string
	Params []ParamInfo
}

// ParamInfo describes one suite param: its key in CaseSpec.Params, one
// line giving its type, range and default, and whether a case must give
// it (NewCase fails without it).
type ParamInfo struct {
	Name     string
	Doc      string
	Required bool
}

// Mutant is a Go implementation of a kernel with one known fault
// (docs/mutants.md).
type Mutant struct {
	Name  string // catalog name, e.g. "topk-tie-hole"
	Fault string // one line: what is wrong
	Run   func(c *Case, outs []*Tensor) error
	// Applies, when set, reports whether the fault can show on a case of
	// spec at all (an FP4-only fault on an FP8 store is the correct
	// kernel there). The selftest skips the cases it rules out, so a
	// mutant reaches the cases that catch it without running the whole
	// suite first; nil means every case. It must not rule out a case on
	// which the mutant's outputs may differ from a correct kernel's.
	Applies func(spec CaseSpec) bool
}

// AppliesTo reports whether m's fault can show on a case of spec: Applies,
// or true when m has none.
func (m Mutant) AppliesTo(spec CaseSpec) bool { return m.Applies == nil || m.Applies(spec) }

// Buffer is one output as handed to an implementation: Tensor.Data is the
// window Full[Guard : Guard+n], with guard bands of poison on both sides.
// Go implementations write Tensor.Data; device implementations copy Full.
type Buffer struct {
	*Tensor
	Full  []byte
	Guard int
}

// RunInfo is what an implementation reports about one run.
type RunInfo struct {
	KernelTime time.Duration // device time between events; 0 if not measured
	// Warnings are things the implementation noticed that are no verdict
	// (an exec program that left processes behind); they go into the
	// case's record, once each, also when Run returns an error.
	Warnings []string
}

// RunError is an implementation failure with its class (illegal-address,
// timeout, launch-error, crash, missing-output, bad-output, unavailable).
type RunError struct {
	Class Class
	Msg   string
	// Skip, with Class Unavailable, says that only this case cannot run
	// here (a serve program that does not implement its kernel): the
	// runner records it as not tested and goes on, where a plain
	// Unavailable stops the run.
	Skip bool
	// Lost says the implementation's device is gone: its worker died and
	// could not be started again, so no later case can run on it. A
	// single-device run fails the case with Class and goes on (each later
	// case tries again); RunPool retires the device and gives the case to
	// the others.
	Lost bool
}

// ProgramSays opens the warning that carries an exec or serve program's
// own note on a run it completed ("the program says: output 'b' still
// holds only the poison: fill it in place"). Reports show such a warning
// beside the failure it explains, not only among the footnotes.
const ProgramSays = "the program says: "

// Error returns "CLASS: MSG".
func (e *RunError) Error() string { return fmt.Sprintf("%s: %s", e.Class, e.Msg) }

// Impl runs a kernel on a case. Implementations: "reference",
// "mutant:NAME", "exec:CMD", "cuda".
type Impl interface {
	Name() string
	// Run computes the outputs of c into outs. It must not modify c.Inputs.
	Run(ctx context.Context, k Kernel, c *Case, outs []*Buffer) (RunInfo, error)
	// Close releases resources (worker processes, device memory).
	Close() error
}

// ImplOptions carries the run flags an implementation factory may need.
type ImplOptions struct {
	Fatbin  string        // --fatbin
	Device  int           // --device
	Timeout time.Duration // --timeout, per case
	// Baseline is bench's --baseline FATBIN for cuda and emu: a second
	// build loaded beside Fatbin (bench.BaselineProvider); "" for none.
	Baseline string
	// Devices (more than one), or AllDevices, asks cuda and emu for one
	// worker per device (--device 0,2,3 or --device all): the factory
	// returns a Pool. Device is then ignored.
	Devices    []int
	AllDevices bool
	// Context, when set, bounds the start of the implementation: a serve
	// program's wait for its hello ends when it does (a person pressed
	// Ctrl-C). nil is context.Background().
	Context context.Context
	// BuildTimeout bounds one build of a bring-your-own adapter
	// (cudasrc:, cudasrc-emu:; --build-timeout); 0 is the default.
	BuildTimeout time.Duration
	// Log, when set, receives progress lines of a long start, such as an
	// adapter build still running after a few seconds; nil prints none.
	Log io.Writer
}

// ImplFactory builds the named implementation ("cuda", ...). An
// implementation that cannot run here returns a *RunError of class
// Unavailable, which the CLI maps to exit code 125.
type ImplFactory func(opts ImplOptions) (Impl, error)

var (
	kernels  = registry.Table[Kernel]{Kind: "difftest: kernel"}
	impls    = registry.Table[ImplFactory]{Kind: "difftest: impl"}
	prefixes = registry.Table[implPrefix]{Kind: "difftest: impl prefix"}
)

// RegisterKernel adds k to the registry; called from a kernel package's
// init. It panics on a duplicate name (a programming error).
func RegisterKernel(k Kernel) { kernels.Add(k.Name(), k) }

// LookupKernel returns the registered kernel with that name.
func LookupKernel(name string) (Kernel, bool) { return kernels.Get(name) }

// Kernels returns every registered kernel, sorted by name.
func Kernels() []Kernel { return kernels.Values() }

// RegisterImpl adds a named implementation factory (bridge registers
// "cuda"). It panics on a duplicate name.
func RegisterImpl(name string, f ImplFactory) { impls.Add(name, f) }

// LookupImpl returns the registered factory with that name.
func LookupImpl(name string) (ImplFactory, bool) { return impls.Get(name) }
