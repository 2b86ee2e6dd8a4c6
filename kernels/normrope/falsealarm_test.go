package normrope

import (
	"fmt"
	"os"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// legitimate lists binary32 kernels that compute the contract correctly
// but differently from one another: summation order, Hadamard algorithm
// and scaling point, an rsqrtf up to 2 ULP off, division or reciprocal
// product for the codes (FP4: amax/6 by division or by the product with
// f32(1/6)), a Welford mean and variance.
var legitimate = []struct {
	name string
	sim  sim32
}{
	{"sequential", sim32{}},
	{"tree", sim32{tree: true}},
	{"tree-direct-hadamard", sim32{tree: true, direct: true}},
	{"sequential-direct-prescale", sim32{direct: true, preScale: true}},
	{"tree-rsqrt+2ulp-recip-div6", sim32{tree: true, rsqrtULP: 2, recip: true, fp4Div6: true}},
	{"sequential-rsqrt-2ulp-prescale", sim32{rsqrtULP: -2, preScale: true}},
	{"welford-direct-hadamard", sim32{welford: true, direct: true}},
}

// falseAlarmConfigs is every configuration combination the families
// accept, as suite parameters.
func falseAlarmConfigs() []map[string]any {
	var out []map[string]any
	for _, norm := range []string{NormRMS, NormLayer} {
		for _, off := range []int64{0, 64} {
			for _, style := range []string{StyleNeox, StyleInterleaved} {
				for _, had := range []bool{true, false} {
					for _, st := range [][2]string{{StoreFP8, ScalePlain}, {StoreFP8, ScaleUE8M0}, {StoreBF16, ScalePlain}, {StoreFP4, ScaleUE8M0}} {
						out = append(out, map[string]any{"norm": norm, "rope_offset": off, "rope_style": style, "hadamard": had, "store": st[0], "scale_fmt": st[1]})
					}
				}
			}
		}
	}
	return out
}

// TestNoFalseAlarms runs every legitimate binary32 kernel over every
// family and configuration (tens of thousands of tokens) and requires
// Check to pass them all: the tolerance absorbs rounding.
func TestNoFalseAlarms(t *testing.T) {
	n := int64(48)
	seeds := 1 // KD_LONG=1: 10 seeds, about 190k tokens
	if os.Getenv("KD_LONG") != "" {
		seeds = 10
	}
	tokens := 0
	for _, fam := range Families() {
		for ci, cfg := range falseAlarmConfigs() {
			spec := difftest.CaseSpec{Kernel: KernelName, Family: fam, Name: fmt.Sprintf("fa/%s/%d", fam, ci), Params: map[string]any{"N": n, "P": int64(4)}}
			for k, v := range cfg {
				spec.Params[k] = v
			}
			if fam == "positions" {
				spec.Params["max_pos"] = int64(5000)
			}
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				c, err := NewCase(spec, seed, rng.CaseKey(seed, spec.ID()))
				if err != nil {
					continue // the family does not take this configuration
				}
				want := reference(t, c)
				for _, l := range legitimate {
					failed, why := outcome(t, c, want, func(o []*difftest.Tensor) error { return runSim(c, o, l.sim) })
					if failed {
						t.Errorf("%s seed %d %v, kernel %s: false alarm: %s", c.ID, seed, c.Params, l.name, why)
					}
				}
				tokens += int(n)
			}
		}
	}
	t.Logf("%d tokens × %d kernel variants, no false alarm", tokens, len(legitimate))
}

// seededCase draws a small case of family fam (N 9, P 2, max_pos 300)
// with configuration cfg, named name/fam, at seed; nil where the family
// does not take the configuration.
func seededCase(name, fam string, cfg map[string]any, seed uint64) *difftest.Case {
	spec := difftest.CaseSpec{Kernel: KernelName, Family: fam, Name: name + "/" + fam, Params: map[string]any{"N": int64(9), "P": int64(2), "max_pos": int64(300)}}
	for k, v := range cfg {
		spec.Params[k] = v
	}
	c, err := NewCase(spec, seed, rng.CaseKey(seed, spec.ID()))
	if err != nil {
		return nil
	}
	return c
}

// TestNoFalseAlarmsManySeeds (KD_LONG=1) runs 10^4 seeded cases, each a
// small case of one family and configuration in rotation (combinations a
// family rejects are passed over), run by one legitimate kernel variant
// in rotation: docs/contracts/norm_rope_store.md's "zero false alarms over 10^4 seeds".
func TestNoFalseAlarmsManySeeds(t *testing.T) {
	if os.Getenv("KD_LONG") == "" {
		t.Skip("KD_LONG=1 runs 10^4 seeds (a few minutes)")
	}
	fams, cfgs := Families(), falseAlarmConfigs()
	ran := 0
	for seed := uint64(1); ran < 10000; seed++ {
		fam := fams[seed%uint64(len(fams))]
		cfg := cfgs[(seed/uint64(len(fams)))%uint64(len(cfgs))]
		c := seededCase("fa-seeds", fam, cfg, seed)
		if c == nil {
			continue // the family does not take this configuration
		}
		want := reference(t, c)
		l := legitimate[seed%uint64(len(legitimate))]
		if failed, why := outcome(t, c, want, func(o []*difftest.Tensor) error { return runSim(c, o, l.sim) }); failed {
			t.Errorf("%s seed %d %v, kernel %s: false alarm: %s", c.ID, seed, c.Params, l.name, why)
		}
		ran++
	}
	t.Logf("%d seeded cases, no false alarm", ran)
}
