package logits

import (
	"fmt"
	"os"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// variant is one binary32 kernel variant of model32.go.
type variant struct {
	name string
	sim  sim32
}

// legitimate lists binary32 kernels that compute the contract correctly
// but differently from one another (docs/contracts/indexer_logits.md: "any order with f32
// accumulation, with or without FMA"): the dot products summed in order,
// in reverse, as a pairwise tree or in four interleaved accumulators;
// FMA on and off; the heads summed in order, in reverse, as a tree or in
// logits.cu's four groups; the scale multiplied at the end, into each
// head's weight, or into the key before the dot products.
var legitimate = []variant{
	{"seq-nofma", sim32{}},
	{"seq-fma", sim32{fma: true}},
	{"rev-nofma-heads-rev", sim32{dims: dimsRev, heads: headsRev}},
	{"tree-heads-tree", sim32{dims: dimsTree, heads: headsTree}},
	{"chunk4-fma-heads-split4-scale-head", sim32{dims: dimsChunk4, fma: true, heads: headsSplit4, scaleAt: scaleHead}},
	{"rev-fma-heads-rev-scale-key", sim32{dims: dimsRev, fma: true, heads: headsRev, scaleAt: scaleKey}},
	{"tree-nofma-heads-split4-scale-key", sim32{dims: dimsTree, heads: headsSplit4, scaleAt: scaleKey}},
}

// falseAlarmConfigs are the configurations the seeded cases rotate
// through: the three stores, page sizes 1, 16, 64, heads 1, 3, 16 and 64,
// clean on and off, every page-table kind, next_n 1, 2 and 3, tight and
// padded pages (FP4 to a multiple of 512 bytes), f32 and bf16 logits.
func falseAlarmConfigs() []map[string]any {
	var out []map[string]any
	kinds := []string{PagesIdentity, PagesPerm, PagesDistinct, PagesHigh}
	i := 0
	for _, store := range []string{StoreFP8, StoreBF16, StoreFP4} {
		for _, P := range []int64{1, 16, 64} {
			for _, H := range []int64{1, 3, 16, 64} {
				for _, clean := range []bool{true, false} {
					cfg := map[string]any{"store": store, "P": P, "H": H, "clean": clean, "pages": kinds[i%len(kinds)]}
					if n := i % 3; n > 0 {
						cfg["next_n"] = int64(n + 1)
					}
					if i%4 == 1 {
						tight := (Params{Store: store, PageSize: int(P)}).PageBytes()
						pitch := tight + 4*(1+i%5)
						if store == StoreFP4 {
							pitch = (tight + 511) / 512 * 512
							if pitch == tight {
								pitch += 512
							}
						}
						cfg["page_stride"] = int64(pitch)
					}
					if i%5 == 2 {
						cfg["logits_dtype"] = LogitsBF16
					}
					out = append(out, cfg)
					i++
				}
			}
		}
	}
	return out
}

// falseAlarmCase draws seeded case i: a family and a configuration in
// rotation, short rows (0 to 300 keys) so that 10^4 cases take minutes.
func falseAlarmCase(t *testing.T, i int, seed uint64) *difftest.Case {
	fams, cfgs := Families(), falseAlarmConfigs()
	fam := fams[i%len(fams)]
	cfg := cfgs[(i/len(fams))%len(cfgs)]
	params := map[string]any{}
	for k, v := range cfg {
		params[k] = v
	}
	if fam == "page-counts" {
		params["counts"] = []any{int64(1 + i%3), int64(2 + i%5)}
	} else {
		st := rng.NewStream(seed, 99, 0)
		params["lengths"] = []any{int64(st.Intn(301)), int64(st.Intn(70)), int64(1 + st.Intn(300))}
	}
	spec := difftest.CaseSpec{Kernel: KernelName, Family: fam, Name: fmt.Sprintf("fa/%s/%d", fam, i%len(cfgs)), Params: params}
	c, err := NewCase(spec, seed, rng.CaseKey(seed, spec.ID()))
	if err != nil {
		t.Fatalf("%s: %v", spec.ID(), err)
	}
	return c
}

// TestNoFalseAlarms runs every legitimate variant over every family and
// configuration once (a few hundred cases): the tolerance absorbs
// rounding.
func TestNoFalseAlarms(t *testing.T) {
	n := len(Families()) * len(falseAlarmConfigs())
	positions := 0
	for i := 0; i < n; i++ {
		c := falseAlarmCase(t, i, uint64(i+1))
		want := reference(t, c)
		for _, v := range legitimate {
			if failed, why := outcome(t, c, want, func(o []*difftest.Tensor) error { return runSim(c, o, v.sim) }); failed {
				t.Errorf("%s seed %d %v, variant %s: false alarm: %s", c.ID, i+1, c.Params, v.name, why)
			}
		}
		positions += countPositions(c)
	}
	t.Logf("%d cases, %d positions × %d variants, no false alarm", n, positions, len(legitimate))
}

// TestNoFalseAlarmsManySeeds (KD_LONG=1) runs 10^4 seeded cases, each run
// by every legitimate variant: docs/contracts/indexer_logits.md's "zero false alarms over
// 10^4 seeds", proven against seven f32 kernels.
func TestNoFalseAlarmsManySeeds(t *testing.T) {
	if os.Getenv("KD_LONG") == "" {
		t.Skip("KD_LONG=1 runs 10^4 seeded cases (minutes)")
	}
	positions := 0
	for i := 0; i < 10000; i++ {
		seed := uint64(1000 + i)
		c := falseAlarmCase(t, i, seed)
		want := reference(t, c)
		for _, v := range legitimate {
			if failed, why := outcome(t, c, want, func(o []*difftest.Tensor) error { return runSim(c, o, v.sim) }); failed {
				t.Errorf("%s seed %d %v, variant %s: false alarm: %s", c.ID, seed, c.Params, v.name, why)
			}
		}
		positions += countPositions(c)
	}
	t.Logf("10000 seeded cases, %d positions × %d variants, no false alarm", positions, len(legitimate))
}

func countPositions(c *difftest.Case) int {
	n := 0
	lens := c.Input(NameSeqLens)
	for b := 0; b < lens.Len(); b++ {
		n += int(lens.I32(b))
	}
	return n
}
