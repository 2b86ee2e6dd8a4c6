package normrope

import (
	"slices"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// TestShrinkEveryMutant (issue 11 item 4): every store mutant's first
// failing default-suite case (seed 1) shrinks, within a minute, to one
// token (the issue asks for one to eight) in one page with one freqs row
// and x_stride 128, still fails with the same class, is still diagnosed
// as the mutant, renders as a suite entry that draws the same inputs, and
// its capture replays to the same verdict (kerneltest.ShrinkEach). The
// table is logged (go test -v -run TestShrinkEveryMutant).
func TestShrinkEveryMutant(t *testing.T) {
	budget := func(difftest.Mutant) triage.ShrinkConfig { return triage.ShrinkConfig{Budget: time.Minute} }
	kerneltest.ShrinkEach(t, Kernel{}, loadSuite(t, "default"), budget, func(t *testing.T, m difftest.Mutant, res *triage.ShrinkResult) {
		s := res.Shrunk
		p, _ := paramsOf(s)
		if x, f := s.Input(NameX), s.Input(NameFreqs); x.Shape[0] != 1 || x.Shape[1] != Dim || f.Shape[0] != 1 || p.NumPages != 1 || res.Note != "" {
			t.Errorf("shrunk to %s (%s); want one token, x_stride 128, max_pos 1, one page", Kernel{}.SizeOf(s), res.Note)
		}
		if !slices.Contains(res.FinalDiagnosis, m.Name) {
			t.Errorf("diagnosis %v → %v, want %s", res.Diagnosis, res.FinalDiagnosis, m.Name)
		}
	})
}
