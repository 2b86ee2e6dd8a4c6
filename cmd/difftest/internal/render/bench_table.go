// The human table of difftest bench, laid out as benchstat lays out its
// comparisons: one row per case, the center with its ± interval, the
// ratio to the baseline with its interval and "~" where the U test finds
// no difference, footnotes for warnings, a geomean row.

package render

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/bench"
	"github.com/kerneldiff/kerneldiff/difftest/bench/stats"
)

// EmulatedTimesNote is printed (and shown in the HTML report) above the
// times of a run on the emulated driver.
const EmulatedTimesNote = "times are the CPU emulator's: meaningless as GPU performance (the plumbing is real)"

// WriteBenchTable writes rep as a table: a header of how the times were
// taken (device, cold-L2 method, runs, copy bandwidth), one row per case
// (median ± the half-width of its 95 % interval as a percentage of it,
// IQR, the kernel's minimum bytes, the effective bandwidth and % of the
// floor; with a baseline, both medians, new/base with its 95 % interval,
// the change or "~", p and the run counts), a geomean row, the failures
// with their messages, and the warnings as numbered footnotes.
func WriteBenchTable(w io.Writer, rep *bench.BenchReport) error {
	var b strings.Builder
	b.WriteString(BenchMethodLine(rep) + "\n")
	if bw := rep.Bandwidth; bw != nil {
		fmt.Fprintf(&b, "copy bandwidth: %.1f GB/s (cuMemcpyDtoD of %s, read + written, median of %d)\n", bw.GBps, fmtBytes(bw.Bytes), bw.Time.N)
	}
	if rep.Emulated {
		b.WriteString("emulated: " + EmulatedTimesNote + "\n")
	}
	b.WriteString("\n")
	ab := rep.Baseline != ""
	header := []string{"CASE", "MEDIAN", "IQR", "MIN BYTES", "GB/s", "% OF FLOOR"}
	if ab {
		header = []string{"CASE", "BASE", "NEW", "NEW/BASE", "95% CI", "VS BASE", "P", "N", "% OF FLOOR"}
	}
	rows := [][]string{header}
	notes := &footnotes{index: map[string]int{}}
	var marks []string
	var failed []*bench.BenchResult
	for _, r := range rep.Results {
		var ms []string
		for _, wn := range r.Warnings {
			ms = append(ms, notes.mark(difftest.SafeLine(wn)))
		}
		marks = append(marks, strings.Join(ms, ""))
		if r.Failed() {
			failed = append(failed, r)
		}
		rows = append(rows, benchCells(r, ab))
	}
	if ab && rep.Geomean > 0 {
		rows = append(rows, []string{"geomean", "", "", fmt.Sprintf("%.3f", rep.Geomean), "", "", "", "", ""})
		marks = append(marks, "")
	}
	widths := difftest.ColumnWidths(rows)
	for i, row := range rows {
		var line strings.Builder
		for j, c := range row {
			pad := widths[j] - utf8.RuneCountInString(c)
			if j == 0 {
				line.WriteString(c + strings.Repeat(" ", pad))
			} else {
				line.WriteString("  " + strings.Repeat(" ", pad) + c) // numbers right-aligned
			}
		}
		if i > 0 && marks[i-1] != "" {
			line.WriteString(" " + marks[i-1])
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	if len(failed) > 0 {
		b.WriteString("\nfailures:\n")
		for _, r := range failed {
			for _, br := range r.Builds {
				if br.Verdict == difftest.VerdictFail {
					fmt.Fprintf(&b, "  %s [%s]: %s: %s\n", difftest.SafeText(r.Case), difftest.SafeText(br.Name), difftest.SafeText(string(br.Class)), difftest.SafeLine(br.Message))
				}
			}
		}
	}
	if len(notes.list) > 0 || ab {
		b.WriteString("\n")
		for i, n := range notes.list {
			fmt.Fprintf(&b, "%s %s\n", superscript(i+1), n)
		}
		if ab {
			fmt.Fprintf(&b, "new/base: ratio of the medians; 95%% CI: Hodges-Lehmann interval of the ratio; ~: no significant difference (Mann-Whitney U test, p ≥ %.2g)\n", rep.Method.Alpha)
		}
	}
	fmt.Fprintf(&b, "\n%d cases timed, %d failed their checks in %s\n", timedCount(rep), rep.Failed(), difftest.FormatDuration(rep.Elapsed))
	_, err := io.WriteString(w, b.String())
	return err
}

// BenchMethodLine is the one-line account of how rep's times were taken.
func BenchMethodLine(rep *bench.BenchReport) string {
	m := rep.Method
	parts := []string{"suite " + difftest.SafeText(rep.Suite), "impl " + difftest.SafeText(rep.Impl)}
	if rep.Baseline != "" {
		parts = append(parts, "baseline "+difftest.SafeText(rep.Baseline))
	}
	if d := rep.Properties[difftest.PropDevice]; d != "" {
		parts = append(parts, "device "+difftest.SafeText(d))
	}
	switch {
	case m.Timer != "cuda-events":
		parts = append(parts, "times the implementation reports (L2 not controlled)")
	case m.Cold == bench.ColdRotate:
		parts = append(parts, fmt.Sprintf("cold L2: rotating input copies (L2 %s), CUDA events", fmtBytes(m.L2Bytes)))
	default:
		parts = append(parts, fmt.Sprintf("cold L2: %s written before each run (L2 %s), CUDA events", fmtBytes(m.FlushBytes), fmtBytes(m.L2Bytes)))
	}
	parts = append(parts, fmt.Sprintf("%d warm-up + %d timed runs", m.Warmup, m.Runs))
	return "bench: " + strings.Join(parts, ", ")
}

func timedCount(rep *bench.BenchReport) int {
	n := 0
	for _, r := range rep.Results {
		if len(r.Builds) > 0 && r.Builds[0].Stats != nil {
			n++
		}
	}
	return n
}

// benchCells formats one result row.
func benchCells(r *bench.BenchResult, ab bool) []string {
	id := difftest.SafeText(r.Case)
	dash := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "-"
		}
		return out
	}
	if !ab {
		if len(r.Builds) == 0 || r.Builds[0].Stats == nil {
			return append([]string{id}, dash(5)...)
		}
		br := r.Builds[0]
		return []string{id, centerCell(br.Stats), fmtKernelTime(br.Stats.IQR), bytesCell(r.MinBytes), gbpsCell(br.EffectiveGBps), pctCell(br.PctOfFloor)}
	}
	if len(r.Builds) < 2 || r.Builds[0].Stats == nil || r.Builds[1].Stats == nil || r.Comparison == nil {
		return append([]string{id}, dash(8)...)
	}
	c := r.Comparison
	ci, delta := "-", "~"
	if c.HasCI {
		ci = fmt.Sprintf("[%.3f, %.3f]", c.Lo, c.Hi)
	}
	if c.Significant {
		delta = fmt.Sprintf("%+.1f%%", 100*(c.Ratio-1))
	}
	return []string{id, centerCell(r.Builds[1].Stats), centerCell(r.Builds[0].Stats), fmt.Sprintf("%.3f", c.Ratio), ci, delta,
		fmt.Sprintf("%.3f", c.P), fmt.Sprintf("%d+%d", c.NBase, c.NNew), pctCell(r.Builds[0].PctOfFloor)}
}

// centerCell is "12.31µs ±2%": the median and the larger distance from it
// to an end of its 95 % interval, in percent (benchstat's ±).
func centerCell(s *stats.Stats) string {
	if s.MedianLo == 0 && s.MedianHi == 0 || s.Median <= 0 {
		return fmtKernelTime(s.Median) + " ±?"
	}
	d := math.Max(float64(s.MedianHi-s.Median), float64(s.Median-s.MedianLo)) / float64(s.Median)
	return fmt.Sprintf("%s ±%.0f%%", fmtKernelTime(s.Median), 100*d)
}

// fmtKernelTime renders a kernel time with 4 significant digits, as
// benchstat does: "9.512µs", "10.95µs", "109.5µs", "1.234ms", "2.500s".
func fmtKernelTime(d time.Duration) string {
	v, unit := float64(d)/float64(time.Microsecond), "µs"
	switch {
	case d >= time.Second:
		v, unit = d.Seconds(), "s"
	case d >= time.Millisecond:
		v, unit = float64(d)/float64(time.Millisecond), "ms"
	}
	return sig4(v) + unit
}

// sig4 formats v ≥ 0 with 4 significant digits (at least one decimal
// below 1000), 3 below 1: 9.512, 10.95, 109.5, 1234, 0.0142.
func sig4(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 100:
		return fmt.Sprintf("%.1f", v)
	case v >= 10:
		return fmt.Sprintf("%.2f", v)
	case v >= 1 || v == 0:
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func pctCell(p float64) string {
	if p <= 0 {
		return "-"
	}
	return sig4(p) + "%"
}

func gbpsCell(g float64) string {
	if g <= 0 {
		return "-"
	}
	return sig4(g)
}

func bytesCell(n int64) string {
	if n <= 0 {
		return "-"
	}
	return fmtBytes(n)
}

// fmtBytes renders a byte count with a binary prefix: "512 B", "4.0 KiB",
// "100.0 MiB", "1.50 GiB".
func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
