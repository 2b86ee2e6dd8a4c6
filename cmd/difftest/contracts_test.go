package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/cli"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/fixtures"
)

// contractsFile is the Python package's copy of `difftest list contracts
// --json`, committed so that the package works without a difftest binary.
const contractsFile = "../../python/src/kerneldiff/contracts.json"

// TestPythonContractsFresh fails when the Python package's contracts
// differ from what the registered kernels describe: a kernel was added or
// its contract changed without regenerating the file (make generate).
func TestPythonContractsFresh(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := cli.Main(context.Background(), []string{"list", "contracts", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("list contracts --json: exit %d: %s", code, stderr.String())
	}
	got, err := os.ReadFile(contractsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, stdout.Bytes()) {
		t.Fatalf("%s is stale: regenerate it with make generate (difftest list contracts --json > %s)", contractsFile, contractsFile)
	}
	if !bytes.Contains(got, []byte(`"name": "indexer_logits"`)) {
		t.Errorf("%s lacks indexer_logits", contractsFile)
	}
}

// TestEveryKernelDescribesItsContract fails when a registered kernel that
// runs on its own (not a chain) has no contract description: it would be
// missing from contracts.json, so the Python package's exec mode and
// capture checks would not know it.
func TestEveryKernelDescribesItsContract(t *testing.T) {
	described := map[string]bool{}
	for _, c := range difftest.Contracts() {
		described[c.Name] = true
	}
	n := 0
	for _, k := range difftest.Kernels() {
		if _, chain := k.(difftest.Chain); chain {
			continue
		}
		n++
		if !described[k.Name()] {
			t.Errorf("kernel %s is no difftest.ContractDescriber: add its Contract() (kernels/<name>/contract.go), then make generate", k.Name())
		}
	}
	if n < 3 {
		t.Errorf("only %d kernels registered: is kernels/all linked in?", n)
	}
}

// TestListCasesJSON: list cases --json gives one object per case, in suite
// order, with the index, kernel and family a run's records carry for the
// same case (the pytest plugin maps records to items by case id).
func TestListCasesJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := cli.Main(context.Background(), []string{"list", "cases", "--suite", "quick", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("list cases --json: exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	s, err := suite.Resolve("quick", fixtures.Suites())
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(s.Cases) {
		t.Fatalf("%d lines for %d cases", len(lines), len(s.Cases))
	}
	for i, line := range lines {
		var got struct {
			Case, Kernel, Family, File string
			Index                      int
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("line %d %q: %v", i, line, err)
		}
		c := s.Cases[i]
		if got.Case != c.Spec.ID() || got.Index != i || got.Kernel != c.Spec.Kernel || got.Family != c.Spec.Family || got.File != c.File {
			t.Errorf("line %d = %+v, want case %s kernel %s family %s file %s", i, got, c.Spec.ID(), c.Spec.Kernel, c.Spec.Family, c.File)
		}
	}
	stderr.Reset()
	if code := cli.Main(context.Background(), []string{"list", "mutants", "--json"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--json goes with list contracts or list cases") {
		t.Errorf("list mutants --json: exit %d, %q; want 2 and the usage line", code, stderr.String())
	}
}
