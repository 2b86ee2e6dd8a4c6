package normrope

import (
	"context"
	"slices"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// mutantOut runs the named catalog mutant on c into a canary-filled cache.
func mutantOut(t *testing.T, c *difftest.Case, name string) *difftest.Tensor {
	t.Helper()
	return kerneltest.RunMutant(t, Kernel{}, c, name)[0]
}

// TestMatchCandidateFreedoms: a mutant is matched with the freedoms its
// own contract leaves. A store without the 1e-4 floor written as torch
// writes it (0/0 is a NaN with the sign bit: code 0xFF where the mutant
// writes 0x7F) is named scale-no-floor; a truncating BF16 store whose
// values differ from the mutant's by one ULP in a few elements (another
// f32 summation order) is named bf16-truncate; the bf16-intermediate
// chain, whose values differ from the reference by rounding to nearest,
// is not named bf16-truncate but passes as intermediate=bf16.
func TestMatchCandidateFreedoms(t *testing.T) {
	diagnose := func(c *difftest.Case, got *difftest.Tensor) []string {
		want := reference(t, c)
		gs := []*difftest.Tensor{got}
		if !Check(c, gs, []*difftest.Tensor{want}).Failed() && canaryViolation(c, got) == "" {
			t.Fatalf("%s: passes", c.ID)
		}
		return triage.Diagnose(context.Background(), Kernel{}, c, gs, []*difftest.Tensor{want}, 0).Matches
	}

	zero := genCase(t, "zero", map[string]any{"preset": "v4", "N": int64(8), "P": int64(4)})
	got := mutantOut(t, zero, "scale-no-floor")
	flipped := 0
	for i, b := range got.Data {
		if b == 0x7F {
			got.Data[i] = 0xFF
			flipped++
		}
	}
	if flipped == 0 {
		t.Fatal("scale-no-floor wrote no NaN code")
	}
	if m := diagnose(zero, got); !slices.Contains(m, "scale-no-floor") {
		t.Errorf("scale-no-floor with the sign bit: diagnosed as %v", m)
	}

	bf16 := genCase(t, "gaussian", map[string]any{"preset": "v4-bf16", "N": int64(16), "P": int64(4)})
	got = mutantOut(t, bf16, "bf16-truncate")
	loc := bf16.Input(NameOutLoc)
	for t := 0; t < loc.Len(); t++ {
		if slot := loc.I64(t); slot >= 0 {
			at, _ := slotBytes(bf16.Params.(Params), int(slot))
			for _, k := range []int{3, 40, 99} { // three values one ULP up (low byte of a bf16, little-endian)
				if i := at + 2*k; got.Data[i] != 0xFF {
					got.Data[i]++
				}
			}
			break
		}
	}
	if m := diagnose(bf16, got); !slices.Contains(m, "bf16-truncate") {
		t.Errorf("bf16-truncate in another order: diagnosed as %v", m)
	}

	chain := newCache(bf16)
	if err := runSim(bf16, []*difftest.Tensor{chain}, sim32{bf16Stages: true}); err != nil {
		t.Fatal(err)
	}
	if m := diagnose(bf16, chain); slices.Contains(m, "bf16-truncate") || !slices.Contains(m, VariantIntermediateBF16) {
		t.Errorf("bf16 chain: diagnosed as %v, want %s and not bf16-truncate", m, VariantIntermediateBF16)
	}
}

// TestMatchCandidateFP4 reads an FP4 slot as 64 code bytes and 4 scale
// bytes: the mutant's own cache matches itself; a code one e2m1 value
// away does not (the FP4 variants differ by just that step), nor does a
// changed scale byte, or a changed byte just past the slot's 64 code
// bytes (the next slot's, which the match does not own).
func TestMatchCandidateFP4(t *testing.T) {
	spec := difftest.CaseSpec{Kernel: KernelName, Family: "gaussian", Name: "m", Params: map[string]any{"preset": PresetV4FP4, "N": int64(2), "P": int64(4)}}
	c, err := NewCase(spec, 1, 7)
	if err != nil {
		t.Fatal(err)
	}
	cand := mutantOut(t, c, "fp4-nibble-swap")
	p := c.Params.(Params)
	codesAt, scaleAt := slotBytes(p, int(c.Input(NameOutLoc).I64(0)))
	match := func(edit func(b []byte)) bool {
		got := cand.Clone()
		edit(got.Data)
		return Kernel{}.MatchCandidate(c, "fp4-nibble-swap", []*difftest.Tensor{cand}, []*difftest.Tensor{got})
	}
	step := func(b []byte) { // one e2m1 value up or down, same sign
		if b[codesAt]&7 == 7 {
			b[codesAt]--
		} else {
			b[codesAt]++
		}
	}
	if !match(func([]byte) {}) {
		t.Error("the candidate's own cache does not match")
	}
	if match(step) {
		t.Error("a code one e2m1 value away matches")
	}
	if match(func(b []byte) { b[codesAt] ^= 0x7 }) && cand.Data[codesAt]&7 != 0 && cand.Data[codesAt]&7 != 7 {
		t.Error("a code several values away matches")
	}
	if match(func(b []byte) { b[scaleAt]++ }) {
		t.Error("a changed scale byte matches")
	}
	if match(func(b []byte) { b[codesAt+Dim/2] ^= 0x11 }) {
		t.Error("a byte past the slot's 64 code bytes matches")
	}
}

// nearE4M3 and nearBF16 on known codes: one step apart of one sign, ±0
// (equal values) and the smallest subnormal beside each zero, both NaN;
// not two steps, not across the sign, not a NaN beside a number.
func TestNearCodes(t *testing.T) {
	for _, tc := range []struct {
		a, b uint8
		want bool
	}{
		{0x38, 0x39, true}, {0x39, 0x38, true}, {0x38, 0x3A, false}, {0x00, 0x80, true},
		{0x00, 0x01, true}, {0x80, 0x81, true}, {0x01, 0x81, false}, {0x00, 0x81, false},
		{0x7F, 0xFF, true}, {0x7E, 0x7F, false}, {0xB8, 0xB9, true},
	} {
		if got := nearE4M3(tc.a, tc.b); got != tc.want {
			t.Errorf("nearE4M3(0x%02X, 0x%02X) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	for _, tc := range []struct {
		a, b uint16
		want bool
	}{
		{0x3F80, 0x3F81, true}, {0x3F80, 0x3F82, false}, {0x0000, 0x8000, true}, {0x8000, 0x8001, true},
		{0x0001, 0x8001, false}, {0x7FC0, 0xFFC1, true}, {0x7F80, 0x7F7F, true}, {0x7F80, 0x7FC0, false},
	} {
		if got := nearBF16(tc.a, tc.b); got != tc.want {
			t.Errorf("nearBF16(0x%04X, 0x%04X) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
