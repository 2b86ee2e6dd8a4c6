// The HTML report of a nightly run (docs/nightly.md, `difftest report`): one
// self-contained page, no network, scripts or fonts from anywhere: the
// summary of each run with its kernel × family × verdict matrix, its
// header (device, the implementation's own version line, driver and
// fatbin where a GPU ran, --param overrides), its failures grouped by
// cause (report.Causes) with the first case's message, worst elements,
// diagnosis and replay lines and the other cases' ids folded under "N
// more cases like this", per-kernel histograms of the distance and
// tolerance-ratio metrics, the bench tables with % of floor and the A/B
// ratios, and any figures given (the needle study's SVG chart), inlined.
// Every string from a report file goes through html/template's escaping;
// figures are embedded as data: URIs of <img> elements, where an SVG's
// scripts never run.

package render

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/bench"
	"github.com/kerneldiff/kerneldiff/difftest/bench/stats"
	"github.com/kerneldiff/kerneldiff/difftest/report"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// HTMLReport is what WriteHTML renders.
type HTMLReport struct {
	Title     string
	Runs      []*report.Report     // from ReadJSONL (run --json, or merge)
	Benches   []*bench.BenchReport // from ReadBenchReport
	Figures   []Figure
	Generated time.Time
}

// Figure is an image shown in the report: an SVG chart (the needle
// study's) or a PNG, by its file name.
type Figure struct {
	Name string
	MIME string // "image/svg+xml" or "image/png"
	Data []byte
}

// ReadBenchReport decodes the JSON a `difftest bench --json` run wrote; a
// document of another type or a newer version is an error naming name.
func ReadBenchReport(name string, data []byte) (*bench.BenchReport, error) {
	var rep bench.BenchReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if rep.Type != "bench" {
		return nil, fmt.Errorf("%s: type %q, want a bench report (difftest bench --json)", name, rep.Type)
	}
	if rep.Version > bench.BenchReportVersion {
		return nil, fmt.Errorf("%s: bench report version %d, newer than this difftest reads (%d)", name, rep.Version, bench.BenchReportVersion)
	}
	if err := bench.CheckResults(rep.Results); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &rep, nil
}

// WriteHTML writes r as one HTML page.
func WriteHTML(w io.Writer, r *HTMLReport) error {
	if r.Title == "" {
		r.Title = "kerneldiff report"
	}
	return htmlPage.Execute(w, r)
}

var htmlPage = template.Must(template.New("page").Funcs(template.FuncMap{
	"summary": func(rep *report.Report) difftest.Summary { return reportSummary(rep) },
	"sumline": func(rep *report.Report) string { return SummaryLine(reportSummary(rep)) },
	"causes":  func(rep *report.Report) []*report.Cause { return report.Causes(rep.Records) },
	"nfailed": func(cs []*report.Cause) int { return casesOf(cs) },
	"matrix": func(rep *report.Report) []MatrixRow {
		tested, _ := SplitUntested(Matrix(rep.Records))
		return tested
	},
	"untested": func(rep *report.Report) string {
		_, untested := SplitUntested(Matrix(rep.Records))
		return strings.Join(untested, ", ")
	},
	"drivercuda": driverCUDA,
	"histograms": kernelHistograms,
	"diaglines":  triage.DiagnosisLines,
	"breaking":   report.WorstShown,
	"inc":        func(i int) int { return i + 1 },
	"moreline":   report.MoreLine,
	"others":     func(c *report.Cause) string { return report.CaseList(c.Records[1:], 0) },
	"plural":     plural,
	"ratio": func(e difftest.Element) string {
		if e.Ratio == nil {
			return "exact"
		}
		return fmt.Sprintf("%.3g", *e.Ratio)
	},
	"kt":       func(d time.Duration) string { return fmtKernelTime(d) },
	"dur":      difftest.FormatDuration,
	"bytes":    bytesCell,
	"gbps":     gbpsCell,
	"pct":      pctCell,
	"center":   func(s *stats.Stats) string { return centerCell(s) },
	"bar":      pctBar,
	"method":   BenchMethodLine,
	"emunote":  func() string { return EmulatedTimesNote },
	"f3":       func(x float64) string { return fmt.Sprintf("%.3f", x) },
	"delta":    deltaCell,
	"figure":   figureURI,
	"timedn":   timedCount,
	"nbfailed": func(b *bench.BenchReport) int { return b.Failed() },
	"prop":     func(h difftest.Header, k string) string { return h.Properties[k] },
	"datetime": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
}).Parse(htmlTemplate))

func reportSummary(rep *report.Report) difftest.Summary {
	if rep.Summary != nil {
		return *rep.Summary
	}
	var s difftest.Summary
	for _, r := range rep.Records {
		s.Add(r)
	}
	s.Aborted = "the report ends before its summary"
	return s
}

// casesOf counts the cases of the causes.
func casesOf(cs []*report.Cause) int {
	n := 0
	for _, c := range cs {
		n += len(c.Records)
	}
	return n
}

func deltaCell(c *stats.Comparison) string {
	if c == nil {
		return "-"
	}
	if !c.Significant {
		return "~"
	}
	return fmt.Sprintf("%+.1f%%", 100*(c.Ratio-1))
}

// pctBar is an inline SVG bar of p percent (0 … 100, wider values
// clipped) for the % of floor column.
func pctBar(p float64) template.HTML {
	w := math.Max(0, math.Min(100, p))
	return template.HTML(fmt.Sprintf(`<svg class="bar" width="104" height="12" role="img" aria-label="%.3g%%"><rect x="0" y="1" width="104" height="10" fill="#eef"/><rect x="2" y="2" width="%.2f" height="8" fill="#36c"/></svg>`, p, w))
}

// figureURI is the data: URI of a figure (a template.URL: the MIME type is
// one of two constants and the data base64, so nothing can escape it).
func figureURI(f Figure) template.URL {
	mime := "image/png"
	if f.MIME == "image/svg+xml" {
		mime = f.MIME
	}
	return template.URL("data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(f.Data))
}

// Histogram is one chart of the report: counts of a metric's values per
// bin over the cases (or worst elements) of one kernel.
type Histogram struct {
	Kernel, Metric, Note string
	Labels               []string
	Counts               []int
	SVG                  template.HTML
}

// distanceMetric tells a per-case metric worth a histogram: a ULP or code
// distance (an integer, binned by value) or a tolerance ratio (binned by
// decade, the line at 1 the limit).
func distanceMetric(name string) (ratio, ok bool) {
	switch {
	case strings.Contains(name, "ratio"):
		return true, true
	case strings.HasPrefix(name, "max_") && (strings.Contains(name, "ulp") || strings.Contains(name, "distance")):
		return false, true
	}
	return false, false
}

// kernelHistograms builds, per kernel of the runs, a histogram of every
// distance metric its records carry (max_ulp, max_code_distance: one
// count per case; max_ratio: the case's worst |d| / allowed) and one of
// the tolerance ratios of the worst elements of every case.
func kernelHistograms(runs []*report.Report) []Histogram {
	type key struct{ kernel, metric string }
	values := map[key][]float64{}
	var keys []key
	add := func(k key, v float64) {
		if _, seen := values[k]; !seen {
			keys = append(keys, k)
		}
		values[k] = append(values[k], v)
	}
	for _, rep := range runs {
		for _, r := range rep.Records {
			names := make([]string, 0, len(r.Metrics))
			for n := range r.Metrics {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				if _, ok := distanceMetric(n); !ok {
					continue
				}
				if v, ok := toFloat(r.Metrics[n]); ok {
					add(key{r.Kernel, n}, v)
				}
			}
			for _, e := range r.Worst {
				if e.Ratio != nil {
					add(key{r.Kernel, "worst element |d| / allowed"}, *e.Ratio)
				}
			}
		}
	}
	sort.SliceStable(keys, func(i, j int) bool {
		if keys[i].kernel != keys[j].kernel {
			return keys[i].kernel < keys[j].kernel
		}
		return keys[i].metric < keys[j].metric
	})
	var out []Histogram
	for _, k := range keys {
		isRatio, _ := distanceMetric(k.metric)
		if k.metric == "worst element |d| / allowed" {
			isRatio = true
		}
		h := Histogram{Kernel: k.kernel, Metric: k.metric}
		if isRatio {
			h.Labels, h.Counts = decadeBins(values[k])
			h.Note = fmt.Sprintf("%d values; above 1 fails", len(values[k]))
		} else {
			h.Labels, h.Counts = integerBins(values[k])
			h.Note = fmt.Sprintf("%d cases", len(values[k]))
		}
		h.SVG = barChart(h.Labels, h.Counts, isRatio)
		out = append(out, h)
	}
	return out
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x)
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// integerBins counts values 0, 1, …, 7 and "≥ 8" (a distance of 8 ULP or
// codes is far past any contract's 1).
func integerBins(vs []float64) ([]string, []int) {
	labels := []string{"0", "1", "2", "3", "4", "5", "6", "7", "≥8"}
	counts := make([]int, len(labels))
	for _, v := range vs {
		i := int(math.Max(0, math.Round(v)))
		counts[min(i, len(labels)-1)]++
	}
	return trimBins(labels, counts, 2)
}

// decadeBins counts ratios by decade: 0 (exact), (0, 1e-4), [1e-4, 1e-3),
// …, [0.01, 0.1), [0.1, 1] (a ratio of exactly 1 is the bound, which
// passes), then the failing (1, 10), [10, 100), ≥ 100.
func decadeBins(vs []float64) ([]string, []int) {
	labels := []string{"0", "<1e-4", "1e-4", "1e-3", "0.01", "0.1–1", ">1 ✗", "10 ✗", "≥100 ✗"}
	counts := make([]int, len(labels))
	for _, v := range vs {
		var i int
		switch {
		case v == 0:
			i = 0
		case v < 1e-4:
			i = 1
		case v <= 1:
			i = min(2+int(math.Floor(math.Log10(v)+4+1e-12)), 5)
		case v < 10:
			i = 6
		case v < 100:
			i = 7
		default:
			i = 8
		}
		counts[min(max(i, 0), len(labels)-1)]++
	}
	return labels, counts
}

// trimBins drops empty bins from the top, keeping at least keep.
func trimBins(labels []string, counts []int, keep int) ([]string, []int) {
	n := len(counts)
	for n > keep && counts[n-1] == 0 {
		n--
	}
	return labels[:n], counts[:n]
}

// barChart draws counts as an SVG bar chart with its labels below and
// each count above its bar; failing bins (labels ending in ✗) in red.
func barChart(labels []string, counts []int, ratio bool) template.HTML {
	const bw, gap, h, top = 40, 8, 120, 16
	peak := 1
	for _, c := range counts {
		peak = max(peak, c)
	}
	width := len(counts)*(bw+gap) + gap
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="hist" width="%d" height="%d" viewBox="0 0 %d %d" role="img">`, width, h+top+22, width, h+top+22)
	fmt.Fprintf(&b, `<line x1="0" y1="%d" x2="%d" y2="%d" stroke="#888"/>`, h+top, width, h+top)
	for i, c := range counts {
		x := gap + i*(bw+gap)
		bh := int(math.Round(float64(h) * float64(c) / float64(peak)))
		fill := "#36c"
		if strings.HasSuffix(labels[i], "✗") {
			fill = "#c33"
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`, x, h+top-bh, bw, bh, fill)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="11">%d</text>`, x+bw/2, h+top-bh-3, c)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="11">%s</text>`, x+bw/2, h+top+15, template.HTMLEscapeString(labels[i]))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

const htmlTemplate = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ccc}
h3{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px}td,th{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#f4f4f8}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code,pre{font:12px/1.35 ui-monospace,Menlo,Consolas,monospace}pre{background:#f6f6f6;padding:6px 8px;white-space:pre-wrap;word-break:break-all;margin:4px 0}
.pass{color:#170}.fail{color:#b00;font-weight:600}.muted{color:#777}
.emu{background:#fff3c4;border:1px solid #e0c050;padding:6px 10px;margin:8px 0}
.card{display:inline-block;margin:0 16px 8px 0;padding:8px 14px;border:1px solid #ddd;border-radius:6px;min-width:90px}
.card b{display:block;font-size:22px}.hists{display:flex;flex-wrap:wrap;gap:18px}.hists figure{margin:0}
figcaption{font-size:12px;color:#555}.fail-case{margin:10px 0 16px;padding-left:10px;border-left:3px solid #c33}
.matrix td.fail{background:#fde8e8}.matrix td.pass{background:#e8f6e8}.matrix td.skip{background:#f2f2f2}.matrix tr.first td{border-top:1px solid #bbb}
.diag{color:#614}details summary{cursor:pointer;color:#555}
</style></head><body>
<h1>{{.Title}}</h1>
<div class="muted">generated {{datetime .Generated}}{{range .Runs}} · suite {{.Header.Suite}}, impl {{.Header.Impl}}, seed {{.Header.Seed}}{{with .Header.Params}}, --param {{range $i, $p := .}}{{if $i}} {{end}}{{$p}}{{end}}{{end}}{{if .Header.GitCommit}}, commit <code>{{.Header.GitCommit}}</code>{{end}}{{end}}</div>
{{range $ri, $run := .Runs}}{{$s := summary $run}}
<h2 id="summary-{{$ri}}">Summary: {{$run.Header.Suite}} ({{$run.Header.Impl}})</h2>
{{with prop $run.Header "emulated"}}<div class="emu">emulated: {{.}}</div>{{end}}
<div><span class="card"><b class="pass">{{$s.Passed}}</b>passed</span><span class="card"><b class="{{if $s.Failed}}fail{{else}}pass{{end}}">{{$s.Failed}}</b>failed</span>{{if $s.Skipped}}<span class="card"><b>{{$s.Skipped}}</b>not tested</span>{{end}}<span class="card"><b>{{dur $s.Elapsed}}</b>elapsed</span></div>
<p>{{sumline $run}}</p>
{{$m := matrix $run}}{{if $m}}<table class="matrix" id="matrix-{{$ri}}"><tr><th>kernel</th><th>family</th><th>passed</th><th>failed</th><th>not tested</th></tr>
{{range $m}}<tr{{if .FirstOfItsKernel}} class="first"{{end}}><td>{{if .FirstOfItsKernel}}<b>{{.Kernel}}</b>{{end}}</td><td>{{.Family}}</td><td class="n{{if .Pass}} pass{{end}}">{{.Pass}}</td><td class="n{{if .Fail}} fail{{end}}">{{.Fail}}</td><td class="n{{if .Skip}} skip{{end}}">{{.Skip}}</td></tr>
{{end}}</table>{{end}}
{{with untested $run}}<p class="muted">not tested at all (every case skipped: not implemented or declined): {{.}}</p>{{end}}
<table>{{with prop $run.Header "device"}}<tr><th>device</th><td>{{.}}</td></tr>{{end}}{{with prop $run.Header "impl_version"}}<tr><th>implementation</th><td><code>{{.}}</code></td></tr>{{end}}
{{with drivercuda $run.Header}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}
{{with prop $run.Header "fatbin_sha256"}}<tr><th>fatbin SHA-256</th><td><code>{{.}}</code></td></tr>{{end}}{{with $run.Header.Params}}<tr><th>--param</th><td>{{range $i, $p := .}}{{if $i}}, {{end}}<code>{{$p}}</code>{{end}} (set in every case that takes them)</td></tr>{{end}}
<tr><th>generator</th><td>version {{$run.Header.GeneratorVersion}}</td></tr>
{{if $run.Header.Shard}}<tr><th>shard</th><td>{{$run.Header.Shard}}</td></tr>{{end}}{{if $run.Header.MergedShards}}<tr><th>merged</th><td>{{$run.Header.MergedShards}} shards</td></tr>{{end}}
<tr><th>started</th><td>{{datetime $run.Header.Started}}</td></tr></table>
{{with $s.Classes}}<table><tr><th>failure class</th><th>cases</th></tr>{{range $c, $n := .}}<tr><td>{{$c}}</td><td class="n">{{$n}}</td></tr>{{end}}</table>{{end}}
{{$causes := causes $run}}{{if $causes}}<h2 id="failures-{{$ri}}">Failures ({{plural (nfailed $causes) "case"}}, {{plural (len $causes) "cause"}})</h2>
{{range $ci, $c := $causes}}{{$r := index $c.Records 0}}<div class="fail-case"><div><span class="fail">[{{inc $ci}}]</span> <b>{{$c.Title}}</b></div>
{{range diaglines $r}}<div class="diag">{{.}}</div>{{end}}
<div><code>{{$r.Case}}</code> seed {{$r.Seed}}{{if $r.Device}} · device {{$r.Device}}{{end}}</div>
<pre>{{$r.Message}}</pre>
{{with breaking $r}}<table><tr><th>tensor</th><th>index</th><th>got</th><th>want</th><th>|d| / allowed</th></tr>{{range .}}<tr><td>{{.Tensor}}</td><td><code>{{.Index}}</code></td><td><code>{{.Got}}</code></td><td><code>{{.Want}}</code></td><td class="n">{{ratio .}}</td></tr>{{end}}</table>{{end}}
{{if $r.Replay}}<div>replay:</div><pre>{{$r.Replay}}</pre>{{end}}{{if $r.ReplayCapture}}<pre>{{$r.ReplayCapture}}</pre>{{end}}
{{range $r.Warnings}}<div class="muted">note: {{.}}</div>{{end}}
{{if $c.More}}<details><summary>{{moreline $c.More}}</summary><p><code>{{others $c}}</code></p></details>{{end}}</div>
{{end}}{{end}}
{{end}}
{{$hs := histograms .Runs}}{{if $hs}}<h2 id="histograms">Distances and tolerance ratios per kernel</h2>
<p class="muted">Per case: the largest ULP or e4m3-code distance to the reference, and the worst element's |d| / allowed (above 1 fails the case); per worst element of every case: its tolerance ratio.</p>
<div class="hists">{{range $hs}}<figure>{{.SVG}}<figcaption><b>{{.Kernel}}</b>: {{.Metric}} ({{.Note}})</figcaption></figure>{{end}}</div>{{end}}
{{range $bi, $b := .Benches}}
<h2 id="bench-{{$bi}}">Bench: {{$b.Suite}} ({{$b.Impl}}{{if $b.Baseline}} vs {{$b.Baseline}}{{end}})</h2>
{{if $b.Emulated}}<div class="emu">emulated: {{emunote}}</div>{{end}}
<p>{{method $b}}</p>
{{with $b.Bandwidth}}<p>copy bandwidth: <b>{{gbps .GBps}} GB/s</b> (cuMemcpyDtoD of {{bytes .Bytes}}, read + written, median of {{.Time.N}})</p>{{end}}
{{if $b.Baseline}}<table><tr><th>case</th><th>base</th><th>new</th><th>new/base</th><th>95% CI</th><th>vs base</th><th>p</th><th>n</th><th>% of floor</th><th></th></tr>
{{range $b.Results}}<tr><td><code>{{.Case}}</code>{{if .Failed}} <span class="fail">FAIL</span>{{end}}</td>{{if and .Comparison (index .Builds 0).Stats (index .Builds 1).Stats}}<td class="n">{{center (index .Builds 1).Stats}}</td><td class="n">{{center (index .Builds 0).Stats}}</td><td class="n">{{f3 .Comparison.Ratio}}</td><td class="n">{{if .Comparison.HasCI}}[{{f3 .Comparison.Lo}}, {{f3 .Comparison.Hi}}]{{else}}-{{end}}</td><td class="n">{{delta .Comparison}}</td><td class="n">{{f3 .Comparison.P}}</td><td class="n">{{.Comparison.NBase}}+{{.Comparison.NNew}}</td><td class="n">{{pct (index .Builds 0).PctOfFloor}}</td><td>{{bar (index .Builds 0).PctOfFloor}}</td>{{else}}<td colspan="9" class="muted">not timed{{range .Warnings}}: {{.}}{{end}}</td>{{end}}</tr>{{end}}
{{if $b.Geomean}}<tr><th>geomean</th><td></td><td></td><td class="n"><b>{{f3 $b.Geomean}}</b></td><td colspan="6"></td></tr>{{end}}</table>
<p class="muted">new/base: ratio of the medians; 95% CI: Hodges–Lehmann interval of the ratio; ~: no significant difference (Mann–Whitney U test, p ≥ {{$b.Method.Alpha}}).</p>
{{else}}<table><tr><th>case</th><th>median</th><th>IQR</th><th>min bytes</th><th>GB/s</th><th>% of floor</th><th></th></tr>
{{range $b.Results}}<tr><td><code>{{.Case}}</code>{{if .Failed}} <span class="fail">FAIL</span>{{end}}</td>{{with (index .Builds 0).Stats}}<td class="n">{{center .}}</td><td class="n">{{kt .IQR}}</td>{{else}}<td colspan="2" class="muted">not timed</td>{{end}}<td class="n">{{bytes .MinBytes}}</td><td class="n">{{gbps (index .Builds 0).EffectiveGBps}}</td><td class="n">{{pct (index .Builds 0).PctOfFloor}}</td><td>{{bar (index .Builds 0).PctOfFloor}}</td></tr>{{end}}</table>{{end}}
{{range $b.Results}}{{$r := .}}{{range .Builds}}{{if eq .Verdict "fail"}}<div class="fail-case"><span class="fail">FAIL</span> <code>{{$r.Case}}</code> [{{.Name}}] {{.Class}}<pre>{{.Message}}</pre></div>{{end}}{{end}}{{end}}
<p>{{timedn $b}} cases timed, {{nbfailed $b}} failed their checks, in {{dur $b.Elapsed}}.</p>
{{end}}
{{if .Figures}}<h2 id="figures">Figures</h2>{{range .Figures}}<figure><img src="{{figure .}}" alt="{{.Name}}" style="max-width:100%"><figcaption>{{.Name}}</figcaption></figure>{{end}}{{end}}
<p class="muted">kerneldiff · this page is self-contained: no scripts, fonts or images from the network.</p>
</body></html>
`

// driverCUDA is the header's driver and CUDA row as [label, value]:
// "driver / CUDA" with both, "driver" or "CUDA" with one (a row of
// "/ 13.0" read as a broken field), nil with neither.
func driverCUDA(h difftest.Header) []string {
	d, c := h.Properties[difftest.PropDriver], h.Properties[difftest.PropCUDA]
	switch {
	case d != "" && c != "":
		return []string{"driver / CUDA", d + " / " + c}
	case d != "":
		return []string{"driver", d}
	case c != "":
		return []string{"CUDA", c}
	}
	return nil
}
