package bridge

import (
	"context"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/fixtures"
)

// BenchmarkDefaultSuiteFakeDevice runs the whole default suite through the
// cuda implementation's worker on the fake device, whose kernels are the
// Go references (fakeTopk, fakeNormRope). What it times is the harness's
// share of a GPU run: drawing the inputs, two runs per case with guards and
// poison, gob over the worker's pipes, the device copies, the reference
// and the checks, plus two reference runs per case standing in for the
// kernel. It bounds from above what scripts/gpu-check's suite step (55 s
// on the GPU machine) spends outside the kernels. Every case must pass.
func BenchmarkDefaultSuiteFakeDevice(b *testing.B) {
	s, err := suite.LoadSuiteFS(fixtures.Suites(), "default")
	if err != nil {
		b.Fatal(err)
	}
	items := s.Items(difftest.Selection{Seed: 1})
	for i := 0; i < b.N; i++ {
		im, err := newImpl(time.Minute, spawnTest("fake-both"), packers())
		if err != nil {
			b.Fatal(err)
		}
		sum, err := difftest.Run(context.Background(), difftest.Config{
			Suite: "default", Items: items, Impl: im, ImplName: "cuda", Timeout: time.Minute,
			OnRecord: func(rec *difftest.Record) error {
				if rec.Failed() {
					b.Errorf("%s: %s: %s", rec.Case, rec.Class, rec.Message)
				}
				return nil
			},
		})
		im.Close()
		if err != nil {
			b.Fatal(err)
		}
		if sum.Passed != len(items) {
			b.Fatalf("%d of %d cases passed", sum.Passed, len(items))
		}
	}
	b.ReportMetric(float64(len(items)), "cases/op")
}
