package normrope

import (
	"math"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// TestRoundRatio pins the tolerance ratio on hand-worked grid points:
// the share of the error bound e that the exact value x must move to
// round to the stored value v.
func TestRoundRatio(t *testing.T) {
	bf16Max := 0x1.fep127 // 0x7F7F; its ULP is 2^120, the overflow threshold max + 2^119
	tests := []struct {
		name      string
		bf16      bool
		v, x, e   float64
		wantRatio float64
		wantNear  bool
	}{
		// bf16 around 1: ULP 2^-7 above 1, midpoint 1 + 2^-8 = 1.00390625.
		{"bf16 v is the rounding of x", true, 1, 1.001, 0.01, 0, true},
		{"bf16 upper neighbour, x 0.00090625 below the midpoint", true, 1.0078125, 1.003, 0.002, 0.453125, false},
		{"bf16 lower neighbour, x 0.00019375 above the midpoint", true, 1, 1.0041, 0.001, 0.19375, false},
		{"bf16 x on the midpoint, v the even side", true, 1, 1.00390625, 1e-9, 0, true},
		{"bf16 x on the midpoint, v the odd side", true, 1.0078125, 1.00390625, 1e-9, 0, false},
		{"bf16 two ULP above, x at 1", true, 1.015625, 1, 0.001, 11.71875, false}, // midpoint 1.01171875
		{"bf16 max where x overflows to inf", true, bf16Max, bf16Max + 0x1p119 + 0x1p118, 0x1p120, 0.25, false},
		{"bf16 inf where x stays finite", true, math.Inf(1), bf16Max, 0x1p120, 0.5, false},
		{"bf16 NaN", true, math.NaN(), 1, 1, ratioCap, false},
		// e4m3 in [8, 16): step 1.
		{"e4m3 v is the rounding of x", false, 13, 13.2, 0.5, 0, true},
		{"e4m3 upper neighbour", false, 14, 13.4, 0.5, 0.2, false},
		{"e4m3 saturation: 470 rounds to 448", false, 448, 470, 1, 0, true},
		{"e4m3 below the top code", false, 416, 440, 10, 0.8, false}, // midpoint 432
		{"e4m3 -0 for a tiny positive x", false, math.Copysign(0, -1), 1e-4, 1e-3, 0, true},
		{"e4m3 smallest subnormal for 0", false, 0x1p-9, 0, 0x1p-10, 1, false}, // midpoint 2^-10
	}
	for _, tc := range tests {
		rnd, down, up := e4m3Round, e4m3Down, e4m3Up
		if tc.bf16 {
			rnd, down, up = bf16Round, bf16Down, bf16Up
		}
		ratio, near := roundRatio(tc.v, tc.x, tc.e, rnd, down, up)
		if math.Abs(ratio-tc.wantRatio) > 1e-9*math.Max(1, tc.wantRatio) || near != tc.wantNear {
			t.Errorf("%s: ratio %v near %v, want %v %v", tc.name, ratio, near, tc.wantRatio, tc.wantNear)
		}
	}
}

// TestPassingMetrics: on passing cases max_ratio measures the margin. The
// reference scores 0 for BF16 (its values are the roundings of the exact
// results; for FP8 the codes are scored against the stored f32 scale, so
// not quite 0); a binary32 kernel scores strictly inside (0, 1) (the
// worst-case bound leaves a wide margin over the rounding it really
// makes) with some BF16 neighbours counted in off_nearest.
func TestPassingMetrics(t *testing.T) {
	for _, preset := range []string{PresetV4, PresetV4BF16, PresetV32} {
		c := genCase(t, "gaussian", map[string]any{"preset": preset, "N": int64(512), "P": int64(4)})
		want := reference(t, c)
		ref := check(c, want, want)
		got := newCache(c)
		if err := runSim(c, []*difftest.Tensor{got}, sim32{tree: true}); err != nil {
			t.Fatal(err)
		}
		sim := check(c, got, want)
		for name, r := range map[string]difftest.Result{"reference": ref, "f32 kernel": sim} {
			if r.Failed() {
				t.Fatalf("%s %s: %s", preset, name, r.Message)
			}
			mr := r.Metrics["max_ratio"].(float64)
			if mr < 0 || mr > 1 {
				t.Errorf("%s %s: max_ratio %v outside [0, 1] on a pass", preset, name, mr)
			}
			if r.Metrics["tokens_checked"].(int) == 0 || r.Metrics["tokens_written"].(int) != r.Metrics["tokens_checked"].(int) {
				t.Errorf("%s %s: tokens %v", preset, name, r.Metrics)
			}
			t.Logf("%s %s: max_ratio %.3g, off_nearest %v of %v", preset, name, mr, r.Metrics["off_nearest"], r.Metrics["elements"])
		}
		if preset == PresetV4BF16 && (ref.Metrics["max_ratio"].(float64) != 0 || ref.Metrics["off_nearest"].(int) != 0) {
			t.Errorf("bf16 reference: max_ratio %v, off_nearest %v, want 0, 0", ref.Metrics["max_ratio"], ref.Metrics["off_nearest"])
		}
		if mr := sim.Metrics["max_ratio"].(float64); mr == 0 || mr == 1 {
			t.Errorf("%s f32 kernel: max_ratio %v, want a margin strictly inside (0, 1)", preset, mr)
		}
		// BF16 steps are fine enough that some of 58K f32 results fall on
		// the other side of a midpoint; FP8 steps (2^-3 relative) rarely.
		if preset == PresetV4BF16 && sim.Metrics["off_nearest"].(int) == 0 {
			t.Errorf("%s f32 kernel: off_nearest 0 over %v elements: a binary32 kernel rounds some values to the neighbour", preset, sim.Metrics["elements"])
		}
	}
}

// TestAllDontCare: a case whose written tokens are all don't care passes
// with a warning in the families made for them, and is not a plain pass
// elsewhere.
func TestAllDontCare(t *testing.T) {
	p := config(NormRMS, StyleInterleaved, 64, true, StoreFP8, ScalePlain, 2, 2)
	nan := make([]float64, Dim)
	for i := range nan {
		nan[i] = math.NaN()
	}
	c := handCase(p, [][]float64{nan, {1}}, nil, nil, [][]float32{rotRow(1, 0)}, []int64{0, 0}, []int64{1, -1})
	c.Family = "nonfinite"
	want := reference(t, c)
	r := check(c, want, want)
	if r.Failed() || len(r.Warnings) != 1 || r.Metrics["tokens_checked"] != 0 || r.Metrics["tokens_written"] != 1 {
		t.Fatalf("nonfinite family: %+v, want a pass with one warning", r)
	}
	if want := "no written token has a specified value (all 1 don't care; token 0: x[0] is not finite): only the canaries were checked"; r.Warnings[0] != want {
		t.Errorf("warning %q, want %q", r.Warnings[0], want)
	}
	c.Family = "gaussian" // Validate rejects it: Check reports the invalid case
	if r := check(c, want, want); r.Class != difftest.InvalidCase {
		t.Errorf("gaussian family: class %q (%s), want %q", r.Class, r.Message, difftest.InvalidCase)
	}
	tl := &tally{written: 3, dontCare: 3, firstDC: "token 0: the error analysis overflows"}
	if r := tl.result(p, false); r.Class != difftest.InvalidCase || r.Message == "" {
		t.Errorf("all don't care outside the don't-care families: %+v, want class %q", r, difftest.InvalidCase)
	}
}
