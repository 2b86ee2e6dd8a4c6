package render

import (
	"fmt"
	"html/template"
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/bench"
	"github.com/kerneldiff/kerneldiff/difftest/bench/stats"
	"github.com/kerneldiff/kerneldiff/difftest/report"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
	_ "github.com/kerneldiff/kerneldiff/kernels/normrope" // the diagnosis's descriptions
)

func TestDecadeAndIntegerBins(t *testing.T) {
	// A ratio of exactly 1 is the bound: it passes, and is drawn in the
	// last passing bin, not in red with the failures above 1.
	labels, counts := decadeBins([]float64{0, 5e-5, 3e-4, 0.002, 0.05, 0.5, 0.999, 1.0, 1.0000001, 63.7, 1e3})
	if want := []int{1, 1, 1, 1, 1, 3, 1, 1, 1}; !reflect.DeepEqual(counts, want) {
		t.Errorf("decade counts %v (labels %v), want %v", counts, labels, want)
	}
	_, one := decadeBins([]float64{1})
	if svg := string(barChart(labels, one, true)); one[5] != 1 || !strings.Contains(svg, `height="120" fill="#36c"`) {
		t.Errorf("a ratio of 1 counted %v, drawn %s; want the passing bin 0.1–1, not red", one, svg)
	}
	labels, counts = integerBins([]float64{0, 0, 1, 0})
	if !reflect.DeepEqual(labels, []string{"0", "1"}) || !reflect.DeepEqual(counts, []int{3, 1}) {
		t.Errorf("integer bins %v %v, want [0 1] [3 1]", labels, counts)
	}
	_, counts = integerBins([]float64{2, 40})
	if !reflect.DeepEqual(counts, []int{0, 0, 1, 0, 0, 0, 0, 0, 1}) {
		t.Errorf("integer bins of 2 and 40: %v", counts)
	}
}

// renderHTML renders r as the HTML report (WriteHTML); an error is fatal.
func renderHTML(t *testing.T, r *HTMLReport) string {
	t.Helper()
	return texttest.Render(t, func(w io.Writer) error { return WriteHTML(w, r) })
}

func TestWriteHTML(t *testing.T) {
	evil := `<script>alert("x")</script>`
	run := &report.Report{
		Header: difftest.Header{Suite: "quick", Impl: "emu", Seed: 7, GeneratorVersion: difftest.GeneratorVersion, Properties: map[string]string{difftest.PropDevice: "Fake GPU (sm_90)", difftest.PropEmulated: "the CPU emulator"}},
		Records: []*difftest.Record{
			{Case: "norm_rope_store/a", Kernel: "norm_rope_store", Verdict: difftest.VerdictPass, Metrics: map[string]any{"max_ulp": float64(0), "max_ratio": 0.004}},
			{Case: "norm_rope_store/b", Kernel: "norm_rope_store", Family: "gaussian", Verdict: difftest.VerdictFail, Class: difftest.Mismatch, Seed: 7, Device: "1",
				Message: "cache token 6: got " + evil, Metrics: map[string]any{"max_ulp": float64(1), "max_ratio": 63.7}, Diagnosis: []string{"bf16-truncate"},
				Worst:  []difftest.Element{{Tensor: "cache", Index: "token 6", Got: "0x400a", Want: "0x400b", Ratio: difftest.RatioOf(63.7)}, {Tensor: "cache", Index: "token 7 scale", Got: "1.004", Want: "1", Ratio: difftest.RatioOf(0.004)}},
				Replay: "difftest run --run '^norm_rope_store/b$'"},
			{Case: "topk_transform/c", Kernel: "topk_transform", Verdict: difftest.VerdictPass, Metrics: map[string]any{"recall": float64(1)}},
		},
		Summary: &difftest.Summary{Passed: 2, Failed: 1, Classes: map[difftest.Class]int{difftest.Mismatch: 1}, Elapsed: 2 * time.Second},
	}
	br := &bench.BenchReport{Type: "bench", Suite: "bench", Impl: "emu", Baseline: "old.fatbin", Emulated: true,
		Method: bench.BenchMethod{Runs: 6, Warmup: 1, Cold: bench.ColdFlush, Timer: "cuda-events", Alpha: 0.05, L2Bytes: 4 << 20, FlushBytes: 8 << 20},
		Results: []*bench.BenchResult{{Case: "topk_transform/decode", MinBytes: 12288,
			Builds: []bench.BuildResult{
				{Name: "emu", Verdict: difftest.VerdictPass, Stats: &stats.Stats{N: 6, Median: 9 * time.Microsecond, MedianLo: 8 * time.Microsecond, MedianHi: 10 * time.Microsecond}, PctOfFloor: 42.5},
				{Name: "old.fatbin", Verdict: difftest.VerdictPass, Stats: &stats.Stats{N: 6, Median: 10 * time.Microsecond, MedianLo: 9 * time.Microsecond, MedianHi: 11 * time.Microsecond}}},
			Comparison: &stats.Comparison{Ratio: 0.9, Lo: 0.85, Hi: 0.95, HasCI: true, P: 0.002, Significant: true, NBase: 6, NNew: 6}}},
		Geomean: 0.9}
	page := renderHTML(t, &HTMLReport{Title: "nightly", Runs: []*report.Report{run}, Benches: []*bench.BenchReport{br},
		Figures:   []Figure{{Name: "needle.svg", MIME: "image/svg+xml", Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)}},
		Generated: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	texttest.Contains(t, "page", page,
		"<title>nightly</title>", "generated 2026-01-02 03:04:05 UTC", "emulated: the CPU emulator",
		"2 passed, 1 failed (mismatch 1) in 2.00s", "Failures (1 case, 1 cause)", "[1]</span> <b>1 case · mismatch</b>", "<code>norm_rope_store/b</code> seed 7",
		"device 1", "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", "behaves like bf16-truncate: converts f32 to bf16 by dropping the low 16 bits instead of rounding to nearest even",
		"difftest run --run &#39;^norm_rope_store/b$&#39;", "<b>norm_rope_store</b>: max_ulp (2 cases)",
		"<b>norm_rope_store</b>: max_ratio (2 values; above 1 fails)", "worst element |d| / allowed (2 values; above 1 fails)",
		"Bench: bench (emu vs old.fatbin)", "emulated: "+template.HTMLEscapeString(EmulatedTimesNote), ">0.900<", "[0.850, 0.950]", ">-10.0%<", "42.50%",
		`<b>0.900</b>`, `<img src="data:image/svg&#43;xml;base64,`,
	)
	// The failure lists the element that breaks the rule, not the scale
	// that came close (ratio 0.004).
	if strings.Contains(page, "token 7 scale") {
		t.Error("the failure lists a passing element")
	}
	if strings.Contains(page, evil) || strings.Contains(page, "<script") {
		t.Error("a script element reached the page")
	}
	// Self-contained: no src or href to anything but a data: URI or an anchor.
	for _, m := range regexp.MustCompile(`(?i)(src|href)\s*=\s*"([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(m[2], "data:") && !strings.HasPrefix(m[2], "#") {
			t.Errorf("external reference %s=%q", m[1], m[2])
		}
	}
	if strings.Contains(page, "<link") || strings.Contains(page, "@import") || strings.Contains(page, "url(") {
		t.Error("the page loads a stylesheet or font")
	}
	// No histogram for top-k: recall is not a distance.
	if strings.Contains(page, "<b>topk_transform</b>:") {
		t.Error("a top-k histogram without a distance metric")
	}
}

// TestWriteHTMLServeRun: a serve run's page shows the program's own
// version line and device, and no empty driver and fatbin rows; the
// --param overrides; the kernel × family × verdict matrix before the
// failures; the failures grouped by cause, the other cases' ids folded
// under "N more cases like this".
func TestWriteHTMLServeRun(t *testing.T) {
	run := &report.Report{
		Header: difftest.Header{Suite: "default", Impl: "serve:python -m kerneldiff serve mine.py", Seed: 1, Params: []string{"accum_bits=8"},
			Properties: map[string]string{difftest.PropDevice: "cpu (x86_64)", difftest.PropImplVersion: "kerneldiff-py 0.3 (python 3.11.2, numpy 2.2.6, torch 2.9.1)"}},
		Records: manyOfOneCause(),
	}
	page := renderHTML(t, &HTMLReport{Runs: []*report.Report{run}})
	texttest.Contains(t, "page", page,
		"<tr><th>device</th><td>cpu (x86_64)</td></tr>",
		"<tr><th>implementation</th><td><code>kerneldiff-py 0.3 (python 3.11.2, numpy 2.2.6, torch 2.9.1)</code></td></tr>",
		"<tr><th>--param</th><td><code>accum_bits=8</code> (set in every case that takes them)</td></tr>",
		", --param accum_bits=8",
		`<tr class="first"><td><b>topk_transform</b></td><td>gaussian</td><td class="n">0</td><td class="n fail">137</td><td class="n">0</td></tr>`,
		`<tr><td></td><td>needle</td><td class="n pass">50</td><td class="n">0</td><td class="n">0</td></tr>`,
		"Failures (139 cases, 2 causes)",
		"<b>137 cases · mismatch · rule padding</b>",
		"<summary>136 more cases like this</summary><p><code>topk_transform/{c001-k512, c002-k512,",
		"c136-k512}</code></p></details>",
		"<b>2 cases · guard</b>",
	)
	for _, empty := range []string{"driver / CUDA", "fatbin SHA-256"} {
		if strings.Contains(page, empty) {
			t.Errorf("page has an empty %s row", empty)
		}
	}
	if i, j := strings.Index(page, `class="matrix"`), strings.Index(page, "Failures ("); i < 0 || j < i {
		t.Errorf("the matrix (at %d) is not above the failures (at %d)", i, j)
	}
	if n := strings.Count(page, `<div class="fail-case">`); n != 2 {
		t.Errorf("%d failure blocks, want one per cause", n)
	}
}

// The page's driver row shows what the run has ("CUDA 13.0" alone, not
// "/ 13.0"), and the family table leaves out a kernel the implementation
// tested no case of, naming it on one line instead.
func TestWriteHTMLPartialHeaderAndUntestedKernel(t *testing.T) {
	recs := manyOfOneCause()
	for i := range 3 {
		recs = append(recs, &difftest.Record{Type: "case", Case: fmt.Sprintf("indexer_logits/fp8/c%d", i), Kernel: "indexer_logits", Family: "fp8", Verdict: difftest.VerdictSkip, Class: difftest.Unavailable, Message: "the serve program implements topk_transform, not indexer_logits"})
	}
	run := &report.Report{
		Header:  difftest.Header{Suite: "default", Impl: "serve:x", Seed: 1, Properties: map[string]string{difftest.PropCUDA: "13.0"}},
		Records: recs,
	}
	page := renderHTML(t, &HTMLReport{Runs: []*report.Report{run}})
	texttest.Contains(t, "page", page,
		"<tr><th>CUDA</th><td>13.0</td></tr>",
		`<p class="muted">not tested at all (every case skipped: not implemented or declined): indexer_logits (3 cases)</p>`,
	)
	if strings.Contains(page, "<b>indexer_logits</b>") || strings.Contains(page, "/ 13.0") {
		t.Errorf("the family table lists the untested kernel, or the driver row has an empty side")
	}
}
