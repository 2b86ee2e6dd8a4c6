// `difftest study needle` (docs/pipeline.md): the seed story's isolation
// table done right. FP8 and BF16 keys side by side on identical inputs,
// through the whole pipeline on the implementation under test, each stage
// checked, with the needle's fate and the recall of the exact top-K per
// store; next to them, labelled as noise, the Jaccard overlap of two
// selections from separately drawn scores (what the seed story measured).

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/kernels/normrope"
)

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

// StudyParamError is a study setting (K, H, P, a length or a margin) that
// the pipeline contract rejects (NewCase's error): bad usage, not a
// failure of the implementation.
type StudyParamError struct{ Err error }

// Error returns the contract's message.
func (e *StudyParamError) Error() string { return e.Err.Error() }

// Unwrap returns the contract's error.
func (e *StudyParamError) Unwrap() error { return e.Err }

// RunStudy runs the needle study: for each length S and margin, one
// pipeline case per store with the same key (so identical tokens,
// queries, weights and page tables), each through the chain on cfg.Impl.
// A setting the contract rejects is a *StudyParamError.
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
					return rows, &StudyParamError{Err: err}
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
