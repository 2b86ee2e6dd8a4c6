package normrope

import (
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
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

// TestDeclaredIntermediateKept: a declared intermediate precision reaches
// every form a failing case is reproduced or reported from (the bound
// follows it, so losing it would change the verdict of the reproduction):
// the suite entry a shrink writes carries the line and draws the case
// back with the same Params, a capture's params JSON (which replay and the
// JSON Lines report carry) holds it and FromTensors reads it back. The
// inputs digest that triage.SuiteEntry checks does not cover params.
// Params print with %#v here: Params.String (a one-line summary for
// messages; its one use outside tests is Check's preset-label error, and
// MatchPreset ignores intermediate) leaves intermediate out.
func TestDeclaredIntermediateKept(t *testing.T) {
	for _, im := range []string{IntermediateBF16, IntermediateBF16Once} {
		c := genCase(t, "gaussian", map[string]any{"preset": "v32", "N": int64(3), "P": int64(2), "max_pos": int64(7), "intermediate": im})
		p := c.Params.(Params)
		if p.Intermediate != im {
			t.Fatalf("intermediate %s drawn as %q", im, p.Intermediate)
		}
		entry := kerneltest.SuiteEntry(t, Kernel{}, c, "kept", "\nintermediate = \""+im+"\"\n")
		cases, err := suite.ParseSuite("kept.toml", []byte(entry))
		if err != nil || len(cases) != 1 {
			t.Fatalf("ParseSuite: %d cases, %v", len(cases), err)
		}
		_, back, err := difftest.GenerateCase(difftest.Item{Seed: c.Seed, SuiteCase: cases[0]})
		if err != nil {
			t.Fatal(err)
		}
		if got := back.Params.(Params); got != p {
			t.Errorf("intermediate %s: the suite entry draws params %#v, want %#v", im, got, p)
		}
		raw, _ := kerneltest.Captured(t, c)
		if want := `"intermediate":"` + im + `"`; !strings.Contains(string(raw), want) {
			t.Errorf("intermediate %s: capture params %s have no %s", im, raw, want)
		}
		if got := kerneltest.RoundTrip(t, Kernel{}, c).Params.(Params); got != p {
			t.Errorf("intermediate %s: the capture rebuilds params %#v, want %#v", im, got, p)
		}
	}
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
