package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// A case sized over --max-memory is refused by name, with its size, its
// largest tensors and the budget, before its inputs are drawn (the
// documented maximum N with the default x_stride once ran 52 s and died in
// Go's allocator).
func TestMaxMemoryRefusesACaseByName(t *testing.T) {
	start := time.Now()
	code, _, stderr := run(t, "run", "--impl", "reference", "--suite", "testdata/normrope-n96.toml",
		"--param", "N=4194304", "--max-memory", "1G")
	if code != difftest.ExitUsage {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, difftest.ExitUsage, stderr)
	}
	for _, want := range []string{
		"case norm_rope_store/v4/N=96/P=64: needs about 4.7 GiB",
		"x 1 GiB (input)", "cache 594 MiB (output)",
		"over the memory budget of 1 GiB", "--max-memory",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the refusal took %v: the case was drawn first", d)
	}
	// Under the budget the same case runs.
	code, _, stderr = run(t, "run", "--impl", "reference", "--suite", "testdata/normrope-n96.toml",
		"--max-memory", "64M")
	if code != difftest.ExitPass {
		t.Errorf("the quick case under a 64 MiB budget: exit %d, stderr:\n%s", code, stderr)
	}
}

func TestMaxMemoryFlag(t *testing.T) {
	for _, bad := range []string{"-1G", "8X", "lots"} {
		code, _, stderr := run(t, "run", "--impl", "reference", "--suite", "testdata/normrope-n96.toml", "--max-memory", bad)
		if code != difftest.ExitUsage || !strings.Contains(stderr, "max-memory") {
			t.Errorf("--max-memory %s: exit %d, stderr %q", bad, code, stderr)
		}
	}
	if m := difftest.MachineMemory(); m > 0 && difftest.DefaultMaxMemory() != m/4*3 {
		t.Errorf("default budget %d, want 3/4 of %d", difftest.DefaultMaxMemory(), m)
	}
}
