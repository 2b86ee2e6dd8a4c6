package rng_test

import (
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// TestVersionMatchesReports: the generator version every report records
// covers this package's transforms: a bump of rng.Version bumps it too
// (it also moves for kernel generators alone: 2 changed only the YaRN
// tables, at rng.Version 1).
func TestVersionMatchesReports(t *testing.T) {
	const generatorAtThisRngVersion = 2 // difftest.GeneratorVersion when rng.Version last changed, or later
	if rng.Version != 1 || difftest.GeneratorVersion < generatorAtThisRngVersion {
		t.Errorf("rng.Version = %d, difftest.GeneratorVersion = %d: a change of rng's transforms bumps both (and this test's record of them)", rng.Version, difftest.GeneratorVersion)
	}
}
