package render

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/report"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
	"github.com/kerneldiff/kerneldiff/internal/golden"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/report")

// sampleReport is a fixed report: two seeds, a pass with kernel time, a
// pass without, two failures of different classes, a warning, a --param.
func sampleReport() *report.Report {
	opts := difftest.ReplayOptions{Suite: "default", Impl: "cuda", Fatbin: "build/kernels.fatbin", Timeout: difftest.DefaultTimeout}
	rec := func(i int, id string, seed uint64, class difftest.Class, msg, metric string, kt, wt time.Duration) *difftest.Record {
		r := &difftest.Record{Type: "case", Index: i, Case: id, Kernel: strings.Split(id, "/")[0], Family: "gaussian",
			Params: json.RawMessage(`{"batch":1}`), Seed: seed, GeneratorVersion: 1,
			InputSHA256: strings.Repeat("ab", 32), Impl: "cuda", Verdict: difftest.VerdictPass, KeyMetric: metric,
			KernelTime: kt, WallTime: wt}
		if class != difftest.Pass {
			r.Verdict, r.Class, r.Message = difftest.VerdictFail, class, msg
			r.Replay = difftest.ReplayCommand(opts, id, seed)
		}
		return r
	}
	recs := []*difftest.Record{
		rec(0, "topk_transform/gaussian-b1-l4096", 1, difftest.Pass, "", "", 41*time.Microsecond, 12*time.Millisecond),
		rec(1, "topk_transform/ties-straddle-k", 1, difftest.Mismatch, "row 0: position 17 (key 0x3f800000) ranks above the K-th but is not chosen", "missing=1", 38*time.Microsecond, 9*time.Millisecond),
		rec(2, "norm_rope_store/v4-n4096", 1, difftest.Pass, "", "max_ulp=1", 0, 1500*time.Millisecond),
		rec(5, "norm_rope_store/v4-n4096", 2, difftest.Guard, "cache: byte 132 is outside what the contract writes but changed (0x00, want canary 0xa5)", "max_ulp=0", 0, 800*time.Millisecond),
	}
	recs[1].Worst = []difftest.Element{{Tensor: "raw_indices", Index: "[0][511]", Got: "40", Want: "17"}}
	recs[1].Metrics = map[string]any{"missing": 1, "extra": 1, "recall": 0.998, "failed_rule": "missing"}
	recs[2].Warnings = []string{"tokens 3, 9 hold NaN: their slots are not compared"}
	recs[3].Warnings = []string{"tokens 3, 9 hold NaN: their slots are not compared"}
	recs[3].Capture = "failures/norm_rope_store__v4-n4096__seed2.safetensors"
	sum := &difftest.Summary{Type: "summary", Elapsed: 2321 * time.Millisecond}
	for _, r := range recs {
		sum.Add(r)
	}
	return &report.Report{
		Header: difftest.Header{Type: "header", Suite: "default", Seed: 1, Repeat: 2, Impl: "cuda", GeneratorVersion: 1,
			GitCommit: "0123456789ab", Params: []string{"accum_bits=8"},
			Properties: map[string]string{difftest.PropDevice: "NVIDIA RTX PRO 6000 (sm_120)", difftest.PropDriver: "580.65.06", difftest.PropCUDA: "13.0", difftest.PropFatbin: "9f86d081884c7d65"}},
		Records: recs,
		Summary: sum,
	}
}

// reportGolden compares got with testdata/report/NAME (golden.Check).
func reportGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "report", name), got, *update, "review the change, then go test -update")
}

func TestTableGolden(t *testing.T) {
	reportGolden(t, "table.golden", texttest.Render(t, func(w io.Writer) error { return WriteTable(w, sampleReport()) }))
}

func TestJUnitGolden(t *testing.T) {
	reportGolden(t, "junit.golden.xml", texttest.Render(t, func(w io.Writer) error { return report.WriteJUnit(w, sampleReport()) }))
}

func TestSummaryLine(t *testing.T) {
	tests := []struct {
		s    difftest.Summary
		want string
	}{
		{difftest.Summary{Passed: 3}, "3 passed, 0 failed"},
		{difftest.Summary{Passed: 1, Failed: 3, Classes: map[difftest.Class]int{difftest.Guard: 1, difftest.Mismatch: 2}, Elapsed: 1500 * time.Millisecond}, "1 passed, 3 failed (mismatch 2, guard 1) in 1.50s"},
		{difftest.Summary{Failed: 1, Classes: map[difftest.Class]int{difftest.Timeout: 1}, Aborted: "--failfast after k/a"}, "0 passed, 1 failed (timeout 1); stopped early: --failfast after k/a"},
	}
	for _, tt := range tests {
		if got := SummaryLine(tt.s); got != tt.want {
			t.Errorf("SummaryLine = %q, want %q", got, tt.want)
		}
	}
}

func TestReplayCommand(t *testing.T) {
	tests := []struct {
		o    difftest.ReplayOptions
		id   string
		want string
	}{
		{difftest.ReplayOptions{Suite: "default", Impl: "cuda", Timeout: difftest.DefaultTimeout}, "topk_transform/needle-l4500", `difftest run --suite default --seed 9 --impl cuda --run '^topk_transform/needle-l4500$'`},
		{difftest.ReplayOptions{Suite: "my suite.toml", Impl: "exec:./k --fast", Fatbin: "build/k.fatbin", Device: 1, Timeout: difftest.DefaultTimeout}, "norm_rope_store/v4-bf16.n7", `difftest run --suite 'my suite.toml' --seed 9 --impl 'exec:./k --fast' --run '^norm_rope_store/v4-bf16\.n7$' --fatbin build/k.fatbin --device 1`},
		// Issue 9 item 7: a case that timed out under --timeout 1s replays
		// under the 2m default as another class unless the line says 1s.
		{difftest.ReplayOptions{Prog: "build/difftest", Suite: "quick", Impl: "exec:./slow", Timeout: time.Second}, "topk_transform/a", `build/difftest run --suite quick --seed 9 --impl exec:./slow --run '^topk_transform/a$' --timeout 1s`},
		// --timeout 0 (no time-out) is a verdict-changing choice too.
		{difftest.ReplayOptions{Prog: "'my dir/difftest'", Suite: "quick", Impl: "reference"}, "topk_transform/a", `'my dir/difftest' run --suite quick --seed 9 --impl reference --run '^topk_transform/a$' --timeout 0s`},
		{difftest.ReplayOptions{Suite: "quick", Impl: "cuda", Timeout: 90 * time.Second, Device: 2}, "topk_transform/a", `difftest run --suite quick --seed 9 --impl cuda --run '^topk_transform/a$' --device 2 --timeout 1m30s`},
	}
	for _, tt := range tests {
		if got := difftest.ReplayCommand(tt.o, tt.id, 9); got != tt.want {
			t.Errorf("ReplayCommand =\n%s\nwant\n%s", got, tt.want)
		}
	}
	o := difftest.ReplayOptions{Prog: "build/difftest", Impl: "exec:./k --fast", Fatbin: "k.fatbin", Timeout: 1500 * time.Millisecond}
	if got, want := difftest.ReplayCaptureLine(o, "fails/a b.safetensors"), `build/difftest replay --impl 'exec:./k --fast' --fatbin k.fatbin --timeout 1.5s 'fails/a b.safetensors'`; got != want {
		t.Errorf("ReplayCaptureLine =\n%s\nwant\n%s", got, want)
	}
	r := &difftest.Record{Impl: "cuda", Capture: "f.safetensors"}
	if got, want := report.ReplayCaptureCommand(r), "difftest replay --impl cuda f.safetensors"; got != want {
		t.Errorf("ReplayCaptureCommand without ReplayCapture = %s, want %s", got, want)
	}
	r.ReplayCapture = "build/difftest replay --impl cuda --timeout 1s f.safetensors"
	if got := report.ReplayCaptureCommand(r); got != r.ReplayCapture {
		t.Errorf("ReplayCaptureCommand = %s, want the record's own %s", got, r.ReplayCapture)
	}
	if got := difftest.ShellQuote("it's"); got != `'it'\''s'` {
		t.Errorf("ShellQuote = %s", got)
	}
}

func TestJSONLRoundTripAndMerge(t *testing.T) {
	rep := sampleReport()
	// The sample's run has 3 cases per seed; the seed-2 runs of the first
	// two (indices 3 and 4) pass.
	for _, i := range []int{0, 1} {
		r := *rep.Records[i]
		r.Index, r.Seed, r.Verdict, r.Class, r.Message, r.Worst, r.Metrics = i+3, 2, difftest.VerdictPass, difftest.Pass, "", nil, nil
		rep.Records = append(rep.Records, &r)
	}
	rep.Header.Cases = 3
	// Two shards of one run: records 0, 2 and 4 in shard 0/2, 1, 3 and 5 in 1/2.
	var shard [2]bytes.Buffer
	for i := range shard {
		w := report.NewJSONLWriter(&shard[i])
		h := rep.Header
		h.Shard = difftest.Shard{I: i, N: 2}.String()
		if err := w.Header(h); err != nil {
			t.Fatal(err)
		}
		var s difftest.Summary
		for _, r := range rep.Records {
			if r.Index%2 == i {
				if err := w.Record(r); err != nil {
					t.Fatal(err)
				}
				s.Add(r)
			}
		}
		s.Elapsed = time.Duration(i+1) * time.Second
		if err := w.Summary(s); err != nil {
			t.Fatal(err)
		}
	}
	var reps []*report.Report
	for i := range shard {
		r, err := report.ReadJSONL("shard.jsonl", &shard[i])
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, r)
	}
	m, err := report.Merge(reps)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Records) != 6 || m.Records[1].Case != "topk_transform/ties-straddle-k" || m.Records[5].Index != 5 {
		t.Fatalf("merged records out of order: %v", m.Records)
	}
	if m.Summary.Passed != 4 || m.Summary.Failed != 2 || m.Summary.Elapsed != 2*time.Second || m.Header.Shard != "" {
		t.Errorf("merged summary %+v header %+v", m.Summary, m.Header)
	}
	if m.Records[1].Metrics["recall"] != 0.998 || m.Records[1].Worst[0].Index != "[0][511]" {
		t.Errorf("record fields lost in the round trip: %+v", m.Records[1])
	}
	if _, err := report.Merge([]*report.Report{reps[0], reps[0]}); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("overlapping shards: %v", err)
	}
	other := *reps[1]
	other.Header.Seed = 2
	if _, err := report.Merge([]*report.Report{reps[0], &other}); err == nil || !strings.Contains(err.Error(), "report 2 ran suite default seed 2") {
		t.Errorf("different runs: %v", err)
	}
}

func TestReadJSONLTruncated(t *testing.T) {
	var b bytes.Buffer
	w := report.NewJSONLWriter(&b)
	w.Header(difftest.Header{Suite: "quick"})
	w.Record(&difftest.Record{Case: "k/a", Verdict: difftest.VerdictPass})
	rep, err := report.ReadJSONL("run.jsonl", &b)
	if err != nil || rep.Summary != nil || len(rep.Records) != 1 {
		t.Fatalf("truncated report: %+v, %v", rep, err)
	}
	if _, err := report.ReadJSONL("x.jsonl", strings.NewReader("{\"type\":\"case\"}\n")); err == nil || err.Error() != `x.jsonl:1: first line is "case", want a header` {
		t.Errorf("headless report: %v", err)
	}
	if _, err := report.ReadJSONL("x.jsonl", strings.NewReader("{\"type\":\"header\"}\n{oops\n")); err == nil || !strings.HasPrefix(err.Error(), "x.jsonl:2: ") {
		t.Errorf("malformed line: %v", err)
	}
}

func TestKeyMetric(t *testing.T) {
	m := map[string]any{"recall": 0.75, "missing": 2, "extra": 2, "valid": false, "jaccard": 0.6}
	tests := []struct {
		verdict difftest.Verdict
		metrics map[string]any
		want    string
	}{
		{difftest.VerdictFail, m, "missing=2"},
		// A pass shows its distance to the bound or nothing: top-k's
		// recall=0.04883 on a valid ReLU row alarmed (issue 17).
		{difftest.VerdictPass, map[string]any{"recall": 0.04883, "missing": 0, "tie_band": 7936}, ""},
		{difftest.VerdictPass, map[string]any{"max_code_distance": 0, "max_ratio": 0.25, "mismatches": 0}, "max_code_distance=0"},
		{difftest.VerdictPass, map[string]any{"max_ratio": 0.25, "mismatch_fraction": 0.0}, "max_ratio=0.25"},
		{difftest.VerdictFail, map[string]any{"max_code_distance": 3, "mismatches": 17}, "mismatches=17"},
		{difftest.VerdictPass, map[string]any{"zeta": 1, "alpha": []int{1}, "beta": "x"}, ""},
		{difftest.VerdictFail, map[string]any{"zeta": 1, "alpha": []int{1}, "beta": "x"}, "beta=x"},
		{difftest.VerdictPass, nil, ""},
	}
	for _, tt := range tests {
		rec := &difftest.Record{Verdict: tt.verdict, Metrics: tt.metrics}
		if got := difftest.KeyMetric(fakekernel.Kernel{}, rec); got != tt.want {
			t.Errorf("KeyMetric(%s, %v) = %q, want %q", tt.verdict, tt.metrics, got, tt.want)
		}
	}
}

// A case the implementation does not offer is "skip" in the table, a
// <skipped> testcase in JUnit, and counted apart in the summary.
func TestSkippedCaseReports(t *testing.T) {
	rec := &difftest.Record{Type: "case", Case: "norm_rope_store/x", Kernel: "norm_rope_store", Verdict: difftest.VerdictSkip, Class: difftest.Unavailable, Message: "the serve program implements topk_transform, not norm_rope_store", WallTime: time.Millisecond}
	pass := &difftest.Record{Type: "case", Case: "topk_transform/y", Kernel: "topk_transform", Verdict: difftest.VerdictPass, WallTime: time.Millisecond}
	var sum difftest.Summary
	sum.Add(rec)
	sum.Add(pass)
	rep := &report.Report{Header: difftest.Header{Suite: "s", Seed: 1}, Records: []*difftest.Record{rec, pass}, Summary: &sum}
	var tb, jb strings.Builder
	if err := WriteTable(&tb, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tb.String(), "skip    norm_rope_store/x  unavailable") || !strings.Contains(tb.String(), "1 passed, 0 failed, 1 not tested") {
		t.Errorf("table:\n%s", tb.String())
	}
	if err := report.WriteJUnit(&jb, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`skipped="1"`, `<skipped message="unavailable: the serve program implements topk_transform, not norm_rope_store">`, `failures="0"`} {
		if !strings.Contains(jb.String(), want) {
			t.Errorf("JUnit lacks %s:\n%s", want, jb.String())
		}
	}
}
