package normrope

import (
	"fmt"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// TestLargeMeanCatchesOnePassVariance shows what the large-mean family
// is for: a LayerNorm kernel that forms the variance in one pass, E[x²] −
// mean² in f32, passes the other families but fails this one in every
// LayerNorm configuration of the default and quick suites, while every
// legitimate two-pass variant passes it (no false alarm).
func TestLargeMeanCatchesOnePassVariance(t *testing.T) {
	onePass := sim32{onePass: true}
	var specs []difftest.CaseSpec
	for _, suite := range []string{"quick", "default"} {
		for _, spec := range loadSuite(t, suite) {
			if spec.Family == "large-mean" {
				specs = append(specs, spec)
			}
		}
	}
	layer := 0
	for _, spec := range specs {
		c, err := NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
		if err != nil {
			t.Fatalf("%s: %v", spec.ID(), err)
		}
		if c.Params.(Params).Norm != NormLayer {
			continue
		}
		layer++
		want := reference(t, c)
		failed, why := outcome(t, c, want, func(o []*difftest.Tensor) error { return runSim(c, o, onePass) })
		if !failed {
			t.Errorf("%s: the one-pass-variance kernel passes", c.ID)
		} else {
			t.Logf("%s: one-pass variance caught: %.140s", c.ID, why)
		}
		for _, l := range legitimate {
			if failed, why := outcome(t, c, want, func(o []*difftest.Tensor) error { return runSim(c, o, l.sim) }); failed {
				t.Errorf("%s, kernel %s: false alarm: %s", c.ID, l.name, why)
			}
		}
	}
	if layer < 2 {
		t.Errorf("%d LayerNorm large-mean cases in the suites, want one in quick and several in default", layer)
	}
}

// TestOnePassVarianceGap documents the gap the large-mean family closes:
// over a spread of seeds the one-pass kernel fails large-mean LayerNorm
// cases, and the same kernel passes the Gaussian family, where |mean| is
// small next to the standard deviation.
func TestOnePassVarianceGap(t *testing.T) {
	onePass := sim32{onePass: true}
	for _, tc := range []struct {
		family   string
		wantFail bool
	}{
		{"large-mean", true},
		{"gaussian", false},
	} {
		for _, preset := range []string{PresetV32} {
			for _, store := range []string{StoreFP8, StoreBF16} {
				for seed := uint64(1); seed <= 5; seed++ {
					spec := difftest.CaseSpec{Kernel: KernelName, Family: tc.family, Name: fmt.Sprintf("gap/%s/%s/%s", tc.family, preset, store),
						Params: map[string]any{"preset": preset, "store": store, "N": int64(32), "P": int64(4)}}
					c, err := NewCase(spec, seed, rng.CaseKey(seed, spec.ID()))
					if err != nil {
						t.Fatal(err)
					}
					want := reference(t, c)
					failed, why := outcome(t, c, want, func(o []*difftest.Tensor) error { return runSim(c, o, onePass) })
					if failed != tc.wantFail {
						t.Errorf("%s seed %d: one-pass kernel failed=%v, want %v (%s)", c.ID, seed, failed, tc.wantFail, why)
					}
				}
			}
		}
	}
}
