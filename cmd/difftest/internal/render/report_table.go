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
	"github.com/kerneldiff/kerneldiff/difftest/triage"
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

// worstLine formats one worst element of a failure. The ratio |d| /
// allowed is printed only for an element compared within a tolerance
// (Element.Ratio set); an exactly compared one has none to print.
func worstLine(e difftest.Element) string {
	line := fmt.Sprintf("worst %s%s: got %s, want %s", difftest.SafeText(e.Tensor), difftest.SafeText(e.Index), difftest.SafeText(e.Got), difftest.SafeText(e.Want))
	if e.Ratio != nil {
		line += fmt.Sprintf(" (ratio %.3g)", *e.Ratio)
	}
	return line
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
//	ok      topk_transform/gaussian-b1    -         recall=1        ~1.20ms
//	FAIL    topk_transform/ties-k         mismatch  missing=1       ~2.31ms ¹
//
// with a SEED column after CASE when the records ran under more than one
// seed (--repeat), and a DEVICE column when they carry their device (a run
// over several, --device all); then, per failure, its message, its
// diagnosis ("behaves like NAME: what it does", DiagnosisLines), worst
// elements and
// replay command(s); then numbered warnings; then, for a run on the
// emulated driver (PropEmulated), a line "emulated: WHAT RAN"; then
// "N passed, M failed (class n, …) in T". A record without kernel time
// shows its wall time with a "~" and a footnote. Text the harness did not
// write (case ids, messages that quote an exec program's stderr, warnings,
// paths) is escaped with SafeText, so it can neither break the table nor
// drive the terminal.
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

	var failed []*difftest.Record
	for _, r := range rep.Records {
		if r.Failed() {
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		b.WriteString("\nfailures:\n")
		for _, r := range failed {
			fmt.Fprintf(&b, "  %s (seed %d): %s: %s\n", difftest.SafeText(r.Case), r.Seed, difftest.SafeText(string(r.Class)), difftest.SafeLine(r.Message))
			for _, l := range triage.DiagnosisLines(r) {
				fmt.Fprintf(&b, "    %s\n", l)
			}
			for _, e := range r.Worst {
				fmt.Fprintf(&b, "    %s\n", worstLine(e))
			}
			if r.Replay != "" {
				fmt.Fprintf(&b, "    replay: %s\n", difftest.SafeText(r.Replay))
			}
			if r.Capture != "" {
				fmt.Fprintf(&b, "    replay: %s\n", difftest.SafeText(report.ReplayCaptureCommand(r)))
			}
		}
	}
	if len(notes.list) > 0 || wall {
		b.WriteString("\n")
		for i, n := range notes.list {
			fmt.Fprintf(&b, "%s %s\n", superscript(i+1), n)
		}
		if wall {
			b.WriteString("~ wall time of the whole case (generation, both runs, reference, checks): the implementation measured no kernel time\n")
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
