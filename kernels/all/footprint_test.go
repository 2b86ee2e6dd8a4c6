package all_test

import (
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/fixtures"
)

// Every kernel sizes its cases (difftest.Footprinter), and on every case
// of the quick suite its Footprint names each input and output the case
// draws with that tensor's exact size, in contract order (the pipeline's
// inputs, which include small ones it does not list, at least those it
// lists).
func TestFootprintMatchesTheDrawnCase(t *testing.T) {
	s, err := suite.LoadSuiteFS(fixtures.Suites(), "quick")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, sc := range s.Cases {
		k, ok := difftest.LookupKernel(sc.Spec.Kernel)
		if !ok {
			t.Fatalf("%s: no kernel", sc.Spec.ID())
		}
		fp, ok := k.(difftest.Footprinter)
		if !ok {
			t.Errorf("%s does not size its cases (difftest.Footprinter)", k.Name())
			continue
		}
		f, err := fp.Footprint(sc.Spec)
		if err != nil {
			t.Errorf("%s: Footprint: %v", sc.Spec.ID(), err)
			continue
		}
		c, err := k.NewCase(sc.Spec, 1, rng.CaseKey(1, sc.Spec.ID()))
		if err != nil {
			t.Fatalf("%s: %v", sc.Spec.ID(), err)
		}
		seen[k.Name()]++
		byName := map[string]int64{}
		for _, in := range c.Inputs {
			byName[in.Name] = int64(len(in.Data))
		}
		if k.Name() != "pipeline" && len(f.Inputs) != len(c.Inputs) {
			t.Errorf("%s: Footprint lists %d inputs, the case has %d", sc.Spec.ID(), len(f.Inputs), len(c.Inputs))
		}
		for _, s := range f.Inputs {
			if got, ok := byName[s.Name]; !ok || got != s.V {
				t.Errorf("%s: Footprint input %s = %d bytes, the case's is %d (present %v)", sc.Spec.ID(), s.Name, s.V, got, ok)
			}
		}
		if len(f.Outputs) != len(c.Outputs) {
			t.Errorf("%s: Footprint lists %d outputs, the case has %d", sc.Spec.ID(), len(f.Outputs), len(c.Outputs))
			continue
		}
		for i, o := range c.Outputs {
			if f.Outputs[i].Name != o.Name || f.Outputs[i].V != int64(o.Bytes()) {
				t.Errorf("%s: Footprint output %d = %s %d bytes, the case's %s is %d", sc.Spec.ID(), i, f.Outputs[i].Name, f.Outputs[i].V, o.Name, o.Bytes())
			}
		}
	}
	for _, name := range []string{"topk_transform", "norm_rope_store", "indexer_logits", "pipeline"} {
		if seen[name] == 0 {
			t.Errorf("the quick suite has no %s case", name)
		}
	}
}
