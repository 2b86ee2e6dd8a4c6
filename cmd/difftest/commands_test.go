package main

import (
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/cli"
)

// TestBridgeCommandsRegistered: the commands that come from bridge are
// registered, and the visible ones give `difftest help` a synopsis with
// their --fatbin flag.
func TestBridgeCommandsRegistered(t *testing.T) {
	for _, name := range []string{"info", "gpu-selftest", "cuda-worker", "study"} {
		c, ok := cli.LookupCommand(name)
		if !ok {
			t.Fatalf("command %s is not registered", name)
		}
		if !c.Hidden && name != "study" && !strings.Contains(c.Usage, "--fatbin FILE") {
			t.Errorf("%s: Usage %q lacks its --fatbin flag", name, c.Usage)
		}
	}
}
