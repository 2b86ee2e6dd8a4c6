package logits

import "testing"

// TestCatalog pins the logits mutants of docs/contracts/indexer_logits.md,
// in its order: the 13 the default suite must catch, then the one only the
// large suite can (a cache beyond 2 GiB).
func TestCatalog(t *testing.T) {
	want := []string{"logits-grid-cap", "logits-scale-interleaved", "logits-one-scale-per-page", "logits-no-relu",
		"logits-weights-ignored", "logits-page-row0", "logits-bf16-dot", "logits-past-length",
		"logits-tight-stride", "logits-fp4-nibble-swap", "logits-fp4-one-scale", "logits-mtp-shared-len", "logits-bf16-truncate",
		"logits-offset-int32"}
	ms := append(Mutants(), LargeMutants()...)
	if len(ms) != len(want) {
		t.Fatalf("%d mutants, want %d", len(ms), len(want))
	}
	for i, m := range ms {
		if m.Name != want[i] || m.Fault == "" || m.Run == nil {
			t.Errorf("mutant %d = %q (fault %q), want %q with a fault line and Run", i, m.Name, m.Fault, want[i])
		}
	}
}
