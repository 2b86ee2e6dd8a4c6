package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
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

// `difftest selftest` on the default suite catches every mutant of every
// registered kernel, each diagnosed as itself, and the reference passes
// every case. Each kernel pins its own catalog (TestCatalog in
// kernels/logits and kernels/normrope, TestMutantsOneFault in
// kernels/topk); docs/mutants.md is their generated table (TestMutantsDoc).
func TestSelftestCatchesEveryMutant(t *testing.T) {
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := cli.Main(context.Background(), []string{"selftest"}, &stdout, &stderr)
	t.Logf("selftest on default: %v\n%s", time.Since(start).Round(time.Millisecond), stdout.String())
	if code != 0 {
		t.Fatalf("selftest exit %d\n%s", code, stderr.String())
	}
	n := 0
	for _, k := range difftest.Kernels() {
		for _, m := range k.Mutants() {
			n++
			if !strings.Contains(stdout.String(), " "+m.Name+" ") {
				t.Errorf("mutant %s missing from the selftest table", m.Name)
			}
		}
	}
	if n == 0 {
		t.Fatal("no kernel registers a mutant")
	}
	verdict := fmt.Sprintf("selftest passed: %d of %d mutants caught, reference passes; %d of %d diagnosed as themselves", n, n, n, n)
	if !strings.Contains(stdout.String(), verdict) {
		t.Errorf("verdict line %q missing:\n%s", verdict, stdout.String())
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
