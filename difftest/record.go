// Per-case records and the report header (docs/running.md "Per-case record",
// docs/interfaces.md "Reports"). They are the rows of every report format: the human
// table, JSON Lines and JUnit XML are all written from them.
package difftest

import (
	"encoding/json"
	"fmt"
	"time"
)

// Verdict is a case's outcome.
type Verdict string

// The verdicts. A case that could not be run for the implementation's
// own reasons (timeout, crash, launch error) fails with that class. A
// case the implementation does not offer at all (a serve program that does
// not implement its kernel) is not tested: VerdictSkip, class unavailable,
// neither passed nor failed.
const (
	VerdictPass Verdict = "pass"
	VerdictFail Verdict = "fail"
	VerdictSkip Verdict = "skip"
)

// Record is the result of one case under one implementation: everything
// needed to understand the verdict and to replay exactly that case.
type Record struct {
	Type             string          `json:"type"`  // "case"
	Index            int             `json:"index"` // position in the expanded suite (seed-major), the shard key
	Case             string          `json:"case"`  // case id, kernel/name
	Kernel           string          `json:"kernel"`
	Family           string          `json:"family"`
	Params           json.RawMessage `json:"params"` // the kernel's parameter struct as JSON
	Seed             uint64          `json:"seed"`
	GeneratorVersion int             `json:"generator_version"`
	InputSHA256      string          `json:"input_sha256"` // hex, over every input tensor (see InputDigest)
	Impl             string          `json:"impl"`
	// Device is the ordinal of the device the case ran on, in a run over
	// several (--device all or a list); empty otherwise.
	Device     string         `json:"device,omitempty"`
	Verdict    Verdict        `json:"verdict"`
	Class      Class          `json:"class,omitempty"`
	Message    string         `json:"message,omitempty"`
	Metrics    map[string]any `json:"metrics,omitempty"`
	Worst      []Element      `json:"worst,omitempty"`
	KeyMetric  string         `json:"key_metric,omitempty"` // the one metric the human table shows, "name=value"
	KernelTime time.Duration  `json:"kernel_time_ns"`       // device time of the first run; 0 if not measured
	WallTime   time.Duration  `json:"wall_time_ns"`         // whole pipeline: generation, both runs, reference, checks
	Warnings   []string       `json:"warnings,omitempty"`
	Replay     string         `json:"replay,omitempty"`  // one shell command that re-runs exactly this case
	Capture    string         `json:"capture,omitempty"` // saved capture file (--save-failures)
	// ReplayCapture is the command that replays Capture with the same
	// implementation and flags (see report.ReplayCaptureCommand).
	ReplayCapture string `json:"replay_capture,omitempty"`
	// Diagnosis names the catalog mutants and semantic variants whose
	// output on this failing case is the implementation's (triage.Diagnose):
	// "behaves like" hints, never a verdict. Empty when none is, or the
	// case passed or was not diagnosed.
	Diagnosis []string `json:"diagnosis,omitempty"`
	// DiagnosisNote says why a failing case's diagnosis is incomplete or
	// was not made (the budget was spent); empty otherwise.
	DiagnosisNote string `json:"diagnosis_note,omitempty"`
}

// Failed reports whether the record's verdict is a failure.
func (r *Record) Failed() bool { return r.Verdict == VerdictFail }

// Header is the first line of a JSON Lines report: what was run, where.
type Header struct {
	Type             string            `json:"type"` // "header"
	Suite            string            `json:"suite"`
	Seed             uint64            `json:"seed"`
	Repeat           int               `json:"repeat"`
	Cases            int               `json:"cases,omitempty"`         // suite cases per seed, before --run and --shard: every Index is below Cases·Repeat (report.SelectionOf)
	Selected         []int             `json:"selected,omitempty"`      // suite positions --run kept, increasing; empty when it kept all (report.SelectionOf)
	Shard            string            `json:"shard,omitempty"`         // "I/N", empty when unsharded or merged
	MergedShards     int               `json:"merged_shards,omitempty"` // N when merged from the shards 0/N … N−1/N (report.Merge); 0 otherwise
	Impl             string            `json:"impl"`
	GeneratorVersion int               `json:"generator_version"`
	GitCommit        string            `json:"git_commit,omitempty"`
	Properties       map[string]string `json:"properties,omitempty"` // device, driver, cuda, fatbin_sha256 (see Prop*)
	Started          time.Time         `json:"started"`
}

// Summary is the last line of a JSON Lines report and the last line of
// the human table.
type Summary struct {
	Type    string        `json:"type"` // "summary"
	Passed  int           `json:"passed"`
	Failed  int           `json:"failed"`
	Skipped int           `json:"skipped,omitempty"` // not tested (VerdictSkip)
	Classes map[Class]int `json:"classes,omitempty"` // failures per class
	Elapsed time.Duration `json:"elapsed_ns"`
	Aborted string        `json:"aborted,omitempty"` // why the run stopped early, if it did
}

// Add counts one record.
func (s *Summary) Add(r *Record) {
	if r.Verdict == VerdictSkip {
		s.Skipped++
		return
	}
	if !r.Failed() {
		s.Passed++
		return
	}
	s.Failed++
	if s.Classes == nil {
		s.Classes = map[Class]int{}
	}
	s.Classes[r.Class]++
}

// Property names shared by the JSON header and the JUnit <properties>.
// An implementation supplies the device ones through PropertyProvider.
const (
	PropSeed             = "seed"
	PropImpl             = "impl"
	PropSuite            = "suite"
	PropGeneratorVersion = "generator_version"
	PropDevice           = "device"        // e.g. "NVIDIA H200 (sm_90)"
	PropDriver           = "driver"        // driver version, e.g. "580.65.06"
	PropCUDA             = "cuda"          // CUDA version the driver supports, e.g. "13.0"
	PropFatbin           = "fatbin_sha256" // hex SHA-256 of the loaded fatbin
	PropGitCommit        = "git_commit"
	// PropEmulated is set, to a description of what ran, when the kernels
	// ran on the emulated driver (the CUDA source on the CPU), not a GPU.
	PropEmulated = "emulated"
)

// PropertyProvider is implemented by implementations that know their
// device: the harness adds the returned map (keys PropDevice, PropDriver,
// PropCUDA, PropFatbin, or others) to the report header and the JUnit
// properties. Values may be empty when unknown.
type PropertyProvider interface {
	Properties() map[string]string
}

// FormatDuration writes a case's or a run's time as every table prints it
// (the run table, the HTML report, the bench table, the selftest rows):
// seconds with two decimals from 1 s up ("1.25s"), milliseconds with two
// from 1 ms ("3.50ms"), else microseconds with one ("10.0µs").
func FormatDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	}
}
