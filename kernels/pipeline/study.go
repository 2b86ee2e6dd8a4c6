// `difftest study needle` (docs/pipeline.md): the seed story's isolation
// table done right. FP8, BF16 and FP4 keys side by side on identical
// inputs (FP8 and BF16 through the whole pipeline on the implementation
// under test, each stage checked; FP4's stage 1 on it and checked, its
// logits scored by the study), Gaussian keys and keys with outlier
// channels, the needle planted at margins down to 0.05σ, with the
// needle's fate and the recall of the exact top-K per store and the
// smallest margin at which each store keeps the needle; next to them,
// labelled as noise, the Jaccard overlap of two selections from
// separately drawn scores (what the seed story measured).

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
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
var DefaultStudyMargins = []float64{0.05, 0.1, 0.25, 0.5, 1, 3}

// DefaultStudyKeys are the key distributions of the study (case param
// keys); --keys replaces them.
var DefaultStudyKeys = []string{KeysGaussian, KeysOutlier}

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

// StudyRow is one line of the table: one key distribution, length and
// margin, the three stores.
type StudyRow struct {
	Keys    string     `json:"keys"` // "gaussian" or "outlier"
	S       int        `json:"S"`
	Needle  int        `json:"needle"`
	Margin  float64    `json:"margin"`         // asked
	Planted float64    `json:"margin_planted"` // reached (bf16 tokens)
	FP8     StudyStore `json:"fp8"`
	BF16    StudyStore `json:"bf16"`
	FP4     StudyStore `json:"fp4"`           // stage 1 checked; the logits are the study's (fp4Logits)
	Jaccard float64    `json:"noise_jaccard"` // two selections of K from separately drawn N(0,1) scores: noise
	K       int        `json:"K"`
	Heads   int        `json:"H"`
}

// StudyConfig configures RunStudy. Keys lists the key distributions
// (KeysGaussian, KeysOutlier; empty: gaussian); Outliers and OutlierScale
// are the outlier distribution's channels and magnitude (0: the defaults).
type StudyConfig struct {
	Impl         difftest.Impl
	Lengths      []int
	Margins      []float64
	Keys         []string
	Outliers     int
	OutlierScale float64
	Seed         uint64
	K, H, P      int
	Timeout      time.Duration
}

// StudyParamError is a study setting (K, H, P, a length or a margin) that
// the pipeline contract rejects (NewCase's error): bad usage, not a
// failure of the implementation.
type StudyParamError struct{ Err error }

// Error returns the contract's message.
func (e *StudyParamError) Error() string { return e.Err.Error() }

// Unwrap returns the contract's error.
func (e *StudyParamError) Unwrap() error { return e.Err }

// StudySpec is the pipeline case of one study row (preset v4; the other
// stores are derived from it).
func StudySpec(keys string, S int, m float64, K, H, P, outliers int, scale float64) difftest.CaseSpec {
	name := fmt.Sprintf("study/needle/S=%d/margin=%g", S, m)
	params := map[string]any{"lengths": []any{int64(S)}, "preset": normrope.PresetV4, "K": int64(K), "H": int64(H), "P": int64(P),
		"margin": m, "exact_margin": true}
	if keys != KeysGaussian {
		name = fmt.Sprintf("study/needle/%s/S=%d/margin=%g", keys, S, m)
		params["keys"] = keys
		params["outliers"] = int64(outliers)
		params["outlier_scale"] = scale
	}
	return difftest.CaseSpec{Kernel: KernelName, Family: "needle", Name: name, Params: params}
}

// runStore runs the pipeline case c through the chain on cfg.Impl and
// returns the store's outcome.
func runStore(ctx context.Context, cfg StudyConfig, c *difftest.Case) (StudyStore, error) {
	p, _ := paramsOf(c)
	if err := (Kernel{}).Validate(c); err != nil {
		return StudyStore{}, err
	}
	rec := difftest.NewRecord(c, cfg.Impl.Name())
	cr := difftest.CaseRun{Impl: cfg.Impl, Timeout: cfg.Timeout}
	if _, err := cr.RunCase(ctx, Kernel{}, c, rec); err != nil {
		return StudyStore{}, err
	}
	st := StudyStore{Preset: p.Preset, Verdict: string(rec.Verdict), Class: string(rec.Class), Message: rec.Message, KernelTime: int64(rec.KernelTime)}
	if v, ok := rec.Metrics["needles_selected"].(int); ok {
		st.Selected = v == 1
	}
	st.Rank, _ = rec.Metrics["needle_rank"].(int)
	st.ExactRank, _ = rec.Metrics["needle_exact_rank"].(int)
	st.Recall, _ = rec.Metrics["recall"].(float64)
	return st, nil
}

// studyStores runs the three stores on the pipeline case c (preset v4):
// FP8 and BF16 through the chain, FP4 by runFP4.
func studyStores(ctx context.Context, cfg StudyConfig, c *difftest.Case) (fp8, bf16, fp4 StudyStore, err error) {
	if fp8, err = runStore(ctx, cfg, c); err != nil {
		return
	}
	var cb *difftest.Case
	if cb, err = withPreset(c, normrope.PresetV4BF16); err != nil {
		return
	}
	if bf16, err = runStore(ctx, cfg, cb); err != nil {
		return
	}
	fp4, err = runFP4(ctx, cfg, c)
	return
}

// RunStudy runs the needle study: for each key distribution, margin and
// length S, one pipeline case (one key, so identical tokens, needle,
// queries, weights and page tables) for the three stores: FP8 (v4) and
// BF16 (v4-bf16) through the chain on cfg.Impl, FP4 (v4-fp4) by runFP4.
// The needle is planted at exactly the margin asked (exact_margin) where
// the full turn reaches it. A setting the contract rejects is a
// *StudyParamError.
func RunStudy(ctx context.Context, cfg StudyConfig) ([]StudyRow, error) {
	var rows []StudyRow
	keys := cfg.Keys
	if len(keys) == 0 {
		keys = []string{KeysGaussian}
	}
	nOut, mag := cfg.Outliers, cfg.OutlierScale
	if nOut == 0 {
		nOut = DefaultOutliers
	}
	if mag == 0 {
		mag = DefaultOutlierScale
	}
	for _, kd := range keys {
		for _, m := range cfg.Margins {
			for _, S := range cfg.Lengths {
				spec := StudySpec(kd, S, m, cfg.K, cfg.H, cfg.P, nOut, mag)
				key := rng.CaseKey(cfg.Seed, KernelName+"/"+spec.Name)
				row := StudyRow{Keys: kd, S: S, Margin: m, K: cfg.K, Heads: cfg.H, Jaccard: noiseJaccard(key, S, cfg.K)}
				c, err := NewCase(spec, cfg.Seed, key)
				if err != nil {
					return rows, &StudyParamError{Err: err}
				}
				p := c.Params.(Params)
				row.Needle, row.Planted = p.Needles[0], p.Margins[0]
				if row.FP8, row.BF16, row.FP4, err = studyStores(ctx, cfg, c); err != nil {
					return rows, err
				}
				rows = append(rows, row)
			}
		}
	}
	return rows, nil
}

// SurvivalMargin returns, for the rows of one key distribution and
// length, the smallest margin m of the sweep such that the store's needle
// is selected at m and at every larger margin of the sweep, and ok = false
// when it is lost at the largest. store picks the column.
func SurvivalMargin(rows []StudyRow, keys string, S int, store func(StudyRow) StudyStore) (m float64, ok bool) {
	var rs []StudyRow
	for _, r := range rows {
		if r.Keys == keys && r.S == S {
			rs = append(rs, r)
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Margin > rs[j].Margin })
	for _, r := range rs {
		if !store(r).Selected {
			break
		}
		m, ok = r.Margin, true
	}
	return m, ok
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

// WriteStudyTable prints the rows, one table per key distribution and
// margin, then per key distribution the smallest margin at which each
// store keeps the needle (SurvivalMargin). outliers and scale describe
// the outlier distribution in the heading.
func WriteStudyTable(w io.Writer, rows []StudyRow, impl string, seed uint64, outliers int, scale float64) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "needle study: impl %s, seed %d, K=%d, H=%d; FP8 = preset v4, BF16 = v4-bf16, FP4 = v4-fp4, identical inputs per keys, S and margin\n", impl, seed, rows[0].K, rows[0].Heads)
	fmt.Fprintf(w, "sel: needle among the K chosen; rank: in the store's logits (exact rank in brackets); recall: of the exact top-K\n")
	fmt.Fprintf(w, "FP4: stage 1 on the implementation and checked; its logits are the study's, in f64 over the decoded cache with FP4 queries\n")
	fmt.Fprintf(w, "keys gaussian: N(0,1) tokens; keys outlier: the same with %d channels at ±%g·(1 + 0.05·N(0,1)), a sign per channel\n", outliers, scale)
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
	type group struct {
		keys   string
		margin float64
	}
	var cur *group
	var tw *tabwriter.Writer
	for _, r := range rows {
		if cur == nil || r.Keys != cur.keys || r.Margin != cur.margin {
			if tw != nil {
				tw.Flush()
			}
			cur = &group{r.Keys, r.Margin}
			fmt.Fprintf(w, "\nkeys %s, margin %gσ above the K-th exact logit\n", r.Keys, r.Margin)
			tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "S\tneedle\tplanted σ\tFP8 sel\trank\trecall\tvalid\tBF16 sel\trank\trecall\tvalid\tFP4 sel\trank\trecall\tvalid\tJaccard (noise)\t")
		}
		fmt.Fprintf(tw, "%d\t%d\t%.2f\t", r.S, r.Needle, r.Planted)
		for _, st := range []StudyStore{r.FP8, r.BF16, r.FP4} {
			fmt.Fprintf(tw, "%s\t%d (%d)\t%.4f\t%s\t", yes(st.Selected), st.Rank, st.ExactRank, st.Recall, valid(st))
		}
		fmt.Fprintf(tw, "%.3f\t\n", r.Jaccard)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nJaccard (noise): the overlap of two top-K selections from separately drawn random scores, what the seed story")
	fmt.Fprintln(w, "measured; about K/(2S−K) whatever the kernels do. The columns to its left compare the stores on the same inputs.")
	writeSurvival(w, rows)
	for _, r := range rows {
		for _, s := range []StudyStore{r.FP8, r.BF16, r.FP4} {
			if s.Verdict != string(difftest.VerdictPass) {
				fmt.Fprintf(w, "keys %s S=%d margin %g %s: %s\n", r.Keys, r.S, r.Margin, s.Preset, difftest.SafeLine(s.Message))
			}
		}
	}
	return nil
}

// writeSurvival prints, per key distribution, the smallest margin of the
// sweep from which on each store keeps the needle ("lost" when it loses
// it even at the largest), with the margins swept.
func writeSurvival(w io.Writer, rows []StudyRow) {
	var keys []string
	var lengths []int
	var margins []float64
	for _, r := range rows {
		if !slices.Contains(keys, r.Keys) {
			keys = append(keys, r.Keys)
		}
		if !slices.Contains(lengths, r.S) {
			lengths = append(lengths, r.S)
		}
		if !slices.Contains(margins, r.Margin) {
			margins = append(margins, r.Margin)
		}
	}
	sort.Float64s(margins)
	fmt.Fprintf(w, "\nsmallest margin (σ) at which the needle survives: selected there and at every larger margin of %s\n", JoinFloats(margins))
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "S\t")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s FP8\tBF16\tFP4\t", k)
	}
	fmt.Fprintln(tw)
	for _, S := range lengths {
		fmt.Fprintf(tw, "%d\t", S)
		for _, k := range keys {
			for _, f := range []func(StudyRow) StudyStore{
				func(r StudyRow) StudyStore { return r.FP8 }, func(r StudyRow) StudyStore { return r.BF16 }, func(r StudyRow) StudyStore { return r.FP4 }} {
				if m, ok := SurvivalMargin(rows, k, S, f); ok {
					fmt.Fprintf(tw, "%g\t", m)
				} else {
					fmt.Fprint(tw, "lost\t")
				}
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// WriteStudySVG draws recall of the exact top-K against S (log scale)
// for the first key distribution of rows, one line per store and margin:
// FP8 solid, BF16 dashed, FP4 dotted.
func WriteStudySVG(w io.Writer, rows []StudyRow) error {
	const W, H, L, R, T, B = 720, 420, 70, 200, 40, 50
	if len(rows) == 0 {
		return errors.New("no rows")
	}
	rows = slices.DeleteFunc(slices.Clone(rows), func(r StudyRow) bool { return r.Keys != rows[0].Keys })
	minS, maxS, minR := math.Inf(1), math.Inf(-1), 1.0
	for _, r := range rows {
		minS, maxS = math.Min(minS, float64(r.S)), math.Max(maxS, float64(r.S))
		minR = math.Min(minR, math.Min(r.FP8.Recall, math.Min(r.BF16.Recall, r.FP4.Recall)))
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
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14">Recall of the exact top-%d against S (keys %s; FP8 solid, BF16 dashed, FP4 dotted)</text>`+"\n", L, rows[0].K, rows[0].Keys)
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
		for si, store := range []string{"FP8", "BF16", "FP4"} {
			var pts []string
			for _, r := range rows {
				if r.Margin != m {
					continue
				}
				v := []float64{r.FP8.Recall, r.BF16.Recall, r.FP4.Recall}[si]
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(r.S)), y(v)))
			}
			dash := []string{"", ` stroke-dasharray="6 4"`, ` stroke-dasharray="2 3"`}[si]
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), col, dash)
			ly := T + 18*(3*mi+si)
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d">%s, margin %gσ</text>`+"\n",
				W-R+10, ly, W-R+40, ly, col, dash, W-R+46, ly+4, store, m)
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// JoinFloats writes margins as the study's flags and table show them:
// shortest round-trip form, comma-separated.
func JoinFloats(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}
