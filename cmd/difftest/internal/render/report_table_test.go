package render

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/report"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// tableOf renders records (and their recounted summary) as the table.
func tableOf(t *testing.T, recs ...*difftest.Record) string {
	t.Helper()
	sum := &difftest.Summary{Elapsed: time.Second}
	for _, r := range recs {
		sum.Add(r)
	}
	return texttest.Render(t, func(w io.Writer) error {
		return WriteTable(w, &report.Report{Header: difftest.Header{Suite: "quick", Seed: 1}, Records: recs, Summary: sum})
	})
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
// a tolerance, never for an exactly compared one such as a top-k index;
// and a failure lists only elements that break the rule: one at ratio 1
// (the bound, accepted) or 0 is not an offender, whatever a report file
// read back holds.
func TestTableWorstRatio(t *testing.T) {
	r := &difftest.Record{Case: "k/a", Seed: 1, Verdict: difftest.VerdictFail, Class: difftest.Mismatch, Message: "m", Worst: []difftest.Element{
		{Tensor: "page_indices", Index: "[0][3]", Got: "-1", Want: "a pick"},
		{Tensor: "cache", Index: "[7][12]", Got: "0x3f81", Want: "0x3f80", Ratio: difftest.RatioOf(1.5)},
		{Tensor: "cache", Index: "[7][13]", Got: "0x3f80", Want: "0x3f80", Ratio: difftest.RatioOf(0)},
		{Tensor: "cache", Index: "[7][14]", Got: "0x3f82", Want: "0x3f81", Ratio: difftest.RatioOf(1)},
	}}
	out := tableOf(t, r)
	texttest.Contains(t, "table", out,
		"    worst page_indices[0][3]: got -1, want a pick\n",
		"    worst cache[7][12]: got 0x3f81, want 0x3f80 (ratio 1.5)\n",
	)
	for _, passing := range []string{"cache[7][13]", "cache[7][14]"} {
		if strings.Contains(out, passing) {
			t.Errorf("the failure lists %s, which passes:\n%s", passing, out)
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
	texttest.Contains(t, "table", out,
		"FAIL    topk_transform/x\\nok      topk_transform/forged  crash  valid=false  1.0µs ¹\n",
		"[1] 1 case · crash\n",
		"  topk_transform/x\\nok      topk_transform/forged (seed 1): exec program exited with status 1; stderr: \\x1b[2J\\x1b[Hall 19 passed\\u202e\n",
		"    worst out\\x1b[31m[0]: got \\x9b2J, want x\n",
		"    replay: difftest replay --impl exec:./k '/tmp/a\\x1b]0;title\\x07.safetensors'\n",
		"¹ saved \\x07 capture\n",
		"\n1 passed, 1 failed (crash 1) in 1.00s\n",
	)
	if n := strings.Count(out, "\n"); n != 21 {
		t.Errorf("%d lines, want 21 (header, 2 rows, the matrix, failures, footnote, metric legend, summary):\n%s", n, out)
	}
}

func TestSummaryLineEscapes(t *testing.T) {
	s := difftest.Summary{Failed: 1, Classes: map[difftest.Class]int{"x\x1b[2J": 1}, Aborted: "shard a.jsonl: \x1b[Hall passed\nreally"}
	if got, want := SummaryLine(s), `0 passed, 1 failed (x\x1b[2J 1); stopped early: shard a.jsonl: \x1b[Hall passed really`; got != want {
		t.Errorf("SummaryLine = %q, want %q", got, want)
	}
}

// manyOfOneCause is 137 failing top-k cases of one cause (rule padding,
// behaves like topk-page-row0), each with its own message and 16 worst
// elements, then two of another cause and 50 passes.
func manyOfOneCause() []*difftest.Record {
	var recs []*difftest.Record
	for i := range 137 {
		r := &difftest.Record{Case: fmt.Sprintf("topk_transform/c%03d-k512", i), Kernel: "topk_transform", Family: "gaussian", Seed: 1,
			Verdict: difftest.VerdictFail, Class: difftest.Mismatch, Diagnosis: []string{"topk-page-row0"},
			Message:   fmt.Sprintf("row 1: page_indices[1][%d] = -1 inside the first min(K, L) = 512 entries (L = %d)", i, 1000+i),
			Metrics:   map[string]any{"failed_rule": "padding", "padding": 100 + i},
			KeyMetric: fmt.Sprintf("padding=%d", 100+i), KernelTime: time.Microsecond,
			Replay: fmt.Sprintf("difftest run --suite default --seed 1 --impl mutant:topk-page-row0 --run '^topk_transform/c%03d-k512$'", i)}
		for j := range 16 {
			r.Worst = append(r.Worst, difftest.Element{Tensor: "page_indices", Index: fmt.Sprintf("[1][%d]", j), Got: "-1", Want: "a pick (entry < min(K, L) = 512)"})
		}
		recs = append(recs, r)
	}
	for i := range 2 {
		recs = append(recs, &difftest.Record{Case: fmt.Sprintf("norm_rope_store/s%d", i), Kernel: "norm_rope_store", Family: "gaussian", Seed: 1,
			Verdict: difftest.VerdictFail, Class: difftest.Guard, Message: fmt.Sprintf("cache: guard byte %d after the end changed (0x00, want 0xa5)", i),
			KernelTime: time.Microsecond, Replay: "difftest run --run s"})
	}
	for i := range 50 {
		recs = append(recs, &difftest.Record{Case: fmt.Sprintf("topk_transform/p%02d", i), Kernel: "topk_transform", Family: "needle", Seed: 1, Verdict: difftest.VerdictPass, KernelTime: time.Microsecond})
	}
	return recs
}

// TestTableGroupsByCause: 137 cases failing from one cause read in one
// screen: one block with the first case's message, its worst elements
// (at most MaxWorst) and replay line, then "136 more cases like this"
// and a capped list of ids, wrapped; the other cause its own block. Before
// grouping this was 137 × 19 lines.
func TestTableGroupsByCause(t *testing.T) {
	out := tableOf(t, manyOfOneCause()...)
	i := strings.Index(out, "\nfailures: ")
	j := strings.LastIndex(out, "\n\n") // the summary line
	if i < 0 || j < i {
		t.Fatalf("no failures section:\n%s", out)
	}
	section := out[i+1 : j]
	lines := strings.Split(strings.TrimRight(section, "\n"), "\n")
	if len(lines) > 30 {
		t.Errorf("the failures take %d lines, want at most 30 (one screen):\n%s", len(lines), section)
	}
	texttest.Contains(t, "the failures", section,
		"failures: 139 cases by 2 causes\n",
		"\n[1] 137 cases · mismatch · rule padding\n  behaves like topk-page-row0: ",
		"\n  topk_transform/c000-k512 (seed 1): row 1: page_indices[1][0] = -1 inside the first min(K, L) = 512 entries (L = 1000)\n    worst page_indices[1][0]: ",
		"\n  136 more cases like this: topk_transform/{c001-k512, c002-k512, ",
		"c030-k512} … and 106 more\n",
		"\n[2] 2 cases · guard\n  norm_rope_store/s0 (seed 1): cache: guard byte 0 after the end changed (0x00, want 0xa5)\n",
		"\n  1 more case like this: norm_rope_store/s1",
	)
	if n := strings.Count(section, "    worst "); n != difftest.MaxWorst {
		t.Errorf("%d worst lines, want %d (the first case's)", n, difftest.MaxWorst)
	}
	if n := strings.Count(section, "replay: "); n != 2 {
		t.Errorf("%d replay lines, want one per cause", n)
	}
	for _, l := range lines {
		if len(l) > listWidth && !strings.Contains(l, "replay: ") && !strings.Contains(l, "(seed 1): ") {
			t.Errorf("line of %d bytes, over %d: %q", len(l), listWidth, l)
		}
	}
}

// TestTableMatrix: the kernel × family × verdict matrix above the
// failures, kernels and families in name order, the kernel on its first
// row only, 0 as "-", a skip column only when a case was not tested.
func TestTableMatrix(t *testing.T) {
	recs := manyOfOneCause()
	recs = append(recs, &difftest.Record{Case: "indexer_logits/x", Kernel: "indexer_logits", Family: "gaussian", Verdict: difftest.VerdictSkip, Class: difftest.Unavailable})
	out := tableOf(t, recs...)
	want := "\nby kernel and family:\n" +
		"  KERNEL           FAMILY    ok  FAIL  skip\n" +
		"  indexer_logits   gaussian  -   -     1\n" +
		"  norm_rope_store  gaussian  -   2     -\n" +
		"  topk_transform   gaussian  -   137   -\n" +
		"                   needle    50  -     -\n"
	if !strings.Contains(out, want) {
		t.Errorf("table lacks the matrix\n%s\n:\n%s", want, out[:min(len(out), 400)])
	}
	if one := tableOf(t, passRec("k/a", 1), passRec("k/b", 1)); strings.Contains(one, "by kernel and family") {
		t.Errorf("a matrix of one row:\n%s", one)
	}
}

// TestTableMetricLegend: the metrics ok rows show say what they mean, in
// a legend under the footnotes; a run whose ok rows show none has none.
func TestTableMetricLegend(t *testing.T) {
	ok := func(id, metric string) *difftest.Record {
		return &difftest.Record{Case: id, Seed: 1, Verdict: difftest.VerdictPass, KeyMetric: metric, KernelTime: time.Microsecond}
	}
	out := tableOf(t, ok("norm_rope_store/a", "max_code_distance=1"), ok("indexer_logits/b", "max_ratio=0.002266"), ok("topk_transform/c", ""))
	want := "METRIC of an ok row, how close it came (not a verdict):\n" +
		"  max_code_distance the largest distance to the reference's code, in e4m3 or e2m1 codes (within the derived bound)\n" +
		"  max_ratio         the worst element's |got − exact| / allowed bound (≤ 1 passes; 1 is the bound)\n"
	if !strings.Contains(out, want) {
		t.Errorf("table lacks the legend\n%s:\n%s", want, out)
	}
	if out := tableOf(t, ok("topk_transform/c", "")); strings.Contains(out, "METRIC of an ok row") {
		t.Errorf("a legend without a metric:\n%s", out)
	}
}
