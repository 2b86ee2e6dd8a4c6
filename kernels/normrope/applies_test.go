package normrope

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// An FP4 mutant's Applies rules out exactly the cases of another store,
// and on those its cache is byte for byte the correct binary32 kernel's:
// the selftest loses nothing by skipping them.
func TestFP4MutantsApplyToFP4CasesOnly(t *testing.T) {
	var fp4 []difftest.Mutant
	for _, m := range Mutants() {
		if strings.HasPrefix(m.Name, "fp4-") {
			if m.Applies == nil {
				t.Fatalf("%s: no Applies", m.Name)
			}
			fp4 = append(fp4, m)
		} else if m.Applies != nil {
			t.Errorf("%s: Applies set on a mutant of every store", m.Name)
		}
	}
	if len(fp4) != 4 {
		t.Fatalf("%d FP4 mutants, want 4", len(fp4))
	}
	specs := loadSuite(t, "quick")
	nFP4 := 0
	for _, spec := range specs {
		c, err := NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
		if err != nil {
			t.Fatal(err)
		}
		isFP4 := c.Params.(Params).Store == StoreFP4
		if isFP4 {
			nFP4++
		}
		good := newCache(c)
		if err := runSim(c, []*difftest.Tensor{good}, sim32{}); err != nil {
			t.Fatal(err)
		}
		for _, m := range fp4 {
			if got := m.Applies(spec); got != isFP4 {
				t.Errorf("%s: %s.Applies = %v, want %v (store %s)", c.ID, m.Name, got, isFP4, c.Params.(Params).Store)
			}
			if isFP4 {
				continue
			}
			out := newCache(c)
			if err := m.Run(c, []*difftest.Tensor{out}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Data, good.Data) {
				t.Errorf("%s: %s differs from the correct kernel on a case it does not apply to", c.ID, m.Name)
			}
		}
	}
	if nFP4 == 0 {
		t.Fatal("the quick suite has no FP4 case")
	}
}
