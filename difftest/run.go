// The suite loop: generate each selected case from (seed, case id), run
// it through the pipeline, hand its record to the reports as it ends.
package difftest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// Config describes one `difftest run`.
type Config struct {
	Suite    string     // suite name or file, for records and replay commands
	Items    []Item     // the items to run, when Source is nil
	Source   ItemSource // when set, the items, produced one at a time as they run (Suite.Select)
	Impl     Impl
	ImplName string        // the --impl value, for records and replay commands
	Timeout  time.Duration // per run of the implementation; 0 = none; negative is an error (Run)
	FailFast bool          // stop after the first failing case

	// MaxMemory is the memory budget of one case in bytes (--max-memory;
	// 0 = none): a case whose kernel sizes it (Footprinter) over the
	// budget is refused with a *SuiteError wrapping a *BudgetError (exit
	// 2) before its inputs are drawn.
	MaxMemory int64

	// SaveFailures, when not empty, is a folder where each failing case
	// is written as a capture file (WriteCapture) for `difftest replay`.
	SaveFailures string
	// Replay builds a record's replay command; nil leaves it empty.
	Replay func(rec *Record) string
	// ReplayCapture builds the command that replays a record's saved
	// capture (rec.Capture); nil leaves report.ReplayCaptureCommand's default.
	ReplayCapture func(rec *Record) string
	// OnRecord receives each record as its case ends (reports stream
	// from here); an error stops the run and is returned.
	OnRecord func(rec *Record) error
	// Progress, when set, is called after each case.
	Progress func(done, total, failed int, elapsed time.Duration)
	// Start, when set, is when the run began for its summary: the CLI
	// sets it before it opens the implementation, so that a serve
	// program's start-up (until its hello) counts in Summary.Elapsed.
	// Zero is when Run (or RunPool) is called.
	Start time.Time
	// Diagnose, when set, is called for each failing case with the
	// outputs of its run (out.Got and out.Want are nil where the run did
	// not get that far) and fills the record's Diagnosis and
	// DiagnosisNote (difftest/triage: DiagnoseConfig.DiagnoseRecord, within
	// its budgets); nil diagnoses nothing.
	Diagnose func(ctx context.Context, k Kernel, c *Case, out Outcome, rec *Record)
}

// GenerateCase draws the inputs of item it (key = rng.CaseKey(seed, id))
// and validates them. A NewCase error is a *SuiteError (exit 2): the
// suite asked for something its kernel rejects (an unknown family or
// parameter, a parameter out of range). Generated inputs that fail
// Validate are an *InternalError (exit 125): the kernel's generator broke
// its own contract, so the commit cannot be tested.
//
// An item that carries its Case (replay) is validated, not drawn; its
// validation error is returned as it is (an *InputError, exit 2).
func GenerateCase(it Item) (Kernel, *Case, error) {
	if it.Case != nil {
		k, ok := LookupKernel(it.Case.Kernel)
		if !ok {
			return nil, nil, fmt.Errorf("%w: case %s: unknown kernel %q", ErrInvalidInput, it.Case.ID, it.Case.Kernel)
		}
		if err := k.Validate(it.Case); err != nil {
			return nil, nil, err
		}
		return k, it.Case, nil
	}
	if it.Capture != "" {
		c, _, err := ReadCapture(it.Capture)
		if err != nil {
			return nil, nil, err
		}
		k, _ := LookupKernel(c.Kernel) // ReadCapture found it
		c.ID = it.Spec.ID()            // what --run matched, whatever the file's "case" says
		return k, c, nil
	}
	spec := it.Spec
	k, ok := LookupKernel(spec.Kernel)
	if !ok {
		return nil, nil, &SuiteError{File: it.File, Case: spec.ID(), Err: fmt.Errorf("unknown kernel %q", spec.Kernel)}
	}
	c, err := k.NewCase(spec, it.Seed, rng.CaseKey(it.Seed, spec.ID()))
	if err != nil {
		return nil, nil, &SuiteError{File: it.File, Case: spec.ID(), Err: err}
	}
	if err := k.Validate(c); err != nil {
		return nil, nil, &InternalError{Case: spec.ID(), Err: fmt.Errorf("the generator drew inputs its own contract rejects (seed %d): %w", it.Seed, err)}
	}
	return k, c, nil
}

// begin checks cfg before a run (Run, RunPool) and gives the items it
// runs, cfg.Source or else cfg.Items, and the summary it starts from. A
// negative Timeout is an error, which the summary's Aborted repeats.
func (cfg Config) begin() (ItemSource, Summary, error) {
	if cfg.Timeout < 0 {
		err := fmt.Errorf("time-out %v is negative (0 = no time-out)", cfg.Timeout)
		return nil, Summary{Aborted: err.Error()}, err
	}
	if cfg.Source != nil {
		return cfg.Source, Summary{}, nil
	}
	return ItemList(cfg.Items), Summary{}, nil
}

// Run runs the items (cfg.Source, or else cfg.Items) one after another,
// generating each case as it is reached, and returns the summary. It stops
// early on FailFast, on a *SuiteError (exit 2), on an implementation that
// reports itself Unavailable (a *RunError, exit 125 unless a case already
// failed), on an *InternalError (exit 125), or when ctx is cancelled: then
// the error is context.Cause(ctx) (an *Interrupted when a person stopped
// the run, exit 128 + signal) and the case that was running is not
// counted. The summary counts every record handed to OnRecord;
// Summary.Aborted says why it stopped early. A negative cfg.Timeout runs nothing and is an
// error (the CLI rejects it first, as a usage error).
//
// Items from a loaded suite have had their parameters checked
// (suite.ParseSuite); a spec the kernel rejects that reaches Run anyway stops
// it, with a *SuiteError, when its case is reached.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	start := cfg.startTime()
	src, sum, err := cfg.begin()
	if err != nil {
		return sum, err
	}
	cr := &CaseRun{Impl: cfg.Impl, Timeout: cfg.Timeout}
	total, n := src.Len(), 0
	for it := range src.All() {
		n++
		if ctx.Err() != nil {
			err := context.Cause(ctx)
			sum.Elapsed = time.Since(start)
			sum.Aborted = err.Error()
			return sum, err
		}
		rec, err := runItem(ctx, cr, cfg, it)
		if err != nil && ctx.Err() != nil {
			// Stopped from outside (a signal: *Interrupted): the cause
			// says why, not the "context canceled" of whatever was running.
			err = context.Cause(ctx)
		}
		if err != nil {
			sum.Elapsed = time.Since(start)
			sum.Aborted = err.Error()
			return sum, err
		}
		sum.Add(rec)
		if cfg.OnRecord != nil {
			if err := cfg.OnRecord(rec); err != nil {
				sum.Elapsed = time.Since(start)
				sum.Aborted = err.Error()
				return sum, err
			}
		}
		if cfg.Progress != nil {
			cfg.Progress(n, total, sum.Failed, time.Since(start))
		}
		if cfg.FailFast && rec.Failed() {
			sum.Aborted = "--failfast after " + rec.Case
			break
		}
	}
	sum.Elapsed = time.Since(start)
	return sum, nil
}

// startTime is cfg.Start, or now when it is zero.
func (cfg Config) startTime() time.Time {
	if cfg.Start.IsZero() {
		return time.Now()
	}
	return cfg.Start
}

// KernelOfferer is an optional interface of an Impl that knows, before
// any case is drawn, which kernels it runs: a serve program names them in
// its hello. Run draws no inputs for a case whose kernel it does not
// offer, nor for a chained case none of whose stage kernels it offers
// (when the chain lists them: ChainStages); such a case is recorded as
// not tested (VerdictSkip, class Unavailable) with the reason Offers
// gives, and costs nothing but its record.
type KernelOfferer interface {
	// Offers reports whether the implementation runs kernel; when it
	// does not, why says so in one line.
	Offers(kernel string) (ok bool, why string)
}

// ChainStages is an optional interface of a Chain kernel: the kernels its
// stages run, in order, known without drawing a case.
type ChainStages interface {
	StageKernels() []string
}

// notOffered returns the skip record of item it when impl is a
// KernelOfferer that offers neither its kernel nor, for a chain that
// lists its stages, any of them; nil when the case is to be drawn and
// run. The record has the item's identity (its params are the suite's,
// the case being undrawn) and no input digest.
func notOffered(impl Impl, it Item, implName string) *Record {
	o, ok := impl.(KernelOfferer)
	if !ok {
		return nil
	}
	name, id, family, seed := it.Spec.Kernel, it.Spec.ID(), it.Spec.Family, it.Seed
	if it.Case != nil {
		name, id, family, seed = it.Case.Kernel, it.Case.ID, it.Case.Family, it.Case.Seed
	}
	offered, why := o.Offers(name)
	if offered {
		return nil
	}
	k, known := LookupKernel(name)
	if !known {
		return nil // GenerateCase says what is wrong
	}
	if _, chain := k.(Chain); chain {
		cs, lists := k.(ChainStages)
		if !lists {
			return nil
		}
		stages := cs.StageKernels()
		for _, s := range stages {
			if ok, _ := o.Offers(s); ok {
				return nil
			}
		}
		why = noStageOffered(stages)
	}
	rec := &Record{
		Type: "case", Index: it.Index, Case: id, Kernel: name, Family: family, Seed: seed,
		GeneratorVersion: GeneratorVersion, Impl: implName,
		Verdict: VerdictSkip, Class: Unavailable, Message: why,
	}
	if it.Case != nil {
		rec.Params = MarshalParams(it.Case)
	} else if len(it.Spec.Params) > 0 {
		if b, err := json.Marshal(it.Spec.Params); err == nil {
			rec.Params = b
		}
	}
	return rec
}

func runItem(ctx context.Context, cr *CaseRun, cfg Config, it Item) (*Record, error) {
	t0 := time.Now()
	if rec := notOffered(cr.Impl, it, cfg.ImplName); rec != nil {
		rec.WallTime = time.Since(t0)
		if cfg.Replay != nil {
			rec.Replay = cfg.Replay(rec)
		}
		return rec, nil
	}
	if it.Case == nil && it.Capture == "" {
		if k, ok := LookupKernel(it.Spec.Kernel); ok {
			if err := CheckBudget(k, it.Spec, cfg.MaxMemory); err != nil {
				return nil, &SuiteError{File: it.File, Case: it.Spec.ID(), Err: err}
			}
		}
	}
	k, c, err := GenerateCase(it)
	if err != nil {
		return nil, err
	}
	rec := NewRecord(c, cfg.ImplName)
	rec.Index = it.Index
	out, err := cr.RunCase(ctx, k, c, rec)
	if err != nil {
		return nil, err
	}
	if rec.Failed() && cfg.Diagnose != nil {
		cfg.Diagnose(ctx, k, c, out, rec)
	}
	rec.WallTime = time.Since(t0)
	rec.KeyMetric = KeyMetric(k, rec)
	if rec.Failed() && cfg.SaveFailures != "" {
		path, err := SaveCapture(cfg.SaveFailures, c, out, cfg.ImplName)
		if err != nil {
			rec.Warnings = append(rec.Warnings, "could not save the capture: "+err.Error())
		} else {
			rec.Capture = path
			if cfg.ReplayCapture != nil {
				rec.ReplayCapture = cfg.ReplayCapture(rec)
			}
		}
	}
	if cfg.Replay != nil {
		rec.Replay = cfg.Replay(rec)
	}
	return rec, nil
}

// NewRecord starts the record of case c under the named implementation
// (identity fields only; RunCase fills the verdict). GeneratorVersion is
// the version that drew c's inputs: c.Generator when it is set (a
// replayed capture), else this build's; when they differ the record
// carries a warning (GeneratorWarning).
func NewRecord(c *Case, impl string) *Record {
	rec := &Record{
		Type:             "case",
		Case:             c.ID,
		Kernel:           c.Kernel,
		Family:           c.Family,
		Params:           MarshalParams(c),
		Seed:             c.Seed,
		GeneratorVersion: GeneratorVersion,
		Impl:             impl,
	}
	if w := GeneratorWarning(c); w != "" {
		rec.GeneratorVersion = c.Generator
		rec.Warnings = append(rec.Warnings, w)
	}
	return rec
}

// GeneratorWarning returns, for a case whose inputs another generator
// version drew (c.Generator set and not GeneratorVersion), a one-line
// warning that the inputs may differ from what this build draws for the
// same seed and case id; "" otherwise. The case itself runs on its own
// bytes either way.
func GeneratorWarning(c *Case) string {
	if c.Generator == 0 || c.Generator == GeneratorVersion {
		return ""
	}
	return fmt.Sprintf("the inputs were drawn by generator version %d, this build's is %d: they are replayed as captured, but `run --seed %d` of case %s may draw different inputs in this build",
		c.Generator, GeneratorVersion, c.Seed, c.ID)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// SaveCapture writes case c as dir/KERNEL__NAME__seedN.safetensors with
// the canary state of its InOut outputs (PoisonA) and, for inspection,
// the implementation's outputs of the first run (GotPrefix) and the
// reference's (WantPrefix) when the run got that far, and impl (the
// --impl value; "" for none) as its "impl" metadata, the implementation
// `difftest replay` runs by default. It returns the path.
func SaveCapture(dir string, c *Case, out Outcome, impl string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	name := strings.TrimPrefix(c.ID, c.Kernel+"/")
	file := fmt.Sprintf("%s__%s__seed%d.safetensors", unsafeName.ReplaceAllString(c.Kernel, "_"), unsafeName.ReplaceAllString(name, "_"), c.Seed)
	path := filepath.Join(dir, file)
	var extra []*Tensor
	canary := PoisonedTensors(c, PoisonA)
	for i, o := range c.Outputs {
		if o.InOut {
			extra = append(extra, canary[i])
		}
	}
	for _, side := range []struct {
		prefix string
		ts     []*Tensor
	}{{GotPrefix, out.Got}, {WantPrefix, out.Want}} {
		for _, t := range side.ts {
			named := *t
			named.Name = side.prefix + t.Name
			extra = append(extra, &named)
		}
	}
	saved := *c
	saved.Impl = impl
	if err := WriteCapture(path, &saved, extra); err != nil {
		return "", err
	}
	return path, nil
}

// Exit codes of the CLI (docs/interfaces.md), made for `git bisect run`.
const (
	ExitPass       = 0   // every case passed
	ExitFail       = 1   // at least one case failed
	ExitUsage      = 2   // usage error, or a bad suite or capture file
	ExitUntestable = 125 // nothing could be tested: no driver or device, no image, an internal error
	// A run a person stopped exits 128 + the signal number (*Interrupted):
	// 130 SIGINT, 143 SIGTERM, 129 SIGHUP. It is the one code above 125.
)

// ExitCode maps a run's summary and error to the exit code:
// a *SuiteError, a bad capture (ErrCapture, ErrInvalidInput) or an unknown
// implementation → 2; Unavailable → 125 unless a case already failed
// (then 1: a real failure marks the commit bad); an *InternalError or any
// other error → 125 (the harness cannot vouch for anything); an
// *Interrupted → 128 + its signal, whatever the cases did (a person
// stopped the run: `git bisect run` must stop, not judge the commit);
// otherwise 1 if a case failed, 0 if all passed, 125 if no case ran at all.
func ExitCode(sum Summary, err error) int {
	var se *SuiteError
	var re *RunError
	var ie *InternalError
	var in *Interrupted
	switch {
	case err == nil:
	case errors.As(err, &in):
		return in.ExitCode()
	case errors.As(err, &ie):
		return ExitUntestable
	case errors.As(err, &se), errors.Is(err, ErrInvalidInput), errors.Is(err, ErrCapture), errors.Is(err, ErrUnknownImpl):
		return ExitUsage
	case errors.As(err, &re) && re.Class == Unavailable && sum.Failed > 0:
		return ExitFail
	default:
		return ExitUntestable
	}
	if sum.Failed > 0 {
		return ExitFail
	}
	if sum.Passed == 0 {
		return ExitUntestable
	}
	return ExitPass
}
