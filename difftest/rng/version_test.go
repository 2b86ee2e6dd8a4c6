package rng_test

import (
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// TestVersionMatchesReports: the transform version of this package is the
// generator version every report records.
func TestVersionMatchesReports(t *testing.T) {
	if rng.Version != difftest.GeneratorVersion {
		t.Errorf("rng.Version = %d, difftest.GeneratorVersion = %d: bump them together", rng.Version, difftest.GeneratorVersion)
	}
}
