package logits

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
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

// TestScreenNeverRejectsAMatch: on the quick suite's cases (FP8, BF16 and
// FP4 keys, next_n, bf16 logits, noclean), with each catalog mutant's
// output as the implementation's, ScreenCandidate rejects a candidate
// only where the diagnosis would not name it (neither byte-equal nor
// MatchCandidate), never the mutant itself, and rejects every other
// mutant whose output differs from it by more than rounding at a sampled
// position: on the logits-bf16-dot output all others but those equal to
// the reference there (their fault does not show on the case).
func TestScreenNeverRejectsAMatch(t *testing.T) {
	ms := Mutants()
	for _, spec := range loadSuite(t, "quick") {
		c, err := NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
		if err != nil {
			t.Fatal(err)
		}
		outs := map[string][]*difftest.Tensor{}
		for _, m := range ms {
			o := difftest.PoisonedTensors(c, difftest.PoisonA)
			if err := m.Run(c, o); err != nil {
				t.Fatal(err)
			}
			outs[m.Name] = o
		}
		for _, g := range ms {
			got := outs[g.Name]
			for _, m := range ms {
				rejected := Kernel{}.ScreenCandidate(c, m.Name, got)
				match := bytes.Equal(outs[m.Name][0].Data, got[0].Data) || Kernel{}.MatchCandidate(c, m.Name, outs[m.Name], got)
				if rejected && match {
					t.Errorf("%s: got = %s's output; the screen rejects %s, which matches it", c.ID, g.Name, m.Name)
				}
				if g.Name == m.Name && rejected {
					t.Errorf("%s: the screen rejects %s on its own output", c.ID, m.Name)
				}
				if g.Name == "logits-bf16-dot" && m.Name != g.Name && !rejected && !match {
					t.Logf("%s: %s not told apart from logits-bf16-dot by the screen (run in full)", c.ID, m.Name)
				}
			}
		}
	}
}

// TestDiagnoseBF16Logits: on bf16 logits (logits_dtype = "bf16") the
// candidates' own checks and the precision variants read 2-byte elements:
// logits-bf16-dot's output is named as itself and passes as a coarser
// accum_bits, logits-bf16-truncate's is named as itself (they used to read
// the logits as f32 and index past the buffer, in a worker goroutine that
// no recover could catch, and the run died). A truncated bf16 logit is
// within one bf16 step of the rounded one, which accum_bits 8's bound
// (2^-8·Σ|q·k| per head) may also admit, so the precision is not asserted
// for it.
func TestDiagnoseBF16Logits(t *testing.T) {
	c := mustCase(t, "gaussian", map[string]any{"store": "fp8", "P": int64(16), "H": int64(4), "lengths": []any{int64(1), int64(17), int64(300)}, "logits_dtype": "bf16"})
	want := reference(t, c)
	for _, tt := range []struct {
		mutant string
		prec   bool
	}{{"logits-bf16-dot", true}, {"logits-bf16-truncate", false}} {
		var mut difftest.Mutant
		for _, m := range Mutants() {
			if m.Name == tt.mutant {
				mut = m
			}
		}
		got := newLogits(c)
		if err := mut.Run(c, []*difftest.Tensor{got}); err != nil {
			t.Fatal(err)
		}
		if !Check(c, []*difftest.Tensor{got}, []*difftest.Tensor{want}).Failed() {
			t.Fatalf("%s passes the contract", tt.mutant)
		}
		d := triage.Diagnose(context.Background(), Kernel{}, c, []*difftest.Tensor{got}, []*difftest.Tensor{want}, 0)
		prec := slices.ContainsFunc(d.Matches, func(m string) bool { return strings.HasPrefix(m, "accum_bits=") })
		if !slices.Contains(d.Matches, tt.mutant) || tt.prec && !prec {
			t.Errorf("%s: diagnosed as %v, want %s (and a precision variant: %v)", tt.mutant, d.Matches, tt.mutant, tt.prec)
		}
	}
}

// TestPrecisionDiagnosisLine: an implementation that fails the declared
// accum_bits but passes a coarser one is said to pass as it, with the
// precision's meaning: "passes as accum_bits=8: dot products rounded to
// bf16 …" on the diagnosis line a report prints.
func TestPrecisionDiagnosisLine(t *testing.T) {
	c := mustCase(t, "gaussian", map[string]any{"store": "bf16", "P": int64(16), "H": int64(2), "lengths": []any{int64(400)}})
	want := reference(t, c)
	got := newLogits(c)
	if err := runSim(c, []*difftest.Tensor{got}, sim32{fault: "logits-bf16-dot", heads: headsTree}); err != nil {
		t.Fatal(err)
	}
	d := triage.Diagnose(context.Background(), Kernel{}, c, []*difftest.Tensor{got}, []*difftest.Tensor{want}, 0)
	rec := &difftest.Record{Kernel: KernelName, Diagnosis: d.Matches}
	lines := triage.DiagnosisLines(rec)
	if !slices.ContainsFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, "passes as accum_bits=8: dot products rounded to bf16") || strings.HasPrefix(l, "passes as accum_bits=11: dot products rounded to f16")
	}) {
		t.Errorf("diagnosis lines %q", lines)
	}
}
