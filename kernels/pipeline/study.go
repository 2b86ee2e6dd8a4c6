// `difftest study needle` (docs/pipeline.md): the seed story's isolation
// table done right. FP8 and BF16 keys side by side on identical inputs,
// through the whole pipeline on the implementation under test, each stage
// checked, with the needle's fate and the recall of the exact top-K per
// store; next to them, labelled as noise, the Jaccard overlap of two
// selections from separately drawn scores (what the seed story measured).

package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/kernels/normrope"
)

func init() {
	difftest.RegisterCommand(difftest.Command{
		Name:    "study",
		Summary: "study needle: FP8 vs BF16 keys through the pipeline, needle and recall against the exact top-K",
		Usage:   "study needle [--impl IMPL] [--lengths LIST] [--margin LIST] [--seed N] [--json FILE] [--svg FILE]",
		Run:     runStudy,
	})
}

// DefaultStudyLengths are the sequence lengths of the study (docs/pipeline.md); --lengths replaces them.
var DefaultStudyLengths = []int{1000, 2000, 4500, 10000, 22000, 60000}

// DefaultStudyMargins are the needle margins of the study, in standard
// deviations of the row's exact logits above its K-th largest; --margin
// replaces them.
var DefaultStudyMargins = []float64{0.25, 1, 3}

// StudyStore is one store's outcome for one length and margin.
type StudyStore struct {
	Preset     string  `json:"preset"`
	Verdict    string  `json:"verdict"`         // "pass" when every stage passed its check
	Class      string  `json:"class,omitempty"` // the failing stage's class
	Message    string  `json:"message,omitempty"`
	Selected   bool    `json:"needle_selected"`
	Rank       int     `json:"needle_rank"`       // 1 + positions the implementation's logits rank above the needle
	ExactRank  int     `json:"needle_exact_rank"` // the same among the exact logits
	Recall     float64 `json:"recall"`            // |chosen ∩ exact top-K| / K
	KernelTime int64   `json:"kernel_time_ns,omitempty"`
}

// StudyRow is one line of the table: one length and margin, both stores.
type StudyRow struct {
	S       int        `json:"S"`
	Needle  int        `json:"needle"`
	Margin  float64    `json:"margin"`         // asked
	Planted float64    `json:"margin_planted"` // reached (bf16 tokens)
	FP8     StudyStore `json:"fp8"`
	BF16    StudyStore `json:"bf16"`
	Jaccard float64    `json:"noise_jaccard"` // two selections of K from separately drawn N(0,1) scores: noise
	K       int        `json:"K"`
	Heads   int        `json:"H"`
}

// StudyConfig configures RunStudy.
type StudyConfig struct {
	Impl    difftest.Impl
	Lengths []int
	Margins []float64
	Seed    uint64
	K, H, P int
	Timeout time.Duration
}

// RunStudy runs the needle study: for each length S and margin, one
// pipeline case per store with the same key (so identical tokens,
// queries, weights and page tables), each through the chain on cfg.Impl.
func RunStudy(ctx context.Context, cfg StudyConfig) ([]StudyRow, error) {
	var rows []StudyRow
	for _, m := range cfg.Margins {
		for _, S := range cfg.Lengths {
			name := fmt.Sprintf("study/needle/S=%d/margin=%g", S, m)
			key := rng.CaseKey(cfg.Seed, KernelName+"/"+name)
			row := StudyRow{S: S, Margin: m, K: cfg.K, Heads: cfg.H, Jaccard: noiseJaccard(key, S, cfg.K)}
			for _, preset := range []string{normrope.PresetV4, normrope.PresetV4BF16} {
				spec := difftest.CaseSpec{Kernel: KernelName, Family: "needle", Name: name + "/" + preset, Params: map[string]any{
					"lengths": []any{int64(S)}, "preset": preset, "K": int64(cfg.K), "H": int64(cfg.H), "P": int64(cfg.P), "margin": m}}
				c, err := NewCase(spec, cfg.Seed, key)
				if err != nil {
					return rows, err
				}
				if err := (Kernel{}).Validate(c); err != nil {
					return rows, err
				}
				p := c.Params.(Params)
				row.Needle, row.Planted = p.Needles[0], p.Margins[0]
				rec := difftest.NewRecord(c, cfg.Impl.Name())
				cr := difftest.CaseRun{Impl: cfg.Impl, Timeout: cfg.Timeout}
				if _, err := cr.RunCase(ctx, Kernel{}, c, rec); err != nil {
					return rows, err
				}
				st := StudyStore{Preset: preset, Verdict: string(rec.Verdict), Class: string(rec.Class), Message: rec.Message, KernelTime: int64(rec.KernelTime)}
				if v, ok := rec.Metrics["needles_selected"].(int); ok {
					st.Selected = v == 1
				}
				st.Rank, _ = rec.Metrics["needle_rank"].(int)
				st.ExactRank, _ = rec.Metrics["needle_exact_rank"].(int)
				st.Recall, _ = rec.Metrics["recall"].(float64)
				if preset == normrope.PresetV4 {
					row.FP8 = st
				} else {
					row.BF16 = st
				}
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// noiseJaccard draws two score rows of S N(0,1) values from separate
// streams, takes the K largest of each, and returns |A ∩ B| / |A ∪ B|:
// what comparing two implementations on their own random scores measures
// (about K / (2S − K): nothing about either implementation).
func noiseJaccard(key uint64, S, K int) float64 {
	top := func(stream uint32) map[int]bool {
		st := rng.NewStream(key, 100+stream, 0)
		v := make([]float64, S)
		for i := range v {
			v[i] = st.Normal()
		}
		idx := make([]int, S)
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(i, j int) bool { return v[idx[i]] > v[idx[j]] })
		m := map[int]bool{}
		for _, i := range idx[:min(K, S)] {
			m[i] = true
		}
		return m
	}
	a, b := top(0), top(1)
	inter := 0
	for i := range a {
		if b[i] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// WriteStudyTable prints the rows, one table per margin.
func WriteStudyTable(w io.Writer, rows []StudyRow, impl string, seed uint64) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "needle study: impl %s, seed %d, K=%d, H=%d; FP8 = preset v4, BF16 = v4-bf16, identical inputs per S\n", impl, seed, rows[0].K, rows[0].Heads)
	fmt.Fprintf(w, "sel: needle among the K chosen; rank: in the implementation's logits (exact rank in brackets); recall: of the exact top-K\n")
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "NO"
	}
	valid := func(s StudyStore) string {
		if s.Verdict == string(difftest.VerdictPass) {
			return "ok"
		}
		return "FAIL " + s.Class
	}
	var margin float64 = math.NaN()
	var tw *tabwriter.Writer
	for _, r := range rows {
		if r.Margin != margin {
			if tw != nil {
				tw.Flush()
			}
			margin = r.Margin
			fmt.Fprintf(w, "\nmargin %gσ above the K-th exact logit\n", margin)
			tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "S\tneedle\tplanted σ\tFP8 sel\trank\trecall\tvalid\tBF16 sel\trank\trecall\tvalid\tJaccard (noise)\t")
		}
		fmt.Fprintf(tw, "%d\t%d\t%.2f\t%s\t%d (%d)\t%.4f\t%s\t%s\t%d (%d)\t%.4f\t%s\t%.3f\t\n", r.S, r.Needle, r.Planted,
			yes(r.FP8.Selected), r.FP8.Rank, r.FP8.ExactRank, r.FP8.Recall, valid(r.FP8),
			yes(r.BF16.Selected), r.BF16.Rank, r.BF16.ExactRank, r.BF16.Recall, valid(r.BF16), r.Jaccard)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nJaccard (noise): the overlap of two top-K selections from separately drawn random scores, what the seed story")
	fmt.Fprintln(w, "measured; about K/(2S−K) whatever the kernels do. The columns to its left compare the stores on the same inputs.")
	for _, r := range rows {
		for _, s := range []StudyStore{r.FP8, r.BF16} {
			if s.Verdict != string(difftest.VerdictPass) {
				fmt.Fprintf(w, "S=%d margin %g %s: %s\n", r.S, r.Margin, s.Preset, difftest.SafeLine(s.Message))
			}
		}
	}
	return nil
}

// WriteStudySVG draws recall of the exact top-K against S (log scale),
// one line per store and margin: FP8 solid, BF16 dashed.
func WriteStudySVG(w io.Writer, rows []StudyRow) error {
	const W, H, L, R, T, B = 720, 420, 70, 200, 40, 50
	if len(rows) == 0 {
		return errors.New("no rows")
	}
	minS, maxS, minR := math.Inf(1), math.Inf(-1), 1.0
	for _, r := range rows {
		minS, maxS = math.Min(minS, float64(r.S)), math.Max(maxS, float64(r.S))
		minR = math.Min(minR, math.Min(r.FP8.Recall, r.BF16.Recall))
	}
	lo := math.Floor(minR*100-1) / 100
	if lo >= 1 {
		lo = 0.99
	}
	if maxS == minS {
		maxS = minS * 10
	}
	x := func(S float64) float64 {
		return L + (math.Log10(S)-math.Log10(minS))/(math.Log10(maxS)-math.Log10(minS))*(W-L-R)
	}
	y := func(r float64) float64 { return T + (1-r)/(1-lo)*(H-T-B) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14">Recall of the exact top-%d against S (needle study; FP8 solid, BF16 dashed)</text>`+"\n", L, rows[0].K)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", L, H-B, W-R, H-B)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", L, T, L, H-B)
	for i := 0; i <= 4; i++ {
		r := lo + (1-lo)*float64(i)/4
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%.3f</text>`+"\n", L, y(r), W-R, y(r), L-6, y(r)+4, r)
	}
	seen := map[int]bool{}
	for _, r := range rows {
		if !seen[r.S] {
			seen[r.S] = true
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(float64(r.S)), H-B+18, r.S)
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">S (keys per row, log scale)</text>`+"\n", (W-R+L)/2, H-12)
	fmt.Fprintf(&b, `<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">recall</text>`+"\n", (H-B+T)/2, (H-B+T)/2)
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}
	var margins []float64
	for _, r := range rows {
		if len(margins) == 0 || margins[len(margins)-1] != r.Margin {
			margins = append(margins, r.Margin)
		}
	}
	for mi, m := range margins {
		col := colors[mi%len(colors)]
		for si, store := range []string{"FP8", "BF16"} {
			var pts []string
			for _, r := range rows {
				if r.Margin != m {
					continue
				}
				v := r.FP8.Recall
				if si == 1 {
					v = r.BF16.Recall
				}
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(r.S)), y(v)))
			}
			dash := ""
			if si == 1 {
				dash = ` stroke-dasharray="6 4"`
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), col, dash)
			ly := T + 20*(2*mi+si)
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d">%s, margin %gσ</text>`+"\n",
				W-R+10, ly, W-R+40, ly, col, dash, W-R+46, ly+4, store, m)
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// listFlag parses a comma-separated list.
func listFlag[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := parse(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

// runStudy is `difftest study needle [flags]`. Exit 0 when every stage of
// every case passed its check, 1 when one failed (the table says which),
// 2 for bad usage, 125 when the implementation cannot run here.
func runStudy(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "needle" {
		fmt.Fprintln(stderr, "usage: difftest study needle [--impl IMPL] [--lengths LIST] [--margin LIST] [--seed N] [--json FILE] [--svg FILE]")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return difftest.ExitPass
		}
		return difftest.ExitUsage
	}
	fs := flag.NewFlagSet("difftest study needle", flag.ContinueOnError)
	fs.SetOutput(stderr)
	impl := fs.String("impl", "reference", "implementation: reference, mutant:NAME, exec:CMD, serve:CMD, cuda, emu")
	lengths := fs.String("lengths", joinInts(DefaultStudyLengths), "comma-separated sequence lengths S")
	margins := fs.String("margin", joinFloats(DefaultStudyMargins), "comma-separated needle margins (standard deviations above the K-th exact logit)")
	seed := fs.Uint64("seed", 1, "seed of the inputs")
	k := fs.Int("K", 512, "top-k (512: the seed story's selection)")
	heads := fs.Int("H", 16, "indexer heads")
	page := fs.Int("P", 64, "page size")
	fatbin := fs.String("fatbin", "build/kernels.fatbin", "fatbin for --impl cuda or emu")
	device := fs.Int("device", 0, "CUDA device")
	timeout := fs.Duration("timeout", 5*time.Minute, "time-out per run of one stage")
	jsonOut := fs.String("json", "", "write the rows as JSON to FILE")
	svgOut := fs.String("svg", "", "write the recall chart as SVG to FILE")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return difftest.ExitPass
		}
		return difftest.ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "study needle: unexpected argument %q\n", fs.Arg(0))
		return difftest.ExitUsage
	}
	ls, err := listFlag(*lengths, strconv.Atoi)
	if err == nil {
		for _, S := range ls {
			if S < 1 || S > MaxSeqLen {
				err = fmt.Errorf("length %d outside [1, %d]", S, MaxSeqLen)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "study needle: --lengths: %v\n", err)
		return difftest.ExitUsage
	}
	ms, err := listFlag(*margins, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
	if err != nil {
		fmt.Fprintf(stderr, "study needle: --margin: %v\n", err)
		return difftest.ExitUsage
	}
	if err := checkStudyFlags(studyFlags{K: *k, H: *heads, P: *page, Device: *device, Timeout: *timeout, Seed: *seed,
		Lengths: ls, Margins: ms, JSON: *jsonOut, SVG: *svgOut, Fatbin: *fatbin}); err != nil {
		fmt.Fprintf(stderr, "study needle: %v\n", err)
		return difftest.ExitUsage
	}
	im, err := difftest.NewImpl(*impl, difftest.ImplOptions{Fatbin: *fatbin, Device: *device, Timeout: *timeout, Context: ctx})
	if err != nil {
		var re *difftest.RunError
		if errors.As(err, &re) && re.Class == difftest.Unavailable {
			fmt.Fprintf(stderr, "study needle: %s unavailable: %s\n", *impl, difftest.SafeLine(re.Msg))
			return difftest.ExitUntestable
		}
		fmt.Fprintf(stderr, "study needle: %v\n", err)
		return difftest.ExitUsage
	}
	defer im.Close()
	rows, err := RunStudy(ctx, StudyConfig{Impl: im, Lengths: ls, Margins: ms, Seed: *seed, K: *k, H: *heads, P: *page, Timeout: *timeout})
	if err != nil {
		fmt.Fprintf(stderr, "study needle: %v\n", err)
		if strings.Contains(err.Error(), "param") {
			return difftest.ExitUsage
		}
		return difftest.ExitUntestable
	}
	if err := WriteStudyTable(stdout, rows, im.Name(), *seed); err != nil {
		return difftest.ExitUntestable
	}
	write := func(path string, f func(io.Writer) error) bool {
		if path == "" {
			return true
		}
		out, err := os.Create(path)
		if err == nil {
			err = f(out)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "study needle: %v\n", err)
			return false
		}
		return true
	}
	if !write(*jsonOut, func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(rows)
	}) || !write(*svgOut, func(w io.Writer) error { return WriteStudySVG(w, rows) }) {
		return difftest.ExitUntestable
	}
	for _, r := range rows {
		if r.FP8.Verdict != string(difftest.VerdictPass) || r.BF16.Verdict != string(difftest.VerdictPass) {
			return difftest.ExitFail
		}
	}
	return difftest.ExitPass
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func joinFloats(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}
