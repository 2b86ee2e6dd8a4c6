package topk

import (
	"slices"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// shrinkBounds are the sizes TestShrinkEveryMutant asserts, with K = 512
// (the smallest entry point): one row (two for topk-page-row0, whose
// fault needs a row other than row 0), L ≤ 2K + 1 = 1025 (4609 = 4096 +
// K + 1 for topk-capacity-4096, whose fault needs more than 4096 scores in
// the threshold bin), at most one past-length fill position per row
// (topk-past-length needs one), one page per row.
const (
	shrinkMaxL         = 2*512 + 1
	shrinkMaxLCapacity = 4096 + 512 + 1
)

// shrinkTestBudget is each mutant's shrink budget in the test, which stops
// each shrink as soon as its bounds hold (ShrinkConfig.Enough): on a
// 2-core machine the slowest, topk-coarse-only, needs about 5 s.
const shrinkTestBudget = time.Minute

// TestShrinkEveryMutant (issue 11 item 4): every top-k mutant's first
// failing default-suite case (seed 1; its f32 file, then the 16-bit one)
// shrinks within shrinkBounds, still fails with the same class, is still
// diagnosed as the mutant, and its capture replays to the same verdict
// (kerneltest.ShrinkEach). The table of the note is logged (go test -v
// -run TestShrinkEveryMutant).
func TestShrinkEveryMutant(t *testing.T) {
	if testing.Short() {
		t.Skip("shrinks ten cases of up to 650,000 scores")
	}
	bounds := func(m difftest.Mutant) (rows, maxL int) {
		rows, maxL = 1, shrinkMaxL
		if m.Name == "topk-page-row0" {
			rows = 2
		}
		if m.Name == "topk-capacity-4096" {
			maxL = shrinkMaxLCapacity
		}
		return rows, maxL
	}
	within := func(m difftest.Mutant, s *difftest.Case) bool {
		rows, maxL := bounds(m)
		p := s.Params.(*Params)
		lens := s.Input(TensorSeqLens)
		longest := 0
		for b := 0; b < p.Batch; b++ {
			longest = max(longest, int(lens.I32(b)))
		}
		return p.Batch <= rows && longest <= maxL && p.Stride <= longest+1 && p.MaxPages == 1 && p.K == 512
	}
	cfg := func(m difftest.Mutant) triage.ShrinkConfig {
		return triage.ShrinkConfig{Budget: shrinkTestBudget, Enough: func(s *difftest.Case) bool { return within(m, s) }}
	}
	specs := loadSuiteFiles(t, "default", "topk.toml", "v41_topk16.toml")
	kerneltest.ShrinkEach(t, Kernel{}, specs, cfg, func(t *testing.T, m difftest.Mutant, res *triage.ShrinkResult) {
		if !within(m, res.Shrunk) {
			rows, maxL := bounds(m)
			t.Errorf("shrunk to %s (%s); want ≤ %d rows, L ≤ %d, stride ≤ L + 1, one page, K 512", res.ShrunkSize, res.Note, rows, maxL)
		}
		if !slices.Contains(res.FinalDiagnosis, m.Name) || !slices.Contains(res.Diagnosis, m.Name) {
			t.Errorf("diagnosis %v → %v, want %s in both", res.Diagnosis, res.FinalDiagnosis, m.Name)
		}
	})
}

// TestShrinkReductions checks single proposals on a hand case: row drops,
// a deletion, the rank map (order and specials kept), dense page ids and
// one page per row each build a valid case of the stated shape.
func TestShrinkReductions(t *testing.T) {
	rows := [][]uint32{
		{fb(3.5), fb(-2), negZ, posNaN, fb(3.5), fb(100), negInf, fb(-7)},
		{fb(1), fb(2)},
	}
	c := handCase(t, 4, 2, true, rows, []int32{7, 2}, [][]int32{{40, 41, 42, 43}, {90}})
	byWhat := map[string]triage.Reduction{}
	for _, r := range (Kernel{}).Reductions(c) {
		byWhat[r.What] = r
	}
	build := func(what string) *difftest.Case {
		t.Helper()
		r, ok := byWhat[what]
		if !ok {
			t.Fatalf("no reduction %q", what)
		}
		n, err := r.Build()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := Validate(n); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return n
	}
	if n := build("drop rows 1 of 2"); n.Params.(*Params).Batch != 1 || n.Input(TensorSeqLens).I32(0) != 7 {
		t.Errorf("drop rows 1: %s", Kernel{}.SizeOf(n))
	}
	if n := build("row 0: delete positions 0–3"); n.Input(TensorSeqLens).I32(0) != 3 || n.Input(TensorScores).U32(0) != fb(3.5) {
		t.Errorf("delete 0–3: %s, first score 0x%08x", Kernel{}.SizeOf(n), n.Input(TensorScores).U32(0))
	}
	n := build("row 0: scores → small integers in the same order")
	// −7 is past L = 7: fill, not renumbered.
	want := []uint32{fb(1), fb(-1), negZ, posNaN, fb(1), fb(2), negInf, fb(-7)}
	got := make([]uint32, 8)
	for i := range got {
		got[i] = n.Input(TensorScores).U32(i)
	}
	if !slices.Equal(got, want) {
		t.Errorf("small integers: %08x, want %08x", got, want)
	}
	n = build("page ids → 0, 1, 2, … in the same order")
	if tb := n.Input(TensorPageTable); tb.I32(0) != 0 || tb.I32(3) != 3 || tb.I32(4) != 4 || tb.I32(5) != -1 {
		t.Errorf("dense pages: %v", tb.Data)
	}
	n = build("one page per row (P 2 → 8), row b on page b")
	if p := n.Params.(*Params); p.P != 8 || p.MaxPages != 1 || n.Input(TensorPageTable).I32(1) != 1 {
		t.Errorf("one page: %s", Kernel{}.SizeOf(n))
	}
}
