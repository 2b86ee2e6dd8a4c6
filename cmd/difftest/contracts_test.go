package main

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/cli"
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
