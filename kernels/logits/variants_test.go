package logits

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// TestBF16DotAnotherOrder: a bf16 logits fallback whose f32 sum over heads
// runs in another order than the mutant's (modelled by moving every
// finite logit of the mutant logits-bf16-dot by one f32 ULP, which is
// within twice the derived f32 bound but never bit-equal) is named
// logits-bf16-dot, and passes as accum_bits=8 or finer; the mutant's own
// output is named alike. A byte comparison names neither on the moved
// output. Logits moved by 2^-8 relative (far beyond an f32 evaluation's
// bound) still are: at 8 bits the derived bound is 2^-8 of Σ|q·k|, which
// is the point of the candidate's own precision. Logits off by a quarter
// (a wrong scale) are named as neither.
func TestBF16DotAnotherOrder(t *testing.T) {
	c := mustCase(t, "gaussian", map[string]any{"store": "fp8", "P": int64(16), "H": int64(8), "lengths": []any{int64(600)}})
	want := reference(t, c)
	base := kerneltest.RunMutant(t, Kernel{}, c, "logits-bf16-dot")[0]
	move := func(rel float64) *difftest.Tensor {
		got := base.Clone()
		L := int(c.Input(NameSeqLens).I32(0))
		for s := 0; s < L; s++ {
			v := got.F32(s)
			if v == 0 || math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				continue
			}
			if rel == 0 {
				got.SetU32(s, got.U32(s)+1)
			} else {
				got.SetF32(s, float32(float64(v)*(1+rel)))
			}
		}
		return got
	}
	for _, tt := range []struct {
		name   string
		got    *difftest.Tensor
		bf16   bool
		passes bool
	}{
		{"mutant", base, true, true},
		{"one-ulp", move(0), true, true},
		{"2^-8", move(0x1p-8), true, true},
		{"a-quarter", move(0.25), false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := []*difftest.Tensor{tt.got}
			if !Check(c, got, []*difftest.Tensor{want}).Failed() {
				t.Fatal("passes the contract")
			}
			d := triage.Diagnose(context.Background(), Kernel{}, c, got, []*difftest.Tensor{want}, 0)
			if slices.Contains(d.Matches, "logits-bf16-dot") != tt.bf16 {
				t.Errorf("matches %v: logits-bf16-dot named = %v, want %v", d.Matches, !tt.bf16, tt.bf16)
			}
			prec := slices.ContainsFunc(d.Matches, func(m string) bool {
				return m == PrecisionVariant(8) || m == PrecisionVariant(11)
			})
			if prec != tt.passes {
				t.Errorf("matches %v: passes as accum_bits 8 or 11 = %v, want %v", d.Matches, prec, tt.passes)
			}
		})
	}
}
