package topk

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// variantByName returns the named variant or fails the test.
func variantByName(t *testing.T, name string) triage.Variant {
	t.Helper()
	for _, v := range Variants() {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no variant %q", name)
	return triage.Variant{}
}

// TestVariantsKnownAnswers runs each behaviour, alone and with the ties
// at the K-th value taken from the highest positions, on a hand-built row
// where it and the reference disagree, and checks the raw picks as sets
// (the order of an L > K row is unspecified) and the page_indices they
// give through the row's page table.
func TestVariantsKnownAnswers(t *testing.T) {
	one, two := fb(1), fb(2)
	tests := []struct {
		name    string
		variant string
		K       int
		row     []uint32
		want    []int32 // raw picks, sorted
		ref     []int32 // the reference's, sorted: the variant must differ
	}{
		// torch.topk: NaN above everything whatever its sign, all NaNs
		// tied (ties by position); key32 puts −NaN at the bottom and
		// orders +NaNs by payload (0x7FC00001 above 0x7FC00000).
		{"nan largest", VariantNaNLargest, 2, []uint32{one, negNaN, two, 0x7FC00001, posNaN}, []int32{1, 3}, []int32{3, 4}},
		{"nan largest, high ties", VariantNaNLargest + "+" + VariantTiesHighest, 2, []uint32{one, 0x7FC00001, negNaN, two}, []int32{1, 2}, []int32{1, 3}},
		// −0 == +0 under float comparison: the lowest zeros are taken
		// whatever their sign; key32 takes every +0 first.
		{"zero tie", VariantZeroTie, 2, []uint32{negZ, 0, negZ, 0, fb(-1)}, []int32{0, 1}, []int32{1, 3}},
		{"zero tie, high ties", VariantZeroTie + "+" + VariantTiesHighest, 2, []uint32{0, negZ, 0, negZ, fb(-1)}, []int32{2, 3}, []int32{0, 2}},
		// A −inf pick is a valid pick; SGLang's fallback writes −1 for it.
		{"neg inf", VariantNegInfMinusOne, 2, []uint32{negInf, one, negInf}, []int32{-1, 1}, []int32{0, 1}},
		{"neg inf, high ties", VariantNegInfMinusOne + "+" + VariantTiesHighest, 3, []uint32{negInf, one, negInf, negInf, fb(-3)}, []int32{-1, 1, 4}, []int32{0, 1, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			L := int32(len(tc.row))
			// P = 2 and a permuted page table, so page_indices is checked too.
			table := []int32{7, 3, 9}
			c := handCase(t, tc.K, 2, true, [][]uint32{tc.row}, []int32{L}, [][]int32{table})
			outs := newOuts(c)
			if err := variantByName(t, tc.variant).Run(c, outs); err != nil {
				t.Fatal(err)
			}
			raw := rowI32(outs[1], 0, tc.K)
			page := rowI32(outs[0], 0, tc.K)
			for j, i := range raw {
				want := int32(-1)
				if i >= 0 {
					want = table[i/2]*2 + i%2
				}
				if page[j] != want {
					t.Errorf("page_indices[%d] = %d for raw %d, want %d", j, page[j], i, want)
				}
			}
			slices.Sort(raw)
			if !slices.Equal(raw, tc.want) {
				t.Errorf("raw picks %v, want %v", raw, tc.want)
			}
			// Where only one behaviour shows, all three together give the
			// same picks.
			if !strings.Contains(tc.variant, VariantTiesHighest) {
				all := newOuts(c)
				if err := variantByName(t, VariantTorchTopK).Run(c, all); err != nil {
					t.Fatal(err)
				}
				if got := rowI32(all[1], 0, tc.K); !(Kernel{}).Match(c, all, outs) {
					t.Errorf("%s picks %v, %s alone %v", VariantTorchTopK, got, tc.variant, rowI32(outs[1], 0, tc.K))
				}
			}
			ref := rowI32(runRef(t, c)[1], 0, tc.K)
			slices.Sort(ref)
			if !slices.Equal(ref, tc.ref) {
				t.Errorf("reference picks %v, the test expects %v", ref, tc.ref)
			}
		})
	}
}

// TestVariantsShortRows: rows with L ≤ K come out as the contract's
// 0 … L−1 then −1 under every variant, −inf scores included (SGLang's
// fallback special-cases them so), and the variants validate like the
// reference.
func TestVariantsShortRows(t *testing.T) {
	c := handCase(t, 4, 1, true, [][]uint32{{negInf, negNaN, negZ}}, []int32{3}, [][]int32{{0, 1, 2}})
	want := []int32{0, 1, 2, -1}
	for _, v := range Variants() {
		outs := newOuts(c)
		if err := v.Run(c, outs); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if got := rowI32(outs[1], 0, 4); !slices.Equal(got, want) {
			t.Errorf("%s: raw %v, want %v", v.Name, got, want)
		}
	}
	bad := handCase(t, 4, 1, true, [][]uint32{{0}}, []int32{-1}, [][]int32{{0}})
	if err := Variants()[0].Run(bad, newOuts(bad)); err == nil {
		t.Error("a variant accepted seq_len −1")
	}
}

// TestVariantCatalog: 15 variants, names unique and distinct from the
// mutants', every Parts name one of the five behaviours, each with a doc.
func TestVariantCatalog(t *testing.T) {
	vs := Variants()
	if len(vs) != 15 {
		t.Fatalf("%d variants, want 15", len(vs))
	}
	names := map[string]bool{}
	for _, m := range Mutants() {
		names[m.Name] = true
	}
	behaviours := []string{VariantNaNLargest, VariantZeroTie, VariantNegInfMinusOne, VariantTiesHighest, VariantNaNNeverSelected}
	for _, v := range vs {
		if names[v.Name] || v.Doc == "" || len(v.Parts) == 0 || v.Run == nil || v.Alias != "" {
			t.Errorf("variant %+v: duplicate name, no doc, no parts or no Run", v.Name)
		}
		names[v.Name] = true
		for _, p := range v.Parts {
			if !slices.Contains(behaviours, p) {
				t.Errorf("variant %s: part %q", v.Name, p)
			}
		}
	}
	if !names[VariantTorchTopK] {
		t.Errorf("no %s", VariantTorchTopK)
	}
}

// TestMatch: short rows compare in order, long rows as multisets with
// their −1s; a different size never matches.
func TestMatch(t *testing.T) {
	c := handCase(t, 2, 1, false, [][]uint32{{one32, one32, one32}, {one32}}, []int32{3, 1}, [][]int32{{0, 1, 2}, {3}})
	mk := func(vals ...int32) []*difftest.Tensor {
		o := newOuts(c)
		setRow(o[0], 0, 2, vals[:2])
		setRow(o[0], 1, 2, vals[2:])
		return o
	}
	k := Kernel{}
	for _, tc := range []struct {
		a, b []int32
		same bool
		why  string
	}{
		{[]int32{0, 1, 3, -1}, []int32{1, 0, 3, -1}, true, "long row in another order"},
		{[]int32{0, -1, 3, -1}, []int32{-1, 0, 3, -1}, true, "a −1 elsewhere in a long row"},
		{[]int32{0, 1, 3, -1}, []int32{0, 2, 3, -1}, false, "another pick"},
		{[]int32{0, 0, 3, -1}, []int32{0, 1, 3, -1}, false, "a repeat"},
		{[]int32{0, 1, 3, -1}, []int32{0, 1, -1, 3}, false, "short row in another order"},
	} {
		if got := k.Match(c, mk(tc.a...), mk(tc.b...)); got != tc.same {
			t.Errorf("%s: Match = %v, want %v", tc.why, got, tc.same)
		}
	}
	short := newOuts(c)
	short[0].Data = short[0].Data[:8]
	if k.Match(c, mk(0, 1, 3, -1), short) {
		t.Error("outputs of another size match")
	}
}

var one32 = fb(1)

// sglangFallback is an independent Go transcription of SGLang's PyTorch
// topk_transform_512_pytorch_vectorized for any K (the test's stand-in
// for the exec program a new user would write around it): positions ≥ L
// masked to −inf, a stable sort by torch.topk's float order (NaN above
// everything, then descending value with −0 == +0; ties by position, as
// torch.topk on CUDA takes them), the first K taken, −1 for picks whose
// score is −inf, rows with L ≤ K as 0 … L−1 then −1, slots through the
// page table. It shares no code with the variants.
type sglangFallback struct{}

func (sglangFallback) Name() string { return "exec:sglang-fallback" }
func (sglangFallback) Close() error { return nil }

func (sglangFallback) Run(_ context.Context, _ difftest.Kernel, c *difftest.Case, outs []*difftest.Buffer) (difftest.RunInfo, error) {
	p := c.Params.(*Params)
	scores, lens, table := c.Inputs[0], c.Inputs[1], c.Inputs[2]
	for b := 0; b < p.Batch; b++ {
		L := int(lens.I32(b))
		val := func(i int) float64 {
			if i >= L {
				return math.Inf(-1)
			}
			return float64(scores.F32(b*p.Stride + i))
		}
		picks := make([]int, 0, p.K)
		if L <= p.K {
			for i := 0; i < L; i++ {
				picks = append(picks, i)
			}
		} else {
			idx := make([]int, p.Stride)
			for i := range idx {
				idx[i] = i
			}
			sort.SliceStable(idx, func(x, y int) bool {
				a, b := val(idx[x]), val(idx[y])
				if math.IsNaN(a) || math.IsNaN(b) {
					return math.IsNaN(a) && !math.IsNaN(b)
				}
				return a > b
			})
			for _, i := range idx[:p.K] {
				if math.IsInf(float64(scores.F32(b*p.Stride+i)), -1) {
					i = -1
				}
				picks = append(picks, i)
			}
		}
		for j := 0; j < p.K; j++ {
			raw, slot := int32(-1), int32(-1)
			if j < len(picks) && picks[j] >= 0 {
				i := picks[j]
				raw = int32(i)
				slot = table.I32(b*p.MaxPages+i/p.P)*int32(p.P) + int32(i%p.P)
			}
			outs[0].SetI32(b*p.K+j, slot)
			if p.ReturnRaw {
				outs[1].SetI32(b*p.K+j, raw)
			}
		}
	}
	return difftest.RunInfo{}, nil
}

// TestPyTorchOrderDiagnosed is the new user's story of issue 11: SGLang's
// PyTorch fallback fails the masked, specials and three pseudotie cases of
// the quick suite, and the diagnosis names what it does. Each PyTorch
// behaviour is named alone on a family where only it shows: masked (−inf
// picks, no NaN, no zero straddling the K-th) gives the −1 variant,
// pseudotie zeros and subnormals (±0 at the K-th, no NaN, no −inf) the
// zero tie, pseudotie nans (NaNs of both signs at the K-th, no zero, no
// −inf) and specials (a quarter specials: the top 512 of 5000 are NaNs,
// +inf and large values; zeros and −inf rank far below the K-th) the NaN
// order. Every other quick case passes. On masked the catalog mutant
// topk-tie-hole (tied picks at the K-th never written) gives the same
// output, since there the K-th value is −inf: it is named beside it.
func TestPyTorchOrderDiagnosed(t *testing.T) {
	specs := loadSuite(t, "quick")
	want := map[string][]string{
		"masked-k512":               {"topk-tie-hole", VariantNegInfMinusOne},
		"pseudotie-zeros-k512":      {VariantZeroTie},
		"pseudotie-subnormals-k512": {VariantZeroTie},
		"pseudotie-nans-k512":       {VariantNaNLargest},
		"specials-k512":             {VariantNaNLargest},
	}
	failed := map[string]bool{}
	for _, spec := range specs {
		c := kerneltest.Draw(t, Kernel{}, spec, 1)
		rec, out := kerneltest.RunCase(t, Kernel{}, sglangFallback{}, c)
		w, expectFail := want[spec.Name]
		if rec.Failed() != expectFail {
			t.Errorf("%s: failed = %v (%s: %s), want %v", spec.Name, rec.Failed(), rec.Class, rec.Message, expectFail)
			continue
		}
		if !expectFail {
			continue
		}
		failed[spec.Name] = true
		if rec.Class != difftest.Mismatch {
			t.Errorf("%s: class %s, want mismatch", spec.Name, rec.Class)
		}
		d := triage.Diagnose(context.Background(), Kernel{}, c, out.Got, out.Want, 0)
		if !slices.Equal(d.Matches, w) || d.Note != "" {
			t.Errorf("%s: diagnosed as %v (%s), want %v", spec.Name, d.Matches, d.Note, w)
		}
		if d.Tried != d.Candidates || d.Candidates != len(Mutants())+len(Variants()) {
			t.Errorf("%s: tried %d of %d candidates", spec.Name, d.Tried, d.Candidates)
		}
	}
	if len(failed) != len(want) {
		t.Errorf("failing cases %v, want those of %v", failed, want)
	}
}

// TestPyTorchBehavioursSeparate runs each single PyTorch behaviour as the
// implementation on the three families that separate them and checks
// that it is diagnosed as itself where it shows and passes where it does
// not: so no family's diagnosis leans on another behaviour.
func TestPyTorchBehavioursSeparate(t *testing.T) {
	specs := map[string]difftest.CaseSpec{}
	for _, s := range loadSuite(t, "quick") {
		specs[s.Name] = s
	}
	shows := map[string]string{ // variant → the family case where it alone shows
		VariantNegInfMinusOne: "masked-k512",
		VariantZeroTie:        "pseudotie-zeros-k512",
		VariantNaNLargest:     "pseudotie-nans-k512",
	}
	for variant := range shows {
		v := variantByName(t, variant)
		impl := difftest.MutantImpl{Kernel: KernelName, Mutant: difftest.Mutant{Name: v.Name, Run: v.Run}}
		for other, caseName := range shows {
			c := kerneltest.Draw(t, Kernel{}, specs[caseName], 1)
			rec, out := kerneltest.RunCase(t, Kernel{}, impl, c)
			if rec.Failed() != (other == variant) {
				t.Errorf("%s on %s: failed = %v, want %v", variant, caseName, rec.Failed(), other == variant)
				continue
			}
			if !rec.Failed() {
				continue
			}
			d := triage.Diagnose(context.Background(), Kernel{}, c, out.Got, out.Want, 0)
			if !slices.Contains(d.Matches, variant) {
				t.Errorf("%s on %s: diagnosed as %v", variant, caseName, d.Matches)
			}
			for _, m := range d.Matches {
				if strings.HasPrefix(m, "torch-") && m != variant {
					t.Errorf("%s on %s: also diagnosed as %s", variant, caseName, m)
				}
			}
		}
	}
}

// TestPyTorchCombinationDiagnosed: on a case where all three behaviours
// show (one row each), SGLang's fallback is diagnosed as torch-topk alone:
// no single behaviour or pair reproduces it, and the combination with the
// highest-position tie rule differs on the zero row.
func TestPyTorchCombinationDiagnosed(t *testing.T) {
	rows := [][]uint32{
		{negZ, 0, negZ, 0, fb(-1)},                 // K = 2: the lowest zeros whatever their sign
		{negInf, one32, negInf, negInf, negInf},    // −inf picked, emitted as −1
		{one32, 0x7FC00001, negNaN, fb(2), fb(-5)}, // −NaN ranks top
	}
	c := handCase(t, 2, 1, true, rows, []int32{5, 5, 5}, [][]int32{{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}, {10, 11, 12, 13, 14}})
	rec, out := kerneltest.RunCase(t, Kernel{}, sglangFallback{}, c)
	if !rec.Failed() {
		t.Fatal("the fallback passes the hand case")
	}
	d := triage.Diagnose(context.Background(), Kernel{}, c, out.Got, out.Want, 0)
	if !slices.Equal(d.Matches, []string{VariantTorchTopK}) {
		t.Errorf("diagnosed as %v, want [%s]", d.Matches, VariantTorchTopK)
	}
}
