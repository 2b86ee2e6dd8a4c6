package normrope

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/paramtest"
	"github.com/kerneldiff/kerneldiff/internal/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/digests.golden")

// digestCases are generated cases whose input SHA-256 digests are pinned:
// the same seed and case id must give the same bytes on every run, host
// and build (docs/running.md). The v32 "positions" case pins the whole
// 163840-row YaRN table.
var digestCases = []difftest.CaseSpec{
	{Kernel: KernelName, Family: "gaussian", Name: "digest/gaussian/v4/N=9/P=64", Params: map[string]any{"preset": "v4", "N": int64(9), "P": int64(64)}},
	{Kernel: KernelName, Family: "slots", Name: "digest/slots/v32/N=7/P=1", Params: map[string]any{"preset": "v32", "N": int64(7), "P": int64(1)}},
	{Kernel: KernelName, Family: "e4m3-max", Name: "digest/e4m3-max/ue8m0/N=8", Params: map[string]any{"preset": "v4", "hadamard": false, "scale_fmt": "ue8m0", "N": int64(8)}},
	{Kernel: KernelName, Family: "nonfinite", Name: "digest/nonfinite/v4-bf16/N=16", Params: map[string]any{"preset": "v4-bf16", "N": int64(16), "x_stride": int64(136)}},
	{Kernel: KernelName, Family: "positions", Name: "digest/positions/v32/N=3", Params: map[string]any{"preset": "v32", "N": int64(3)}},
	{Kernel: KernelName, Family: "large-mean", Name: "digest/large-mean/v32/N=5/P=4", Params: map[string]any{"preset": "v32", "N": int64(5), "P": int64(4)}},
}

func TestInputDigests(t *testing.T) {
	golden.Check(t, filepath.Join("testdata", "digests.golden"), paramtest.InputDigests(t, Kernel{}, digestCases), *update,
		"a generator change bumps difftest.GeneratorVersion and rewrites it with -update")
}
