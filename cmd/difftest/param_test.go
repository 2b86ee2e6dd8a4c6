package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/cli"
)

// TestRunParamAccumBits: the mutant logits-bf16-dot (each dot product
// rounded to bf16, as SGLang's PyTorch logits fallbacks do) fails the
// quick suite's indexer_logits cases under the default accum_bits 24, and
// the diagnosis says it passes as a coarser precision ("passes as
// accum_bits=…: dot products rounded to …"), with a replay line that
// repeats no --param; declared with --param accum_bits=8 it passes them
// all.
func TestRunParamAccumBits(t *testing.T) {
	run := func(args ...string) (int, string) {
		var o, e bytes.Buffer
		code := cli.Main(context.Background(), args, &o, &e)
		return code, o.String() + e.String()
	}
	base := []string{"run", "--suite", "../../fixtures/suites/quick/logits.toml", "--run", "indexer_logits", "--impl", "mutant:logits-bf16-dot"}
	code, out := run(append(base, "--diagnose")...)
	if code != 1 || !strings.Contains(out, "passes as accum_bits=") || !strings.Contains(out, ": dot products rounded to ") || strings.Contains(out, "--param") {
		t.Errorf("default precision: exit %d\n%s", code, out)
	}
	if code, out := run(append(base, "--param", "accum_bits=8")...); code != 0 {
		t.Errorf("--param accum_bits=8: exit %d\n%s", code, out)
	}
}
