package topk

import (
	"fmt"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
	"github.com/kerneldiff/kerneldiff/difftest/paramtest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// loadSuite reads this kernel's f32 suite file of one suite, topk.toml
// (paramtest.SuiteSpecs).
func loadSuite(t *testing.T, name string) []difftest.CaseSpec {
	t.Helper()
	return loadSuiteFiles(t, name, "topk.toml")
}

// loadSuiteFiles reads the named suite files of one suite, in order
// (paramtest.SuiteSpecs: each file holds only this kernel's cases).
func loadSuiteFiles(t *testing.T, name string, files ...string) []difftest.CaseSpec {
	t.Helper()
	var specs []difftest.CaseSpec
	for _, file := range files {
		specs = append(specs, paramtest.SuiteSpecs(t, name, file, KernelName)...)
	}
	return specs
}

// TestSuitesCatchMutants drives each suite the way the harness does
// (NewCase → Validate → Reference into poisoned outputs → canary → Check,
// kerneltest.CatchMutants) and requires: the reference passes every case
// and is equivalent to a second run of itself; every mutant fails at
// least one case of default AND of quick.
func TestSuitesCatchMutants(t *testing.T) {
	for _, suite := range []string{"quick", "default"} {
		t.Run(suite, func(t *testing.T) {
			if suite == "default" && testing.Short() {
				t.Skip("default suite in -short mode")
			}
			specs := loadSuiteFiles(t, suite, "topk.toml", "v41_topk16.toml")
			kerneltest.CatchMutants(t, Kernel{}, suite, specs, 1, Mutants(), nil)
		})
	}
}

// TestQuickSeeds: the reference passes quick for several seeds, and every
// mutant is still caught at another seed (the suites do not depend on one
// lucky draw).
func TestQuickSeeds(t *testing.T) {
	specs := loadSuiteFiles(t, "quick", "topk.toml", "v41_topk16.toml")
	for seed := uint64(2); seed <= 4; seed++ {
		kerneltest.CatchMutants(t, Kernel{}, fmt.Sprintf("quick (seed %d)", seed), specs, seed, Mutants(), nil)
	}
}

// TestMutantsOneFault: each mutant is exact where its fault cannot bite
// and wrong where it does.
func TestMutantsOneFault(t *testing.T) {
	p := params64
	type shape struct {
		family string
		params map[string]any
	}
	bf16, f16 := map[string]any{"dtype": ScoreBF16}, map[string]any{"dtype": ScoreF16}
	tests := []struct {
		mutant       string
		passes, fail shape
	}{
		{"topk-capacity-4096", shape{"gaussian", p(nil, 3000, 10)}, shape{"lowcontrast", p(nil, 16384)}},
		{"topk-coarse-only", shape{"equal", p(nil, 500, 64)}, shape{"lowcontrast", p(nil, 16384)}},
		{"topk-tie-hole", shape{"gaussian", p(nil, 500, 3, 64)}, shape{"straddle", p(nil, 500)}},
		{"topk-flt-max-sentinel", shape{"gaussian", p(nil, 500, 3)}, shape{"masked", p(nil, 500)}},
		{"topk-nan-garbage", shape{"masked", p(nil, 500, 3)}, shape{"specials", p(nil, 500)}},
		{"topk-past-length", shape{"gaussian", p(nil, 500)}, shape{"gaussian", p(nil, 500, 100)}},
		{"topk-length-minus-one", shape{"masked", p(map[string]any{"finite": int64(10)}, 500)}, shape{"gaussian", p(nil, 5)}},
		{"topk-dup-on-plateau", shape{"gaussian", p(nil, 500, 3)}, shape{"straddle", p(nil, 500)}},
		{"topk-page-row0", shape{"gaussian", p(map[string]any{"pages": "identity"}, 500, 300, 3)}, shape{"gaussian", p(nil, 500, 300)}},
		{"topk-short-row-order", shape{"gaussian", p(nil, 500, 65, 1)}, shape{"gaussian", p(nil, 500, 7)}},
		// The page-translation mutants are exact where their wrong
		// translation coincides with the right one: no picks (L = 0),
		// 64-token pages, pages of one token (offset 0).
		{"topk-page-off-by-one", shape{"gaussian", p(nil, 0, 0)}, shape{"gaussian", p(nil, 500)}},
		{"topk-page-size-64", shape{"gaussian", p(map[string]any{"P": int64(64)}, 500, 300)}, shape{"gaussian", p(nil, 500)}},
		{"topk-no-offset", shape{"gaussian", p(map[string]any{"P": int64(1)}, 500, 300)}, shape{"gaussian", p(nil, 500)}},
		// The 16-bit mutants are exact on f32 scores and on rows their
		// key cannot mis-rank.
		{"topk16-raw-bits", shape{"specials", p(nil, 500, 3)}, shape{"gaussian", p(bf16, 500)}},
		{"topk16-one-pass", shape{"gaussian", p(nil, 500, 70)}, shape{"oneexp", p(bf16, 500)}},
		{"topk16-raw-low-digit", shape{"relu", p(bf16, 500)}, shape{"oneexp", p(f16, 500, 500, 500, 500, 500, 500, 500, 500)}},
		{"topk16-f16-bf16-key", shape{"oneexp", p(bf16, 500)}, shape{"oneexp", p(f16, 500)}},
	}
	byName := map[string]difftest.Mutant{}
	for _, m := range Mutants() {
		byName[m.Name] = m
	}
	if len(byName) != len(tests) {
		t.Fatalf("%d mutants, %d table rows", len(byName), len(tests))
	}
	for _, tt := range tests {
		m, ok := byName[tt.mutant]
		if !ok {
			t.Fatalf("no mutant %s", tt.mutant)
		}
		for _, sh := range []struct {
			s        shape
			wantFail bool
		}{{tt.passes, false}, {tt.fail, true}} {
			c := gen(t, sh.s.family, tt.mutant+"-"+sh.s.family, sh.s.params)
			want := runRef(t, c)
			outs := newOuts(c)
			if err := m.Run(c, outs); err != nil {
				t.Fatal(err)
			}
			if r := Check(c, outs, want); r.Failed() != sh.wantFail {
				t.Errorf("%s on %s %v: failed=%v (%s), want failed=%v", tt.mutant, sh.s.family, sh.s.params["lengths"], r.Failed(), r.Message, sh.wantFail)
			}
		}
	}
}

// servingShapes reports what a case's seq_lens hold, as serving engines
// batch rows (docs/contracts/topk_transform.md): the longest stretch of neighbouring rows of
// one length (a decode batch), and the longest stretch of neighbouring
// rows of consecutive lengths L0+1, L0+2, … that all exceed K (a prefill
// chunk with L0 ≥ K).
func servingShapes(c *difftest.Case) (decode, prefill int) {
	lens := seqLens(c)
	K := c.Params.(*Params).K
	same, step := 1, 1
	if len(lens) > 0 && lens[0] > K {
		prefill = 1
	}
	for b := 1; b < len(lens); b++ {
		if lens[b] == lens[b-1] {
			same++
		} else {
			same = 1
		}
		switch {
		case lens[b] == lens[b-1]+1 && lens[b-1] > K:
			step++
		case lens[b] > K:
			step = 1
		default:
			step = 0
		}
		decode, prefill = max(decode, same), max(prefill, step)
	}
	return decode, prefill
}

// The default suite holds, for every entry point K, a decode batch (≥ 32
// neighbouring rows of one length), a prefill chunk (≥ 32 rows of
// consecutive lengths above K) and a case with both; quick holds one case
// with both. Counted on the drawn seq_lens, not on the suite text.
func TestSuitesServingShapes(t *testing.T) {
	for _, suite := range []string{"default", "quick"} {
		if suite == "default" && testing.Short() {
			continue
		}
		type has struct{ decode, prefill, mix bool }
		byK := map[int]*has{}
		for _, spec := range loadSuite(t, suite) {
			c, err := NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
			if err != nil {
				t.Fatal(err)
			}
			K := c.Params.(*Params).K
			if byK[K] == nil {
				byK[K] = &has{}
			}
			d, p := servingShapes(c)
			h := byK[K]
			h.decode = h.decode || d >= 32
			h.prefill = h.prefill || p >= 32
			h.mix = h.mix || (d >= 4 && p >= 4)
		}
		if suite == "quick" {
			mix := false
			for _, h := range byK {
				mix = mix || h.mix
			}
			if !mix {
				t.Errorf("quick: no case with both a decode run and a prefill chunk")
			}
			continue
		}
		for _, K := range EntryPointKs {
			if h := byK[K]; h == nil || !h.decode || !h.prefill || !h.mix {
				t.Errorf("default, K = %d: decode batch, prefill chunk, mix = %+v; want all three", K, h)
			}
		}
	}
}
