package pipeline

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/kernels/normrope"
)

// handCase builds a pipeline case (preset v4, K = 1, one head of weight
// 1, P = 2, one row of two tokens) from two tokens and the query u in the
// unrotated key space (q_exact = H·u, so the exact logit of a token is
// u·r, r its RMSNorm'd and RoPE'd key; the tokens use dims [0, 64), which
// RoPE leaves alone). Token 0 is the needle.
func handCase(t *testing.T, tok [2]map[int]float64, u map[int]float64) *difftest.Case {
	t.Helper()
	p := Params{Preset: normrope.PresetV4, K: 1, Heads: 1, PageSize: 2, Batch: 1, Stride: 2, MaxPages: 1, NumPages: 1,
		Needles: []int{0}, Margins: []float64{0}, Family: "needle"}
	x := difftest.MustTensor(normrope.NameX, difftest.BF16, 2, normrope.Dim)
	for s, m := range tok {
		for d, v := range m {
			x.SetU16(s*normrope.Dim+d, numeric.BF16FromF64(v))
		}
	}
	w := difftest.MustTensor(normrope.NameWeight, difftest.F32, normrope.Dim)
	for i := 0; i < normrope.Dim; i++ {
		w.SetF32(i, 1)
	}
	freqs, err := normrope.FreqsTable(normrope.ModelV4, 2)
	if err != nil {
		t.Fatal(err)
	}
	ft := difftest.MustTensor(normrope.NameFreqs, difftest.F32, 2, normrope.RopeDim)
	for i, v := range freqs {
		ft.SetF32(i, v)
	}
	pos := difftest.MustTensor(normrope.NamePositions, difftest.I64, 2)
	loc := difftest.MustTensor(normrope.NameOutLoc, difftest.I64, 2)
	for s := 0; s < 2; s++ {
		pos.SetI64(s, int64(s))
		loc.SetI64(s, int64(s))
	}
	lens := difftest.MustTensor("seq_lens", difftest.I32, 1)
	lens.SetI32(0, 2)
	table := difftest.MustTensor("page_table", difftest.I32, 1, 1)
	var hu [normrope.Dim]float64
	for d, v := range u {
		hu[d] = v
	}
	hadamard(&hu)
	qe := difftest.MustTensor(NameQExact, difftest.F32, 1, 1, normrope.Dim)
	for d, v := range hu {
		qe.SetF32(d, float32(v))
	}
	we := difftest.MustTensor(NameWeightsExact, difftest.F32, 1, 1)
	we.SetF32(0, 1)
	c := &difftest.Case{ID: "hand", Kernel: KernelName, Family: "needle", Params: p, Seed: 1, Key: 1,
		Inputs: []*difftest.Tensor{x, w, difftest.MustTensor(normrope.NameBias, difftest.F32, normrope.Dim), ft, pos, loc, nil, nil, lens, table, qe, we}}
	c.Inputs[6], c.Inputs[7] = quantise(&p, qe, we)
	c.Outputs = outputsOf(p)
	if err := (Kernel{}).Validate(c); err != nil {
		t.Fatal(err)
	}
	return c
}

// fp4Cache returns c's stage 1 as the v4-fp4 store (fp4Stage1) and the
// reference's cache of it (normrope.Compute); an error is fatal.
func fp4Cache(t *testing.T, c *difftest.Case) (*difftest.Case, *difftest.Tensor) {
	t.Helper()
	s1, err := fp4Stage1(c)
	if err != nil {
		t.Fatal(err)
	}
	o := s1.Outputs[0]
	cache := difftest.MustTensor(o.Name, o.DType, o.Shape...)
	if err := normrope.Compute(s1, cache); err != nil {
		t.Fatal(err)
	}
	return s1, cache
}

// By construction from the outlier channel: the needle (40 in dim 0, 1 in
// dims 1–31) scores u·r = 31/√((1600+31)/128) = 8.68 against the query u
// (1 in dims 1–32); its rival (40 in dim 0, 30 in dim 32) 30/√(2500/128) =
// 6.79. The FP4 store has no Hadamard: the needle's block 0 holds the
// outlier 11.2 and 31 values 0.28, so its ue8m0 scale is 2 and the 0.28s
// round to 0 (0.14 < 0.25, the smallest e2m1 step): its FP4 logit is 0,
// while the rival's 6.79 alone in block 1 stores as 3·2 = 6. With K = 1
// FP4 selects the rival; FP8 (Hadamard, per-token e4m3) and BF16 keep the
// needle.
func TestStudyFP4LosesNeedleFP8Keeps(t *testing.T) {
	u := map[int]float64{}
	needle := map[int]float64{0: 40}
	for d := 1; d <= 32; d++ {
		u[d] = 1
		if d < 32 {
			needle[d] = 1
		}
	}
	c := handCase(t, [2]map[int]float64{needle, {0: 40, 32: 30}}, u)
	cfg := StudyConfig{Impl: difftest.ReferenceImpl{}, Timeout: time.Minute}
	fp8, bf16, fp4, err := studyStores(context.Background(), cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []StudyStore{fp8, bf16, fp4} {
		if st.Verdict != "pass" {
			t.Fatalf("%s: %s %s", st.Preset, st.Verdict, st.Message)
		}
	}
	if !fp8.Selected || fp8.Rank != 1 || fp8.ExactRank != 1 || fp8.Recall != 1 {
		t.Errorf("FP8 %+v: want the needle kept, rank 1, recall 1", fp8)
	}
	if !bf16.Selected || bf16.Rank != 1 || bf16.Recall != 1 {
		t.Errorf("BF16 %+v: want the needle kept", bf16)
	}
	if fp4.Selected || fp4.Rank != 2 || fp4.ExactRank != 1 || fp4.Recall != 0 {
		t.Errorf("FP4 %+v: want the needle lost, rank 2 (exact 1), recall 0", fp4)
	}
	// The FP4 logits themselves: the needle's 0 and the rival's 6.
	_, cache := fp4Cache(t, c)
	lg := fp4Logits(c, cache.Data)
	if lg[0][0] != 0 || lg[0][1] != 6 {
		t.Errorf("FP4 logits %v, want [0 6]", lg[0])
	}
	k := fp4Key(cache.Data, 2, 0)
	if k[0] != 12 || k[1] != 0 || k[31] != 0 {
		t.Errorf("needle's FP4 key block 0 %v…, want 12 then zeros", k[:4])
	}
	// The same keys without the outlier: FP4 keeps the needle.
	delete(needle, 0)
	c = handCase(t, [2]map[int]float64{needle, {32: 30}}, u)
	if _, _, fp4, err = studyStores(context.Background(), cfg, c); err != nil || !fp4.Selected {
		t.Errorf("without the outlier FP4 %+v, %v: want the needle kept", fp4, err)
	}
}

// The FP4 logits score the unrotated v4-fp4 key with H·q: the v4-fp4
// exact keys are the v4 ones rotated back (H·z_v4), so the exact logits do
// not depend on the store; and the decoded FP4 cache lies within one
// e2m1 step (at its block's scale) of the exact key.
func TestFP4KeysRotatedBack(t *testing.T) {
	spec := StudySpec(KeysOutlier, 300, 0.5, 64, 4, 16, 4, 30)
	c, err := NewCase(spec, 1, rng.CaseKey(1, spec.Name))
	if err != nil {
		t.Fatal(err)
	}
	zv4, err := exactKeysV4(c)
	if err != nil {
		t.Fatal(err)
	}
	s1, cache := fp4Cache(t, c)
	zfp4, err := normrope.ExactKeys(s1)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Params.(Params)
	table := c.Input("page_table")
	for s := range zv4 {
		h := zv4[s]
		hadamard(&h)
		slot := int(table.I32(s/p.PageSize))*p.PageSize + s%p.PageSize
		k := fp4Key(cache.Data, p.PageSize, slot)
		for d := range h {
			if math.Abs(h[d]-zfp4[s][d]) > 1e-12 {
				t.Fatalf("token %d dim %d: H·z_v4 %g, z_fp4 %g", s, d, h[d], zfp4[s][d])
			}
			amax := 0.0
			for _, v := range zfp4[s][d/32*32 : d/32*32+32] {
				amax = math.Max(amax, math.Abs(v))
			}
			if step, _ := numeric.UE8M0Ceil(amax / 6); math.Abs(k[d]-zfp4[s][d]) > step {
				t.Fatalf("token %d dim %d: FP4 %g, exact %g, more than one step %g apart", s, d, k[d], zfp4[s][d], step)
			}
		}
	}
}

// Outlier keys: every token carries the same outlier channels (in [0,
// 64)) at about outlier_scale with a fixed sign; the other channels are
// the Gaussian case's; the needle keeps its outliers and is planted at the
// margin asked.
func TestOutlierKeys(t *testing.T) {
	gs, os := StudySpec(KeysGaussian, 2000, 0.05, 512, 16, 64, 3, 40), StudySpec(KeysOutlier, 2000, 0.05, 512, 16, 64, 3, 40)
	g, err := NewCase(gs, 1, 99)
	if err != nil {
		t.Fatal(err)
	}
	o, err := NewCase(os, 1, 99)
	if err != nil {
		t.Fatal(err)
	}
	ch, sg := (&gen{nOut: 3}).outlierChannels(99)
	if len(ch) != 3 || ch[2] >= 64 {
		t.Fatalf("channels %v", ch)
	}
	out := map[int]float64{}
	for i, c := range ch {
		out[c] = sg[i]
	}
	xg, xo := g.Input(normrope.NameX), o.Input(normrope.NameX)
	needle := o.Params.(Params).Needles[0]
	for s := 0; s < 2000; s++ {
		for d := 0; d < normrope.Dim; d++ {
			vg, vo := numeric.BF16ToF64(xg.U16(s*normrope.Dim+d)), numeric.BF16ToF64(xo.U16(s*normrope.Dim+d))
			if sign, ok := out[d]; ok {
				if vo*sign < 40*0.75 || vo*sign > 40*1.25 {
					t.Fatalf("token %d outlier dim %d = %g, want %g·40·(1 ± 0.05·N)", s, d, vo, sign)
				}
			} else if s != needle && vg != vo {
				t.Fatalf("token %d dim %d: %g in the outlier case, %g in the Gaussian one", s, d, vo, vg)
			}
		}
	}
	if m := o.Params.(Params).Margins[0]; math.Abs(m-0.05) > 0.01 {
		t.Errorf("outlier needle planted at %gσ, want 0.05", m)
	}
	if m := g.Params.(Params).Margins[0]; math.Abs(m-0.05) > 0.01 {
		t.Errorf("Gaussian needle planted at %gσ, want 0.05 (exact_margin)", m)
	}
}

// withPreset gives the case NewCase draws with that preset (same input
// digest).
func TestWithPresetMatchesNewCase(t *testing.T) {
	params := func(preset string) map[string]any {
		return map[string]any{"lengths": []any{int64(900)}, "preset": preset, "H": int64(4), "keys": KeysOutlier}
	}
	a := draw(t, "wp", params(normrope.PresetV4), 5)
	b := draw(t, "wp", params(normrope.PresetV4BF16), 5)
	d, err := withPreset(a, normrope.PresetV4BF16)
	if err != nil {
		t.Fatal(err)
	}
	if difftest.InputDigest(d) != difftest.InputDigest(b) {
		t.Error("withPreset(v4 case, v4-bf16) differs from the v4-bf16 case drawn with the same key")
	}
}

// SurvivalMargin: the smallest margin from which on the needle is kept;
// a loss above it resets it; lost at the largest gives ok = false.
func TestSurvivalMargin(t *testing.T) {
	row := func(m float64, fp8, fp4 bool) StudyRow {
		return StudyRow{Keys: "k", S: 10, Margin: m, FP8: StudyStore{Selected: fp8}, FP4: StudyStore{Selected: fp4}}
	}
	rows := []StudyRow{row(0.05, true, true), row(0.1, false, true), row(0.5, true, true), row(1, true, false), {Keys: "other", S: 10, Margin: 3}}
	if m, ok := SurvivalMargin(rows, "k", 10, func(r StudyRow) StudyStore { return r.FP8 }); !ok || m != 0.5 {
		t.Errorf("FP8: %g %v, want 0.5", m, ok)
	}
	if _, ok := SurvivalMargin(rows, "k", 10, func(r StudyRow) StudyStore { return r.FP4 }); ok {
		t.Error("FP4 lost at the largest margin: want ok = false")
	}
	var b bytes.Buffer
	writeSurvival(&b, rows[:4])
	if !strings.Contains(b.String(), "  10    0.5  lost  lost") {
		t.Errorf("survival table:\n%s", b.String())
	}
}
