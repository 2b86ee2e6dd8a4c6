package normrope

import (
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
)

func TestRegistered(t *testing.T) {
	k, ok := difftest.LookupKernel(KernelName)
	if !ok {
		t.Fatalf("%s is not registered", KernelName)
	}
	if k.Name() != KernelName {
		t.Errorf("Name() = %q", k.Name())
	}
	for _, f := range k.Families() {
		if FamilyDoc(f) == "" {
			t.Errorf("family %s has no description", f)
		}
	}
}

// TestCatalog pins the store mutants of docs/mutants.md, in its order,
// then the FP4 ones of docs/contracts/norm_rope_store.md ("FP4 keys").
func TestCatalog(t *testing.T) {
	want := []string{"rope-style-swap", "rope-half-swap", "rope-position-off-by-one", "bf16-truncate",
		"fp8-double-round", "fp8-no-saturate", "ue8m0-floor", "scale-no-floor", "cache-scale-interleaved",
		"write-negative-slot", "skip-tail-token", "hadamard-unscaled",
		"fp4-scale-wrong-block", "fp4-amax-448", "fp4-nibble-swap", "fp4-cache-interleaved"}
	ms := Mutants()
	if len(ms) != len(want) {
		t.Fatalf("%d mutants, want %d", len(ms), len(want))
	}
	for i, m := range ms {
		if m.Name != want[i] || m.Fault == "" || m.Run == nil {
			t.Errorf("mutant %d = %q (fault %q), want %q with a fault line and Run", i, m.Name, m.Fault, want[i])
		}
	}
}

// TestMutantsDifferOnlyByFault: with the fault's trigger absent, a mutant
// writes exactly what the fault-free binary32 model writes. (Gaussian
// keys at P = 1 with no holes and N a multiple of 8 trigger none of the
// layout faults; cache-scale-interleaved coincides with the true layout at
// P = 1; the FP4 faults do not apply to an FP8 store.)
func TestMutantsDifferOnlyByFault(t *testing.T) {
	c := genCase(t, "gaussian", map[string]any{"preset": "v32", "N": int64(16), "P": int64(1), "holes": false})
	base := newCache(c)
	if err := runSim(c, []*difftest.Tensor{base}, sim32{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cache-scale-interleaved", "write-negative-slot", "skip-tail-token", "ue8m0-floor", "bf16-truncate",
		"fp4-scale-wrong-block", "fp4-amax-448", "fp4-nibble-swap", "fp4-cache-interleaved", variantFP4OneStage, variantFP4TiesDownPack} {
		got := newCache(c)
		if err := runSim(c, []*difftest.Tensor{got}, sim32{fault: name}); err != nil {
			t.Fatal(err)
		}
		if string(got.Data) != string(base.Data) {
			t.Errorf("%s: differs from the fault-free model where its fault cannot apply", name)
		}
	}
}
