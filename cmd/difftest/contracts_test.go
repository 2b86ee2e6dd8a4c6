package main

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/cli"
	"github.com/kerneldiff/kerneldiff/difftest"
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
