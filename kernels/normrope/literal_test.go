package normrope

import (
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
)

// TestSuiteEntryRoundTrip: a generated case with holes, NaN row padding
// and a layer-norm configuration renders as a literal entry that parses,
// passes CheckSpec and draws the same input bytes (triage.SuiteEntry
// checks the digest).
func TestSuiteEntryRoundTrip(t *testing.T) {
	c := genCase(t, "gaussian", map[string]any{"preset": "v32", "N": int64(5), "P": int64(2), "x_stride": int64(130), "max_pos": int64(7)})
	kerneltest.SuiteEntry(t, Kernel{}, c, "g-shrunk",
		`family = "literal"`, `norm = "layer"`, "eps = 1e-06\n", "N = 5\n", "x_stride = 130\n", "max_pos = 7\n", "7fc0*2")
}

// TestLiteralErrors: malformed lists, lists of the wrong length and
// inputs that break the contract are errors naming the param or the
// rule, from NewCase and CheckSpec alike.
func TestLiteralErrors(t *testing.T) {
	for _, tc := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"N": int64(2), "out_loc": "0"}, `param "out_loc": holds 1 values, the case needs 2`},
		{map[string]any{"N": int64(1), "x": "3f8*128"}, `param "x": token "3f8*128": want 4 hex digits`},
		{map[string]any{"N": int64(2), "out_loc": "3 3"}, "the inputs break the contract"},
		{map[string]any{"N": int64(1), "weight": "7fc00000*128"}, "weight[0]: must be finite"},
		{map[string]any{"N": int64(1), "positions": "1*99999999999"}, "more than 1 values"},
	} {
		spec := difftest.CaseSpec{Kernel: KernelName, Family: FamilyLiteral, Name: "l", Params: tc.params}
		if err := kerneltest.CheckSpecAgrees(t, Kernel{}, spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want %q from NewCase and CheckSpec", tc.params, err, tc.want)
		}
	}
}
