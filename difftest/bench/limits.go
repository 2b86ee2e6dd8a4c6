package bench

import (
	"fmt"
	"github.com/kerneldiff/kerneldiff/difftest"
)

// MaxBenchRuns bounds BenchConfig's Runs and Warmup (bench --runs,
// --warmup): far beyond any useful count, and far from the overflow of
// the budgets and counts derived from them (a --runs of 2^63−1 used to
// wrap to zero runs and report 0.000 µs).
const MaxBenchRuns = 1_000_000

// CheckResults refuses bench results a report could not show: a
// null result, a result without a case id, or without one or two builds (the
// implementation, the baseline), or with a negative time.
func CheckResults(rs []*BenchResult) error {
	for i, r := range rs {
		if r == nil {
			return fmt.Errorf("result %d is null", i)
		}
		if r.Case == "" {
			return fmt.Errorf("result %d has no case id", i)
		}
		if len(r.Builds) < 1 || len(r.Builds) > 2 {
			return fmt.Errorf("result %d (%s) has %d builds, want 1 or 2 (the implementation, the baseline)", i, difftest.SafeLine(r.Case), len(r.Builds))
		}
		for _, b := range r.Builds {
			for _, ns := range b.TimesNS {
				if ns < 0 {
					return fmt.Errorf("result %d (%s): build %s has a negative time %d ns", i, difftest.SafeLine(r.Case), difftest.SafeLine(b.Name), ns)
				}
			}
		}
	}
	return nil
}
