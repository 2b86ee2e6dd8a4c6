// The human report: one aligned line per case, the failures with their
// replay commands, numbered footnotes for warnings (as benchstat prints
// them), and a summary line.

package render

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/report"
)

// tableCells formats the cells of one record: status, case id, seed
// (when seeds is set), class (or "-"), key metric (or "-") and time. Text
// that comes from the record (a case id read back from a capture or a
// report file) is escaped with SafeText.
func tableCells(r *difftest.Record, seeds, devices bool) []string {
	status, class := "ok", "-"
	switch {
	case r.Failed():
		status, class = "FAIL", string(r.Class)
	case r.Verdict == difftest.VerdictSkip:
		status, class = "skip", string(r.Class)
	}
	metric := r.KeyMetric
	if metric == "" {
		metric = "-"
	}
	cells := []string{status, difftest.SafeText(r.Case)}
	if seeds {
		cells = append(cells, fmt.Sprint(r.Seed))
	}
	if devices {
		cells = append(cells, difftest.SafeText(r.Device))
	}
	return append(cells, difftest.SafeText(class), difftest.SafeText(metric), caseTime(r))
}

// manySeeds reports whether the records ran under more than one seed
// (--repeat, or a merged report of such a run): then the table needs a
// SEED column to tell the rows of one case apart.
func manySeeds(recs []*difftest.Record) bool {
	for _, r := range recs[min(1, len(recs)):] {
		if r.Seed != recs[0].Seed {
			return true
		}
	}
	return false
}

// caseTime is the kernel time when the implementation measured it, else
// the case's wall time marked "~" (see the footnote WriteTable adds).
func caseTime(r *difftest.Record) string {
	if r.KernelTime > 0 {
		return difftest.FormatDuration(r.KernelTime)
	}
	return "~" + difftest.FormatDuration(r.WallTime)
}

// WriteTable writes the human report of rep.
//
//	STATUS  CASE                          CLASS     METRIC          TIME
//	ok      topk_transform/gaussian-b1    -         -               ~1.20ms
//	FAIL    topk_transform/ties-k         mismatch  missing=1       ~2.31ms ¹
//
// with a SEED column after CASE when the records ran under more than one
// seed (--repeat), and a DEVICE column when they carry their device (a run
// over several, --device all); then the matrix of kernel × family ×
// verdict (writeMatrix), when there is more than one row to it; then the
// failures grouped by cause (report.Causes: class, diagnosis, first
// broken rule), one block each: its title, its diagnosis ("behaves like
// NAME: what it does", triage.DiagnosisLines), its first case's message,
// worst elements (at most difftest.MaxWorst) and replay command(s), and
// "N more cases like this:" with their ids (at most maxListed); then
// numbered warnings; then, for a run on the emulated driver
// (PropEmulated), a line "emulated: WHAT RAN"; the --param overrides
// (ParamsLine); then "N passed, M failed (class n, …) in T". A record
// without kernel time shows its wall time with a "~" and a footnote. Text
// the harness did not write (case ids, messages that quote an exec
// program's stderr, warnings, paths) is escaped with SafeText, so it can
// neither break the table nor drive the terminal.
func WriteTable(w io.Writer, rep *report.Report) error {
	seeds := manySeeds(rep.Records)
	devices := false
	for _, r := range rep.Records {
		devices = devices || r.Device != ""
	}
	header := []string{"STATUS", "CASE"}
	if seeds {
		header = append(header, "SEED")
	}
	if devices {
		header = append(header, "DEVICE")
	}
	header = append(header, "CLASS", "METRIC", "TIME")
	rows := [][]string{header}
	notes := &footnotes{index: map[string]int{}}
	var wall bool
	marks := make([]string, len(rep.Records))
	for i, r := range rep.Records {
		rows = append(rows, tableCells(r, seeds, devices))
		var ms []string
		for _, wn := range r.Warnings {
			ms = append(ms, notes.mark(difftest.SafeLine(wn)))
		}
		if r.KernelTime == 0 {
			wall = true
		}
		marks[i] = strings.Join(ms, "")
	}
	widths := difftest.ColumnWidths(rows)
	var b strings.Builder
	for i, row := range rows {
		line := difftest.PadRow(row, widths)
		if i > 0 && marks[i-1] != "" {
			line += " " + marks[i-1]
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}

	writeMatrix(&b, rep.Records)
	writeCauses(&b, rep.Records)
	legend := metricLegend(rep.Records)
	if len(notes.list) > 0 || wall || len(legend) > 0 {
		b.WriteString("\n")
		for i, n := range notes.list {
			fmt.Fprintf(&b, "%s %s\n", superscript(i+1), n)
		}
		if wall {
			b.WriteString("~ wall time of the whole case (generation, both runs, reference, checks): the implementation measured no kernel time\n")
		}
		for _, l := range legend {
			b.WriteString(l + "\n")
		}
	}
	sum := rep.Summary
	if sum == nil {
		sum = &difftest.Summary{}
		for _, r := range rep.Records {
			sum.Add(r)
		}
		sum.Aborted = "the report ends before its summary"
	}
	if e := rep.Header.Properties[difftest.PropEmulated]; e != "" {
		b.WriteString("\nemulated: " + difftest.SafeText(e) + "\n")
	}
	if len(rep.Header.Params) > 0 {
		b.WriteString("\n" + ParamsLine(rep.Header.Params) + "\n")
	}
	b.WriteString("\n" + SummaryLine(*sum) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// SummaryLine renders "N passed, M failed (mismatch 2, guard 1) in 3.20s",
// with "; stopped early: WHY" when the run was cut short. Class names and
// WHY, which a report file read back may carry, are escaped (SafeText).
func SummaryLine(s difftest.Summary) string {
	line := fmt.Sprintf("%d passed, %d failed", s.Passed, s.Failed)
	if s.Skipped > 0 {
		line += fmt.Sprintf(", %d not tested", s.Skipped)
	}
	if len(s.Classes) > 0 {
		classes := make([]string, 0, len(s.Classes))
		for c := range s.Classes {
			classes = append(classes, string(c))
		}
		sort.Slice(classes, func(i, j int) bool {
			ci, cj := s.Classes[difftest.Class(classes[i])], s.Classes[difftest.Class(classes[j])]
			if ci != cj {
				return ci > cj
			}
			return classes[i] < classes[j]
		})
		parts := make([]string, len(classes))
		for i, c := range classes {
			parts[i] = fmt.Sprintf("%s %d", difftest.SafeText(c), s.Classes[difftest.Class(c)])
		}
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	if s.Elapsed > 0 {
		line += " in " + difftest.FormatDuration(s.Elapsed)
	}
	if s.Aborted != "" {
		line += "; stopped early: " + difftest.SafeLine(s.Aborted)
	}
	return line
}

type footnotes struct {
	index map[string]int
	list  []string
}

func (f *footnotes) mark(note string) string {
	i, ok := f.index[note]
	if !ok {
		f.list = append(f.list, note)
		i = len(f.list)
		f.index[note] = i
	}
	return superscript(i)
}

func superscript(n int) string {
	const digits = "⁰¹²³⁴⁵⁶⁷⁸⁹"
	ds := []rune(digits)
	s := ""
	for _, c := range fmt.Sprint(n) {
		s += string(ds[c-'0'])
	}
	return s
}

// maxListed is how many case ids a cause's block lists after its first
// case: 137 cases of one cause read in one screen, the others are the
// FAIL rows of the table.
const maxListed = 30

// listWidth is the width the ids of a cause's block are wrapped to.
const listWidth = 100

// writeCauses writes the failures of recs grouped by cause (see
// WriteTable; report.Cause.Block), the ids wrapped to listWidth.
func writeCauses(b *strings.Builder, recs []*difftest.Record) {
	causes := report.Causes(recs)
	if len(causes) == 0 {
		return
	}
	n := 0
	for _, c := range causes {
		n += len(c.Records)
	}
	fmt.Fprintf(b, "\nfailures: %s by %s\n", plural(n, "case"), plural(len(causes), "cause"))
	for i, c := range causes {
		b.WriteString("\n")
		lines := c.Block(i+1, maxListed)
		if c.More() > 0 { // the ids, wrapped; never a message or a replay line
			last := len(lines) - 1
			lines = append(lines[:last], wrap(lines[last], listWidth, "    ")...)
		}
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
}

// plural is "1 case", "2 cases".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// wrap breaks s at spaces into lines of at most width bytes (a longer word
// stays whole), keeping s's leading spaces; the lines after the first are
// indented by indent.
func wrap(s string, width int, indent string) []string {
	rest := strings.TrimLeft(s, " ")
	line := s[:len(s)-len(rest)]
	start := len(line) // where the first word goes
	var lines []string
	for _, w := range strings.Split(rest, " ") {
		switch {
		case len(line) == start:
			line += w
		case len(line)+1+len(w) > width:
			lines = append(lines, line)
			line, start = indent+w, len(indent)
		default:
			line += " " + w
		}
	}
	return append(lines, line)
}

// MatrixRow is one row of the kernel × family × verdict matrix: how many
// cases of one input family of one kernel passed, failed and were not
// tested.
type MatrixRow struct {
	Kernel, Family   string
	Pass, Fail, Skip int
	FirstOfItsKernel bool // the first row of its kernel (the table prints the kernel there only)
}

// Matrix counts recs by kernel and input family (Record.Kernel, else the
// case id's prefix; Record.Family, else "-"), kernels and families in
// name order.
func Matrix(recs []*difftest.Record) []MatrixRow {
	type key struct{ kernel, family string }
	rows := map[key]*MatrixRow{}
	var keys []key
	for _, r := range recs {
		k := key{r.Kernel, r.Family}
		if k.kernel == "" {
			k.kernel, _, _ = strings.Cut(r.Case, "/")
		}
		if k.family == "" {
			k.family = "-"
		}
		row, ok := rows[k]
		if !ok {
			row = &MatrixRow{Kernel: k.kernel, Family: k.family}
			rows[k] = row
			keys = append(keys, k)
		}
		switch {
		case r.Failed():
			row.Fail++
		case r.Verdict == difftest.VerdictSkip:
			row.Skip++
		default:
			row.Pass++
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].kernel != keys[j].kernel {
			return keys[i].kernel < keys[j].kernel
		}
		return keys[i].family < keys[j].family
	})
	out := make([]MatrixRow, len(keys))
	for i, k := range keys {
		out[i] = *rows[k]
		out[i].FirstOfItsKernel = i == 0 || keys[i-1].kernel != k.kernel
	}
	return out
}

// writeMatrix writes the matrix of kernel × family × verdict (Matrix) as
// a text table, when it has more than one row:
//
//	by kernel and family:
//	  KERNEL          FAMILY    ok  FAIL  skip
//	  topk_transform  gaussian  80  7     -
//	                  needle    26  -     -
//
// The skip column only when a case was not tested; 0 is "-".
func writeMatrix(b *strings.Builder, recs []*difftest.Record) {
	m := Matrix(recs)
	if len(m) < 2 {
		return
	}
	skips := false
	for _, r := range m {
		skips = skips || r.Skip > 0
	}
	count := func(n int) string {
		if n == 0 {
			return "-"
		}
		return fmt.Sprint(n)
	}
	header := []string{"KERNEL", "FAMILY", "ok", "FAIL"}
	if skips {
		header = append(header, "skip")
	}
	rows := [][]string{header}
	for _, r := range m {
		kernel := ""
		if r.FirstOfItsKernel {
			kernel = difftest.SafeText(r.Kernel)
		}
		row := []string{kernel, difftest.SafeText(r.Family), count(r.Pass), count(r.Fail)}
		if skips {
			row = append(row, count(r.Skip))
		}
		rows = append(rows, row)
	}
	widths := difftest.ColumnWidths(rows)
	b.WriteString("\nby kernel and family:\n")
	for _, row := range rows {
		b.WriteString(strings.TrimRight("  "+difftest.PadRow(row, widths), " ") + "\n")
	}
}

// ParamsLine renders a run's --param overrides (Header.Params) for the
// table: "params: accum_bits=8, intermediate=bf16 (--param: set in every
// case that takes them)". Escaped (SafeText).
func ParamsLine(params []string) string {
	ps := make([]string, len(params))
	for i, p := range params {
		ps[i] = difftest.SafeText(p)
	}
	return "params: " + strings.Join(ps, ", ") + " (--param: set in every case that takes them)"
}

// okMetrics says what each metric an ok row may show means: how close the
// case came, never a verdict (the verdict is "ok"). Top-k passes show none
// (difftest.KeyMetric).
var okMetrics = []struct{ name, doc string }{
	{"max_ulp", "the largest distance to the reference's bf16 value, in ULP (within the derived bound)"},
	{"max_code_distance", "the largest distance to the reference's code, in e4m3 or e2m1 codes (within the derived bound)"},
	{"max_ratio", "the worst element's |got − exact| / allowed bound (≤ 1 passes; 1 is the bound)"},
	{"recall", "the share of the exact top-K chosen, worst row (a pipeline's, end to end against the unquantised f64 pipeline: quantised keys lose some); needles: planted needles chosen"},
}

// metricLegend returns one line per metric name the ok rows of recs show
// (KeyMetric "name=value …"), saying what it means, under the heading
// "METRIC of an ok row:"; none when no ok row shows one of okMetrics.
func metricLegend(recs []*difftest.Record) []string {
	shown := map[string]bool{}
	for _, r := range recs {
		if r.Verdict == difftest.VerdictPass {
			name, _, _ := strings.Cut(r.KeyMetric, "=")
			shown[name] = true
		}
	}
	var lines []string
	for _, m := range okMetrics {
		if shown[m.name] {
			lines = append(lines, fmt.Sprintf("  %-17s %s", m.name, m.doc))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return append([]string{"METRIC of an ok row, how close it came (not a verdict):"}, lines...)
}

// SplitUntested divides Matrix's rows into those of kernels with at least
// one tested case (passed or failed) and the names of kernels whose every
// case was not tested (an implementation that does not offer the kernel,
// or declines each of its cases), with how many cases each has: the HTML
// report's family table shows the first, one line names the others.
func SplitUntested(rows []MatrixRow) (tested []MatrixRow, untested []string) {
	type count struct{ tested, all int }
	byKernel := map[string]*count{}
	var order []string
	for _, r := range rows {
		c, ok := byKernel[r.Kernel]
		if !ok {
			c = &count{}
			byKernel[r.Kernel] = c
			order = append(order, r.Kernel)
		}
		c.tested += r.Pass + r.Fail
		c.all += r.Pass + r.Fail + r.Skip
	}
	for _, r := range rows {
		if byKernel[r.Kernel].tested > 0 {
			tested = append(tested, r)
		}
	}
	for i := range tested {
		tested[i].FirstOfItsKernel = i == 0 || tested[i-1].Kernel != tested[i].Kernel
	}
	for _, k := range order {
		if c := byKernel[k]; c.tested == 0 {
			untested = append(untested, fmt.Sprintf("%s (%d %s)", k, c.all, map[bool]string{true: "case", false: "cases"}[c.all == 1]))
		}
	}
	return tested, untested
}
