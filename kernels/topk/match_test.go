package topk

import (
	"context"
	"slices"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// TestMatchTieFreedom: a variant is an alternative contract, so an
// implementation that picks among the keys tied at the K-th under the
// variant's order, in an order that is neither the lowest nor the highest
// positions (torch.topk on CPU), is diagnosed as that variant; one that
// also leaves out a position above the K-th is not. K = 2, P = 1, one row
// [3, −0, +0, −0, +0]: under torch's float comparison the four zeros tie;
// under key32 +0 ranks above −0, so {0, 3} (3 and a −0) fails the
// contract. The variant itself returns {0, 1} (lowest tied) and, with the
// highest-position rule, {0, 4}: exact matching names neither.
func TestMatchTieFreedom(t *testing.T) {
	c := handCase(t, 2, 1, true, [][]uint32{{fb(3), negZ, 0, negZ, 0}}, []int32{5}, [][]int32{{10, 11, 12, 13, 14}})
	want := runRef(t, c)
	tests := []struct {
		name       string
		page, raw  []int32
		matches    []string
		failsCheck bool
	}{
		{"middle-tie", []int32{13, 10}, []int32{3, 0}, []string{VariantZeroTie}, true},
		{"another-middle-tie", []int32{10, 11}, []int32{0, 1}, []string{VariantZeroTie}, true},
		{"misses-above", []int32{11, 13}, []int32{1, 3}, nil, true},
		{"duplicate-tie", []int32{13, 13}, []int32{3, 3}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runRef(t, c)
			setRow(got[0], 0, 2, tt.page)
			setRow(got[1], 0, 2, tt.raw)
			if r := Check(c, got, want); r.Failed() != tt.failsCheck {
				t.Fatalf("Check: %s %q", r.Class, r.Message)
			}
			d := triage.Diagnose(context.Background(), Kernel{}, c, got, want, 0)
			if !slices.Equal(d.Matches, tt.matches) {
				t.Errorf("diagnosed as %v, want %v", d.Matches, tt.matches)
			}
		})
	}
}

// as16 returns c with its scores replaced by the 16-bit rows (dtype bf16
// or f16; one row per batch row, each the stride long).
func as16(t *testing.T, c *difftest.Case, dtype string, rows [][]uint16) *difftest.Case {
	t.Helper()
	p, err := paramsOf(c)
	if err != nil {
		t.Fatal(err)
	}
	q := *p
	q.ScoreDType = dtype
	s := difftest.MustTensor(TensorScores, q.scoresDType(), q.Batch, q.Stride)
	for b, r := range rows {
		if len(r) != q.Stride {
			t.Fatalf("row %d has %d scores, the stride is %d", b, len(r), q.Stride)
		}
		for i, x := range r {
			s.SetU16(b*q.Stride+i, x)
		}
	}
	d := *c
	d.Params = &q
	d.Inputs = append([]*difftest.Tensor{s}, c.Inputs[1:]...)
	d.Outputs = q.Outputs()
	return &d
}

// TestMatchMaskedStride: SGLang's PyTorch fallback masks the positions at
// or past L to −inf and runs torch.topk over the whole stride, so with
// fewer than K scores above −inf it may take a masked position past L
// and, where the unmasked score there is not −inf, emit its slot. K = 2,
// P = 2, L = 3, stride 6, one row [5, −inf, −inf | 9, 9, −inf], page
// table [10, 11, −1] (the third page is past the used pages). The
// contract takes 5 and the lowest −inf: raw {0, 1}, slots {20, 21}. The
// fallback's masked row is [5, −inf × 5]: it takes 5 and any of the five
// −infs; position 3 gives raw 3, slot 11·2 + 1 = 23; position 4 gives
// raw 4, slot −1·2 + 0 = −2 (its page is −1); position 5 (−inf unmasked
// too) gives −1, which torch-neg-inf-minus-one alone explains. The same
// row in bf16 and f16 is diagnosed the same way.
func TestMatchMaskedStride(t *testing.T) {
	negInf16 := map[string]uint16{ScoreBF16: 0xFF80, ScoreF16: 0xFC00}
	five := map[string]uint16{ScoreBF16: 0x40A0, ScoreF16: 0x4500}
	nine := map[string]uint16{ScoreBF16: 0x4110, ScoreF16: 0x4880}
	masked := VariantTorchTopK + "+" + VariantMaskedStride
	tests := []struct {
		name      string
		page, raw []int32
		matches   []string
	}{
		{"past-L-slot", []int32{20, 23}, []int32{0, 3}, []string{masked}},
		{"past-L-negative-page", []int32{-2, 20}, []int32{4, 0}, []string{masked}},
		{"past-L-neg-inf", []int32{20, -1}, []int32{0, -1}, []string{VariantNegInfMinusOne}},
		{"misses-above", []int32{23, -2}, []int32{3, 4}, nil},
		{"repeated-past-L", []int32{23, 23}, []int32{3, 3}, nil},
	}
	for _, dtype := range []string{ScoreF32, ScoreBF16, ScoreF16} {
		c := handCase(t, 2, 2, true, [][]uint32{{fb(5), negInf, negInf, fb(9), fb(9), negInf}}, []int32{3}, [][]int32{{10, 11, -1}})
		if dtype != ScoreF32 {
			ni := negInf16[dtype]
			c = as16(t, c, dtype, [][]uint16{{five[dtype], ni, ni, nine[dtype], nine[dtype], ni}})
		}
		want := runRef(t, c)
		if r, p := rowI32(want[1], 0, 2), rowI32(want[0], 0, 2); !slices.Equal(r, []int32{0, 1}) || !slices.Equal(p, []int32{20, 21}) {
			t.Fatalf("%s: the reference gives raw %v, slots %v; want {0, 1}, {20, 21}", dtype, r, p)
		}
		for _, tt := range tests {
			t.Run(dtype+"/"+tt.name, func(t *testing.T) {
				got := runRef(t, c)
				setRow(got[0], 0, 2, tt.page)
				setRow(got[1], 0, 2, tt.raw)
				if r := Check(c, got, want); !r.Failed() {
					t.Fatal("passes the contract")
				}
				d := triage.Diagnose(context.Background(), Kernel{}, c, got, want, 0)
				if v := variantMatches(d.Matches); !slices.Equal(v, tt.matches) {
					t.Errorf("diagnosed as %v (variants %v), want variants %v", d.Matches, v, tt.matches)
				}
			})
		}
	}
}

// variantMatches returns the names in matches that are semantic variants
// (Variants), leaving out catalog mutants, which a row of a few scores can
// reproduce by coincidence.
func variantMatches(matches []string) []string {
	var vs []string
	for _, m := range matches {
		for _, v := range Variants() {
			if v.Name == m {
				vs = append(vs, m)
			}
		}
	}
	return vs
}

// TestMatchNaN16EitherSign: torch.topk (2.15, CPU, largest=True,
// sorted=False) ranks NaN of either sign above +inf on bf16 and f16
// scores as on f32, all NaNs tied; Key16 puts −NaN at the bottom. Row
// [1, −NaN, 2, +NaN, +inf]: torch gives {1, 3} for K = 2 and {1} for
// K = 1 (seen with torch 2.15 on CPU, both dtypes); the contract {3, 4}
// and {3}. Both are diagnosed as torch-nan-largest and no other variant.
func TestMatchNaN16EitherSign(t *testing.T) {
	rows := map[string][]uint16{
		ScoreBF16: {0x3F80, 0xFFC0, 0x4000, 0x7FC0, 0x7F80},
		ScoreF16:  {0x3C00, 0xFE00, 0x4000, 0x7E00, 0x7C00},
	}
	for dtype, row := range rows {
		for _, tt := range []struct {
			K        int
			got, ref []int32
		}{{2, []int32{1, 3}, []int32{3, 4}}, {1, []int32{1}, []int32{3}}} {
			c := handCase16(t, dtype, tt.K, row)
			want := runRef(t, c)
			if r := sortedRaw(want, tt.K); !slices.Equal(r, tt.ref) {
				t.Fatalf("%s K=%d: reference %v, want %v", dtype, tt.K, r, tt.ref)
			}
			got := runRef(t, c)
			setRow(got[0], 0, tt.K, tt.got) // identity table, P = 1
			setRow(got[1], 0, tt.K, tt.got)
			if !Check(c, got, want).Failed() {
				t.Fatalf("%s K=%d: %v passes the contract", dtype, tt.K, tt.got)
			}
			d := triage.Diagnose(context.Background(), Kernel{}, c, got, want, 0)
			if v := variantMatches(d.Matches); !slices.Equal(v, []string{VariantNaNLargest}) {
				t.Errorf("%s K=%d: diagnosed as %v, want the variant %s alone", dtype, tt.K, d.Matches, VariantNaNLargest)
			}
		}
	}
}
