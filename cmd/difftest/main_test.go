package main

import (
	"bytes"
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/cli"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/report"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/fixtures"
)

// The reference must pass seeds 1–200 of the quick suite with zero
// failures: any failure is a false alarm of a comparator or a generator
// bug, since the reference is what the comparators compare against.
func TestQuickReferenceSeeds1To200(t *testing.T) {
	quick, err := suite.LoadSuiteFS(fixtures.Suites(), "quick")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "quick.jsonl")
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := cli.Main(context.Background(), []string{"run", "--impl", "reference", "--suite", "quick", "--seed", "1", "--repeat", "200", "--json", out}, &stdout, &stderr)
	t.Logf("quick, seeds 1–200: %d cases in %v", 200*len(quick.Cases), time.Since(start).Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, tail(stdout.String(), 40), stderr.String())
	}
	rep, err := report.ReadJSONLFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary == nil || rep.Summary.Failed != 0 || len(rep.Records) != 200*len(quick.Cases) {
		t.Fatalf("summary %+v, %d records, want %d passes", rep.Summary, len(rep.Records), 200*len(quick.Cases))
	}
	kernels := map[string]bool{}
	for _, r := range rep.Records {
		kernels[r.Kernel] = true
	}
	for _, k := range difftest.Kernels() {
		if !kernels[k.Name()] {
			t.Errorf("quick has no case of kernel %s", k.Name())
		}
	}
}

// The catalog of docs/mutants.md and docs/contracts/indexer_logits.md (logits-offset-int32, caught by the
// large suite only, is not among the mutants the default suite must catch).
var catalog = []string{
	"topk-capacity-4096", "topk-coarse-only", "topk-tie-hole", "topk-flt-max-sentinel", "topk-nan-garbage",
	"topk-past-length", "topk-length-minus-one", "topk-dup-on-plateau", "topk-page-row0", "topk-short-row-order",
	"rope-style-swap", "rope-half-swap", "rope-position-off-by-one", "bf16-truncate", "fp8-double-round",
	"fp8-no-saturate", "ue8m0-floor", "scale-no-floor", "cache-scale-interleaved", "write-negative-slot",
	"skip-tail-token", "hadamard-unscaled",
	"fp4-scale-wrong-block", "fp4-amax-448", "fp4-nibble-swap", "fp4-cache-interleaved",
	"topk16-raw-bits", "topk16-one-pass", "topk16-raw-low-digit", "topk16-f16-bf16-key",
	"logits-grid-cap", "logits-scale-interleaved", "logits-one-scale-per-page", "logits-no-relu",
	"logits-weights-ignored", "logits-page-row0", "logits-bf16-dot", "logits-past-length",
	"logits-tight-stride", "logits-fp4-nibble-swap", "logits-fp4-one-scale", "logits-mtp-shared-len", "logits-bf16-truncate",
}

// `difftest selftest` on the default suite catches all 43 mutants and the
// reference passes every case.
func TestSelftestCatchesEveryMutant(t *testing.T) {
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := cli.Main(context.Background(), []string{"selftest"}, &stdout, &stderr)
	t.Logf("selftest on default: %v\n%s", time.Since(start).Round(time.Millisecond), stdout.String())
	if code != 0 {
		t.Fatalf("selftest exit %d\n%s", code, stderr.String())
	}
	var names []string
	for _, k := range difftest.Kernels() {
		for _, m := range k.Mutants() {
			names = append(names, m.Name)
			if !strings.Contains(stdout.String(), " "+m.Name+" ") {
				t.Errorf("mutant %s missing from the selftest table", m.Name)
			}
		}
	}
	want := append([]string(nil), catalog...)
	sort.Strings(names)
	sort.Strings(want)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("registered mutants\n%v\nwant the catalog of docs/mutants.md and docs/contracts/indexer_logits.md\n%v", names, want)
	}
	if !strings.Contains(stdout.String(), "selftest passed: 43 of 43 mutants caught, reference passes") {
		t.Errorf("verdict line missing:\n%s", stdout.String())
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
