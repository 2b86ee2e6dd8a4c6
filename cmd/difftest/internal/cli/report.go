package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/render"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/filekind"
	"github.com/kerneldiff/kerneldiff/difftest/report"
)

// maxReportInput bounds each file `difftest report` reads (a JSON Lines
// report, a bench report, a figure), read before it is parsed.
const maxReportInput = 256 << 20

// reportCmd is `difftest report RUN.jsonl [BENCH.json ...] [FIG.svg ...]
// -o report.html`: one self-contained HTML page (render.WriteHTML).
// Each file is told by its content: a JSON Lines report (first line a
// header), a bench report (a JSON object of type "bench"), or an SVG or
// PNG figure. Exit 0 when written, 2 for usage or an unreadable input.
func reportCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("report", stderr)
	out := fs.String("o", "", "write the HTML page to `FILE` (required)")
	title := fs.String("title", "kerneldiff report", "the page's title")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if *out == "" || len(pos) == 0 {
		return usageErr(stderr, "usage: difftest report RUN.jsonl [BENCH.json ...] [FIGURE.svg ...] -o report.html")
	}
	if err := checkOutputFiles("-o", *out); err != nil {
		return usageErr(stderr, "%v", err)
	}
	for _, in := range pos {
		if err := difftest.CheckNotInput("-o", *out, "an input", in); err != nil {
			return usageErr(stderr, "%v", err)
		}
	}
	r := &render.HTMLReport{Title: *title, Generated: time.Now(), Diagnoses: map[[2]int]string{}}
	for _, path := range pos {
		data, err := readBounded(path, maxReportInput)
		if err != nil {
			return usageErr(stderr, "%s: %v", path, err)
		}
		trimmed := bytes.TrimLeft(data, " \t\r\n")
		switch {
		case bytes.HasPrefix(trimmed, []byte("<svg")) || bytes.HasPrefix(trimmed, []byte("<?xml")):
			r.Figures = append(r.Figures, render.Figure{Name: filepath.Base(path), MIME: "image/svg+xml", Data: data})
		case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
			r.Figures = append(r.Figures, render.Figure{Name: filepath.Base(path), MIME: "image/png", Data: data})
		case bytes.HasPrefix(trimmed, []byte(`{"type":"header"`)):
			rep, err := report.ReadJSONL(path, bytes.NewReader(data))
			if err != nil {
				return usageErr(stderr, "%v", err)
			}
			for i, d := range render.RawDiagnoses(data) {
				if d != "" {
					r.Diagnoses[[2]int{len(r.Runs), i}] = d
				}
			}
			r.Runs = append(r.Runs, rep)
		case bytes.HasPrefix(trimmed, []byte("{")):
			b, err := render.ReadBenchReport(path, data)
			if err != nil {
				return usageErr(stderr, "%v", err)
			}
			r.Benches = append(r.Benches, b)
		default:
			return usageErr(stderr, "%s: not a JSON Lines report (difftest run --json), a bench report (difftest bench --json) or an SVG/PNG figure", path)
		}
	}
	if err := writeFileAtomic(*out, func(w io.Writer) error { return render.WriteHTML(w, r) }); err != nil {
		return usageErr(stderr, "-o %s: %v", *out, err)
	}
	var parts []string
	for _, rep := range r.Runs {
		parts = append(parts, difftest.SafeLine(rep.Header.Suite)+": "+render.SummaryLine(*summaryOf(rep)))
	}
	for _, b := range r.Benches {
		parts = append(parts, fmt.Sprintf("bench %s: %d results", difftest.SafeLine(b.Suite), len(b.Results)))
	}
	fmt.Fprintf(stdout, "difftest report: %s (%s)\n", difftest.SafeLine(*out), strings.Join(parts, "; "))
	return difftest.ExitPass
}

// summaryOf is the report's summary line, or one counted from its records
// when the run did not finish.
func summaryOf(rep *report.Report) *difftest.Summary {
	if rep.Summary != nil {
		return rep.Summary
	}
	s := &difftest.Summary{}
	for _, r := range rep.Records {
		s.Add(r)
	}
	return s
}

// readBounded reads a regular file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("is %s, not a regular file", filekind.Of(st.Mode()))
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%d bytes, over the %d MiB a report input may have", st.Size(), limit>>20)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit+1))
}
