package pipeline

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
	"github.com/kerneldiff/kerneldiff/kernels/logits"
	"github.com/kerneldiff/kerneldiff/kernels/normrope"
	"github.com/kerneldiff/kerneldiff/kernels/topk"
)

func draw(t *testing.T, name string, params map[string]any, key uint64) *difftest.Case {
	t.Helper()
	spec := difftest.CaseSpec{Kernel: KernelName, Family: "needle", Name: name, Params: params}
	c, err := NewCase(spec, 1, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := (Kernel{}).Validate(c); err != nil {
		t.Fatal(err)
	}
	return c
}

// runOn runs c through the case pipeline (RunCase: the chain) on impl.
func runOn(t *testing.T, c *difftest.Case, impl difftest.Impl) *difftest.Record {
	t.Helper()
	rec := difftest.NewRecord(c, impl.Name())
	cr := difftest.CaseRun{Impl: impl, Timeout: time.Minute}
	if _, err := cr.RunCase(context.Background(), Kernel{}, c, rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// On the reference every stage passes; the record carries each stage's
// metrics and the end-to-end ones, and the needle planted with 3σ of
// margin is selected in both stores.
func TestChainOnReference(t *testing.T) {
	for _, preset := range []string{normrope.PresetV4, normrope.PresetV4BF16, normrope.PresetV4FP4} {
		c := draw(t, "ref/"+preset, map[string]any{"lengths": []any{int64(1500), int64(300)}, "preset": preset, "H": int64(4)}, 11)
		rec := runOn(t, c, difftest.ReferenceImpl{})
		if rec.Failed() {
			t.Fatalf("%s: %s: %s", preset, rec.Class, rec.Message)
		}
		m := rec.Metrics
		for _, k := range []string{"stage1_tokens_checked", "stage2_checked", "stage3_recall", "recall", "recall_mean", "needle_rank"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%s: no metric %s in %v", preset, k, m)
			}
		}
		if r, ok := m["needle_exact_rank"].(int); m["needles"] != 2 || m["needles_selected"] != 2 || !ok || r < 1 || r > 512 {
			t.Errorf("%s: needles %v selected %v exact rank %v", preset, m["needles"], m["needles_selected"], m["needle_exact_rank"])
		}
		// Row 1 has 300 ≤ K positions: all chosen, recall 1 there.
		if r := m["recall"].(float64); r <= 0.9 || r > 1 {
			t.Errorf("%s: recall %g", preset, r)
		}
		if got := (Kernel{}).KeyMetric(rec); !strings.HasPrefix(got, "recall=") || !strings.HasSuffix(got, "needles=2/2") {
			t.Errorf("%s: key metric %q", preset, got)
		}
	}
}

// A mutant implementation fails the stage its fault lives in, and the
// message names it, on FP8 keys and on FP4 keys (preset v4-fp4: the FP4
// store mutants in stage 1, the FP4 logits mutants in stage 2, both on the
// cache the FP4 store wrote, and a fault of each stage).
func TestChainNamesFailingStage(t *testing.T) {
	cases := map[string]*difftest.Case{}
	for _, tc := range []struct {
		preset string
		mutant string
		stage  string
	}{
		{normrope.PresetV4, "fp8-double-round", "stage 1 norm_rope_store: "},
		{normrope.PresetV4, "logits-no-relu", "stage 2 indexer_logits: mismatch: "},
		{normrope.PresetV4, "topk-page-row0", "stage 3 topk_transform: mismatch: "},
		{normrope.PresetV4FP4, "fp4-scale-wrong-block", "stage 1 norm_rope_store: "},
		{normrope.PresetV4FP4, "fp4-amax-448", "stage 1 norm_rope_store: "},
		{normrope.PresetV4FP4, "fp4-nibble-swap", "stage 1 norm_rope_store: "},
		{normrope.PresetV4FP4, "fp4-cache-interleaved", "stage 1 norm_rope_store: "},
		{normrope.PresetV4FP4, "rope-style-swap", "stage 1 norm_rope_store: "},
		{normrope.PresetV4FP4, "logits-fp4-nibble-swap", "stage 2 indexer_logits: mismatch: "},
		{normrope.PresetV4FP4, "logits-fp4-one-scale", "stage 2 indexer_logits: mismatch: "},
		{normrope.PresetV4FP4, "logits-no-relu", "stage 2 indexer_logits: mismatch: "},
		{normrope.PresetV4FP4, "logits-bf16-dot", "stage 2 indexer_logits: mismatch: "},
		{normrope.PresetV4FP4, "topk-page-row0", "stage 3 topk_transform: mismatch: "},
	} {
		c := cases[tc.preset]
		if c == nil {
			c = draw(t, "mutants", map[string]any{"lengths": []any{int64(700), int64(70)}, "H": int64(2), "preset": tc.preset}, 12)
			cases[tc.preset] = c
		}
		k, m, ok := difftest.FindMutant(tc.mutant)
		if !ok {
			t.Fatalf("no mutant %s", tc.mutant)
		}
		rec := runOn(t, c, difftest.MutantImpl{Kernel: k.Name(), Mutant: m})
		if !rec.Failed() || !strings.HasPrefix(rec.Message, tc.stage) {
			t.Errorf("%s (%s): %s %q, want a failure starting %q", tc.mutant, tc.preset, rec.Verdict, rec.Message, tc.stage)
		}
	}
}

// skipping is an implementation that does not offer one kernel (as a
// serve program may not): the chain runs that stage on the reference.
type skipping struct{ kernel string }

func (skipping) Name() string { return "partial" }
func (s skipping) Run(ctx context.Context, k difftest.Kernel, c *difftest.Case, outs []*difftest.Buffer) (difftest.RunInfo, error) {
	if c.Kernel == s.kernel {
		return difftest.RunInfo{}, &difftest.RunError{Class: difftest.Unavailable, Msg: "not implemented here", Skip: true}
	}
	return difftest.ReferenceImpl{}.Run(ctx, k, c, outs)
}
func (skipping) Close() error { return nil }

func TestStageNotOfferedRunsOnReference(t *testing.T) {
	c := draw(t, "partial", map[string]any{"lengths": []any{int64(600)}, "H": int64(2)}, 13)
	rec := runOn(t, c, skipping{logits.KernelName})
	if rec.Failed() || rec.Metrics["stages_on_reference"] != logits.KernelName {
		t.Fatalf("%s %s; stages on the reference: %v", rec.Verdict, rec.Message, rec.Metrics["stages_on_reference"])
	}
	if len(rec.Warnings) != 1 || !strings.Contains(rec.Warnings[0], "stage 2 indexer_logits: indexer_logits ran on the reference: the implementation does not offer it (not implemented here)") {
		t.Errorf("warnings %q", rec.Warnings)
	}
	// On the reference itself no stage is a fallback.
	if rec := runOn(t, c, difftest.ReferenceImpl{}); rec.Metrics["stages_on_reference"] != nil {
		t.Errorf("--impl reference: stages on the reference %v", rec.Metrics["stages_on_reference"])
	}
	// An implementation that offers none of the stages tests nothing.
	rec = runOn(t, c, none{})
	if rec.Verdict != difftest.VerdictSkip || rec.Class != difftest.Unavailable || !strings.Contains(rec.Message, "offers none of the chain's kernels") {
		t.Errorf("no stage offered: %s %s %q", rec.Verdict, rec.Class, rec.Message)
	}
}

// none offers no kernel.
type none struct{}

func (none) Name() string { return "none" }
func (none) Run(context.Context, difftest.Kernel, *difftest.Case, []*difftest.Buffer) (difftest.RunInfo, error) {
	return difftest.RunInfo{}, &difftest.RunError{Class: difftest.Unavailable, Msg: "nothing here", Skip: true}
}
func (none) Close() error { return nil }

// An FP8, a BF16 and an FP4 case drawn with one key differ only in their
// stores: the tokens (the needle's included), norm weights, RoPE table,
// slots, lengths, page tables and exact queries and weights are the same
// bytes (the needle study compares the stores on identical inputs), and
// so are the needles and the margins they were planted with.
func TestStoresShareInputs(t *testing.T) {
	params := func(preset string) map[string]any {
		return map[string]any{"lengths": []any{int64(900)}, "preset": preset, "H": int64(3)}
	}
	a := draw(t, "a", params(normrope.PresetV4), 77)
	for _, preset := range []string{normrope.PresetV4BF16, normrope.PresetV4FP4} {
		b := draw(t, "b", params(preset), 77)
		for i, ta := range a.Inputs {
			tb := b.Inputs[i]
			same := bytes.Equal(ta.Data, tb.Data)
			switch ta.Name {
			case "q", "weights":
				if same {
					t.Errorf("%s: the FP8 and %s cases have the same bytes; their quantisations differ", ta.Name, preset)
				}
			default:
				if !same {
					t.Errorf("%s differs between the FP8 and %s cases", ta.Name, preset)
				}
			}
		}
		pa, pb := a.Params.(Params), b.Params.(Params)
		if !slices.Equal(pa.Needles, pb.Needles) || !slices.Equal(pa.Margins, pb.Margins) {
			t.Errorf("%s: needles %v margins %v, FP8's %v %v", preset, pb.Needles, pb.Margins, pa.Needles, pa.Margins)
		}
	}
}

// The FP4 pipeline's stage-2 query scores the FP4 keys as q_exact scores
// the v4 keys: each head of q is the FP4 packing of H·q (H the
// orthonormal Hadamard transform), its decoded values within one e2m1
// step of its block's scale of H·q, and the weights are weights_exact.
// (The v4-fp4 keys are the v4 keys rotated back, H·z: TestFP4KeysRotatedBack;
// so (H·q)·(H·z) = q·z.)
func TestFP4QueriesScoreTheV4Space(t *testing.T) {
	c := draw(t, "fp4q", map[string]any{"lengths": []any{int64(200)}, "preset": normrope.PresetV4FP4, "H": int64(3)}, 21)
	p := c.Params.(Params)
	q, qe := c.Input(logits.NameQ), c.Input(NameQExact)
	if q.DType != difftest.U8 || len(q.Data) != p.Batch*p.Heads*logits.FP4TokenBytes {
		t.Fatalf("q: %s %v", q.DType, q.Shape)
	}
	if !bytes.Equal(c.Input(logits.NameWeights).Data, c.Input(NameWeightsExact).Data) {
		t.Error("FP4 weights are not weights_exact")
	}
	hq := make([][normrope.Dim]float64, p.Heads)
	for h := range hq {
		for d := range hq[h] {
			hq[h][d] = float64(qe.F32(h*normrope.Dim + d))
		}
		hadamard(&hq[h])
		rec := q.Data[h*logits.FP4TokenBytes:]
		for d, want := range hq[h] {
			c := rec[d/2] >> (4 * (d % 2)) & 0xF
			s := numeric.UE8M0ToF64(rec[logits.FP4CodeBytes+d/normrope.FP4Block])
			if got := numeric.E2M1ToF64(c) * s; math.Abs(got-want) > s {
				t.Errorf("head %d dim %d: FP4 query %g, H·q %g (block scale %g)", h, d, got, want, s)
			}
		}
	}
}

// The needle is planted with the margin asked (within the bisection's
// precision and the bf16 rounding of its token), at S/3, and a negative
// margin puts it below the K-th.
func TestNeedleMargin(t *testing.T) {
	for _, margin := range []float64{3, 0.5, -1} {
		c := draw(t, "margin", map[string]any{"lengths": []any{int64(3000)}, "H": int64(4), "margin": margin}, 14)
		p := c.Params.(Params)
		if p.Needles[0] != 1000 {
			t.Errorf("needle at %d, want S/3 = 1000", p.Needles[0])
		}
		if got := p.Margins[0]; math.Abs(got-margin) > 0.01 {
			t.Errorf("margin %g planted as %g", margin, got)
		}
		s1, _ := stage1(c)
		z, err := normrope.ExactKeys(s1)
		if err != nil {
			t.Fatal(err)
		}
		ex := exactLogits(c, z)[0]
		rank := 1
		for _, v := range ex {
			if v > ex[1000] {
				rank++
			}
		}
		if (rank <= p.K) != (margin > 0) {
			t.Errorf("margin %g: exact rank %d of K = %d", margin, rank, p.K)
		}
	}
}

// Validate names the stage whose contract a case breaks.
func TestValidateNamesStage(t *testing.T) {
	c := draw(t, "v", map[string]any{"lengths": []any{int64(100)}, "H": int64(2)}, 15)
	c.Input(normrope.NamePositions).SetI64(3, 1<<40)
	if err := (Kernel{}).Validate(c); err == nil || !strings.HasPrefix(err.Error(), "stage 1 norm_rope_store: invalid input: positions[3]") {
		t.Errorf("got %v", err)
	}
	c = draw(t, "v", map[string]any{"lengths": []any{int64(100)}, "H": int64(2)}, 15)
	c.Input(topk.TensorPageTable).SetI32(0, -5)
	if err := (Kernel{}).Validate(c); err == nil || !strings.Contains(err.Error(), "page_table") {
		t.Errorf("got %v", err)
	}
}

func TestCheckSpecAgreesWithNewCase(t *testing.T) {
	for _, tt := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"lengths": []any{int64(10)}}, ""},
		{map[string]any{}, `param "lengths": required`},
		{map[string]any{"lengths": []any{int64(0)}}, `param "lengths": element 0 must be in [1, 262144], got 0`},
		{map[string]any{"lengths": []any{int64(10)}, "preset": "v32"}, `param "preset": must be one of v4, v4-bf16, v4-fp4, got "v32"`},
		{map[string]any{"lengths": []any{int64(10)}, "H": int64(65)}, `param "H": must be in [1, 64], got 65`},
		{map[string]any{"lengths": []any{int64(10)}, "margin": 100.0}, `param "margin": must be in [−10, 50]`},
		{map[string]any{"lengths": []any{int64(10)}, "M": int64(1)}, "unknown param(s) M"},
	} {
		spec := difftest.CaseSpec{Kernel: KernelName, Family: "needle", Name: "c", Params: tt.params}
		checkErr := CheckSpec(spec)
		_, drawErr := NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
		if (checkErr == nil) != (drawErr == nil) || (checkErr != nil && checkErr.Error() != drawErr.Error()) {
			t.Errorf("%v: CheckSpec %v, NewCase %v", tt.params, checkErr, drawErr)
		}
		if (tt.want == "") != (checkErr == nil) || (checkErr != nil && !strings.Contains(checkErr.Error(), tt.want)) {
			t.Errorf("%v: got %v, want %q", tt.params, checkErr, tt.want)
		}
	}
}

// TestChainCarriesStageDiagnosis: a pipeline case that fails in a stage
// carries that stage's diagnosis, named by the stage kernel's catalog
// (and described), as `difftest run --diagnose` records it, on FP8 keys
// and on FP4 keys (the FP4 store and logits mutants).
func TestChainCarriesStageDiagnosis(t *testing.T) {
	for _, tc := range []struct{ mutant, preset string }{
		{"topk-page-row0", normrope.PresetV4}, {"logits-no-relu", normrope.PresetV4}, {"rope-half-swap", normrope.PresetV4},
		{"fp4-nibble-swap", normrope.PresetV4FP4}, {"logits-fp4-one-scale", normrope.PresetV4FP4}, {"topk-page-row0", normrope.PresetV4FP4},
	} {
		mutant := tc.mutant
		k, m, ok := difftest.FindMutant(mutant)
		if !ok {
			t.Fatalf("no mutant %s", mutant)
		}
		var recs []*difftest.Record
		_, err := difftest.Run(context.Background(), difftest.Config{
			Items: []difftest.Item{{Seed: 1, SuiteCase: difftest.SuiteCase{Spec: difftest.CaseSpec{Kernel: KernelName, Family: "needle", Name: "diag",
				Params: map[string]any{"lengths": []any{int64(700), int64(70)}, "H": int64(2), "preset": tc.preset}}}}},
			Impl: difftest.MutantImpl{Kernel: k.Name(), Mutant: m}, ImplName: "mutant:" + mutant,
			Diagnose: (&triage.DiagnoseConfig{}).DiagnoseRecord,
			OnRecord: func(r *difftest.Record) error { recs = append(recs, r); return nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || !recs[0].Failed() {
			t.Fatalf("%s: records %v", mutant, recs)
		}
		r := recs[0]
		lines := triage.DiagnosisLines(r)
		if len(r.Diagnosis) == 0 || r.Diagnosis[0] != mutant || len(lines) == 0 || !strings.HasPrefix(lines[0], "behaves like "+mutant+": "+m.Fault) {
			t.Errorf("%s (%s): %s; diagnosis %v, lines %q", mutant, tc.preset, r.Message, r.Diagnosis, lines)
		}
	}
}
