package logits

import (
	"context"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/paramtest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// BenchmarkDiagnoseLargest diagnoses logits-bf16-dot's output on the
// default suite's largest logits cases, which must finish within the
// diagnosis budget (triage.DefaultDiagnoseBudget, 10 s per failing case
// on a 2-core machine): most candidates are told apart by
// ScreenCandidate from a few thousand positions, and only the matching
// one runs in full.
func BenchmarkDiagnoseLargest(b *testing.B) {
	largest := map[string]bool{
		"indexer_logits/long/fp8/L=262144/H=1":               true,
		"indexer_logits/pages/fp8/P=64/counts=2047-2049/H=1": true,
		"indexer_logits/decode/fp8/B=32/L=2048/H=16":         true,
		"indexer_logits/fp4/P=64/H=2/L=65536/tight":          true,
		"indexer_logits/bf16out/fp8/P=64/H=64/stride=8452":   true,
	}
	var mut difftest.Mutant
	for _, m := range Mutants() {
		if m.Name == "logits-bf16-dot" {
			mut = m
		}
	}
	for _, spec := range paramtest.SuiteSpecs(b, "default", "logits.toml", KernelName) {
		if !largest[spec.ID()] {
			continue
		}
		c, err := NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
		if err != nil {
			b.Fatal(err)
		}
		want := difftest.PoisonedTensors(c, difftest.PoisonA)
		got := difftest.PoisonedTensors(c, difftest.PoisonA)
		if err := Compute(c, want[0]); err != nil {
			b.Fatal(err)
		}
		if err := mut.Run(c, got); err != nil {
			b.Fatal(err)
		}
		b.Run(spec.Name, func(b *testing.B) {
			for b.Loop() {
				d := triage.Diagnose(context.Background(), Kernel{}, c, got, want, 0)
				if len(d.Matches) == 0 {
					b.Fatalf("no diagnosis")
				}
			}
		})
	}
}
