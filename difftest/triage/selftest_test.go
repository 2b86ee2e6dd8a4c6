package triage

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
)

func TestSelftestFake(t *testing.T) {
	s := fakekernel.Suite()
	rows, ok, err := Selftest(context.Background(), SelftestConfig{Suite: s, Seed: 1, Parallel: 2, Kernels: []string{fakekernel.Name}})
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		var b bytes.Buffer
		WriteSelftestTable(&b, rows, ok)
		t.Fatalf("selftest failed:\n%s", b.String())
	}
	want := map[string]difftest.Class{"reference": difftest.Pass, "fake-off-by-one": difftest.Mismatch, "fake-skip-last": difftest.Unwritten, "fake-write-negative": difftest.Guard}
	for _, r := range rows {
		if r.Class != want[r.Mutant] {
			t.Errorf("%s caught by %q, want %q", r.Mutant, r.Class, want[r.Mutant])
		}
		if r.Mutant != "reference" && (r.Cases != 1 || r.Case != "fake_scatter/ramp-8") {
			t.Errorf("%s: %d cases, first failing %s; want it to stop at its first caught case", r.Mutant, r.Cases, r.Case)
		}
	}
	// A suite without cases of the kernel leaves every mutant uncaught.
	rows, ok, err = Selftest(context.Background(), SelftestConfig{Suite: &difftest.Suite{}, Seed: 1, Kernels: []string{fakekernel.Name}})
	if err != nil || ok {
		t.Errorf("empty suite: ok=%v err=%v", ok, err)
	}
	var b bytes.Buffer
	WriteSelftestTable(&b, rows, ok)
	if !strings.Contains(b.String(), "mutant fake-off-by-one (the last element is one too large) passed all 0 cases of fake_scatter") || !strings.Contains(b.String(), "selftest FAILED: 0 of 3 mutants caught, reference passes") {
		t.Errorf("table:\n%s", b.String())
	}
}
