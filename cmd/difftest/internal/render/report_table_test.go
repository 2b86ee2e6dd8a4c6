package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/report"
)

// tableOf renders records (and their recounted summary) as the table.
func tableOf(t *testing.T, recs ...*difftest.Record) string {
	t.Helper()
	sum := &difftest.Summary{Elapsed: time.Second}
	for _, r := range recs {
		sum.Add(r)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, &report.Report{Header: difftest.Header{Suite: "quick", Seed: 1}, Records: recs, Summary: sum}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func passRec(id string, seed uint64) *difftest.Record {
	return &difftest.Record{Case: id, Seed: seed, Verdict: difftest.VerdictPass, KeyMetric: "recall=1", KernelTime: 10 * time.Microsecond}
}

// TestTableSeedColumn: with --repeat the rows of one case differ only in
// their seed, so the table shows a SEED column; with one seed it does not.
func TestTableSeedColumn(t *testing.T) {
	one := tableOf(t, passRec("k/a", 3), passRec("k/b", 3))
	wantOne := "STATUS  CASE  CLASS  METRIC    TIME\n" +
		"ok      k/a   -      recall=1  10.0µs\n" +
		"ok      k/b   -      recall=1  10.0µs\n"
	if !strings.HasPrefix(one, wantOne) {
		t.Errorf("one seed:\n%s\nwant it to start with\n%s", one, wantOne)
	}
	two := tableOf(t, passRec("k/a", 3), passRec("k/b", 3), passRec("k/a", 4), passRec("k/b", 4))
	wantTwo := "STATUS  CASE  SEED  CLASS  METRIC    TIME\n" +
		"ok      k/a   3     -      recall=1  10.0µs\n" +
		"ok      k/b   3     -      recall=1  10.0µs\n" +
		"ok      k/a   4     -      recall=1  10.0µs\n" +
		"ok      k/b   4     -      recall=1  10.0µs\n"
	if !strings.HasPrefix(two, wantTwo) {
		t.Errorf("two seeds:\n%s\nwant it to start with\n%s", two, wantTwo)
	}
}

// TestTableWorstRatio: a ratio is printed for an element compared within
// a tolerance (0 included: an exact hit of a tolerance), never for an
// exactly compared one such as a top-k index.
func TestTableWorstRatio(t *testing.T) {
	r := &difftest.Record{Case: "k/a", Seed: 1, Verdict: difftest.VerdictFail, Class: difftest.Mismatch, Message: "m", Worst: []difftest.Element{
		{Tensor: "page_indices", Index: "[0][3]", Got: "-1", Want: "a pick"},
		{Tensor: "cache", Index: "[7][12]", Got: "0x3f81", Want: "0x3f80", Ratio: difftest.RatioOf(1.5)},
		{Tensor: "cache", Index: "[7][13]", Got: "0x3f80", Want: "0x3f80", Ratio: difftest.RatioOf(0)},
	}}
	out := tableOf(t, r)
	for _, want := range []string{
		"    worst page_indices[0][3]: got -1, want a pick\n",
		"    worst cache[7][12]: got 0x3f81, want 0x3f80 (ratio 1.5)\n",
		"    worst cache[7][13]: got 0x3f80, want 0x3f80 (ratio 0)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestTableEscapesForeignText: the inputs. An exec program's
// stderr with ESC sequences that cleared the screen and printed "all 19
// passed", and a capture whose case name holds a newline, must reach the
// terminal as visible escapes: no control byte but the table's own
// newlines, one line per row.
func TestTableEscapesForeignText(t *testing.T) {
	bad := &difftest.Record{Case: "topk_transform/x\nok      topk_transform/forged", Seed: 1, Verdict: difftest.VerdictFail, Class: difftest.Crash,
		Message:   "exec program exited with status 1; stderr: \x1b[2J\x1b[Hall 19 passed\u202e",
		Worst:     []difftest.Element{{Tensor: "out\x1b[31m", Index: "[0]", Got: "\x9b2J", Want: "x"}},
		Warnings:  []string{"saved \x07 capture"},
		Replay:    "difftest replay --impl exec:./k '/tmp/a\x1b]0;title\x07.safetensors'",
		KeyMetric: "valid=false", KernelTime: time.Microsecond}
	out := tableOf(t, passRec("k/a", 1), bad)
	if s := strings.ReplaceAll(out, "\n", ""); difftest.SafeText(s) != s {
		t.Fatalf("a control character reaches the terminal:\n%q", out)
	}
	for _, want := range []string{
		"FAIL    topk_transform/x\\nok      topk_transform/forged  crash  valid=false  1.0µs ¹\n",
		"  topk_transform/x\\nok      topk_transform/forged (seed 1): crash: exec program exited with status 1; stderr: \\x1b[2J\\x1b[Hall 19 passed\\u202e\n",
		"    worst out\\x1b[31m[0]: got \\x9b2J, want x\n",
		"    replay: difftest replay --impl exec:./k '/tmp/a\\x1b]0;title\\x07.safetensors'\n",
		"¹ saved \\x07 capture\n",
		"\n1 passed, 1 failed (crash 1) in 1.00s\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 12 {
		t.Errorf("%d lines, want 12 (header, 2 rows, failures, footnote, summary):\n%s", n, out)
	}
}

func TestSummaryLineEscapes(t *testing.T) {
	s := difftest.Summary{Failed: 1, Classes: map[difftest.Class]int{"x\x1b[2J": 1}, Aborted: "shard a.jsonl: \x1b[Hall passed\nreally"}
	if got, want := SummaryLine(s), `0 passed, 1 failed (x\x1b[2J 1); stopped early: shard a.jsonl: \x1b[Hall passed really`; got != want {
		t.Errorf("SummaryLine = %q, want %q", got, want)
	}
}
