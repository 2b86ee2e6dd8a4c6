package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest/report"
)

// TestRunParam: --param sets a suite param in every case that takes it.
// The mutant bf16-truncate (a BF16 store that truncates) fails the quick
// suite's store cases both ways, named as itself: a declared bf16
// intermediate admits the bf16 chain's own rounding, not a truncation, so
// it is not diagnosed "passes as intermediate=bf16" (the logits
// counterpart, accum_bits, is cmd/difftest's TestRunParamAccumBits). A
// name no case takes and a value out of range are usage errors naming the
// param; the replay line of a failure under --param repeats it.
func TestRunParam(t *testing.T) {
	base := []string{"run", "--suite", "../../../../fixtures/suites/quick/normrope.toml", "--run", "norm_rope_store", "--impl", "mutant:bf16-truncate"}
	code, out, _ := run(t, append(base, "--diagnose")...)
	if code != 1 || !strings.Contains(out, "behaves like bf16-truncate") || strings.Contains(out, "passes as intermediate=bf16") {
		t.Errorf("store, default precision: exit %d\n%s", code, out)
	}
	dir := t.TempDir()
	js, ju := filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "r.xml")
	code, out, errOut := run(t, append(base, "--param", "intermediate=bf16", "--json", js, "--junit", ju)...)
	if code != 1 || !strings.Contains(out, "--param intermediate=bf16") {
		t.Errorf("--param intermediate=bf16: exit %d, want 1 (bf16-truncate is no bf16 chain)\n%s%s", code, out, errOut)
	}
	// The overrides are in the report's header: the table's, the JSON
	// Lines header line, JUnit's properties.
	if !strings.Contains(out, "\nparams: intermediate=bf16 (--param: set in every case that takes them)\n") {
		t.Errorf("the table does not say --param intermediate=bf16:\n%s", out)
	}
	rep, err := report.ReadJSONLFile(js)
	if err != nil || !slices.Equal(rep.Header.Params, []string{"intermediate=bf16"}) {
		t.Errorf("JSON Lines header params %v (%v), want [intermediate=bf16]", rep.Header.Params, err)
	}
	if x, err := os.ReadFile(ju); err != nil || !strings.Contains(string(x), `<property name="params" value="intermediate=bf16">`) {
		t.Errorf("JUnit properties lack params (%v):\n%s", err, x)
	}
	code, out, _ = run(t, "run", "--suite", "../../../../fixtures/suites/quick/normrope.toml", "--run", "norm_rope_store", "--impl", "mutant:rope-style-swap", "--param", "intermediate=bf16", "--failfast")
	if code != 1 || !strings.Contains(out, "--param intermediate=bf16") {
		t.Errorf("replay line under --param: exit %d\n%s", code, out)
	}
	for _, tt := range []struct{ arg, want string }{
		{"bogus=1", `takes "bogus"`},
		{"intermediate=f8", "intermediate"},
		{"intermediate", "want NAME=VALUE"},
	} {
		code, _, errOut := run(t, append(base, "--param", tt.arg)...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("--param %s: exit %d, stderr %q, want 2 and %q", tt.arg, code, errOut, tt.want)
		}
	}
}

// TestRunParamSelected: --param applies to the cases --run selects. The
// quick suite's e4m3-midpoint case needs RMSNorm, so --param norm=layer
// over every store case is a usage error naming it; over the cases a
// --run leaves it out of, the reference passes them with LayerNorm.
func TestRunParamSelected(t *testing.T) {
	suite := "../../../../fixtures/suites/quick/normrope.toml"
	code, _, errOut := run(t, "run", "--suite", suite, "--run", "norm_rope_store", "--impl", "reference", "--param", "norm=layer")
	if code != 2 || !strings.Contains(errOut, "e4m3-midpoint") {
		t.Errorf("norm=layer over every case: exit %d, stderr %q; want 2 naming e4m3-midpoint", code, errOut)
	}
	code, out, errOut := run(t, "run", "--suite", suite, "--run", "norm_rope_store/(gaussian|zero)/", "--impl", "reference", "--param", "norm=layer", "--json", t.TempDir()+"/r.jsonl")
	if code != 0 || strings.Contains(out, "e4m3-midpoint") {
		t.Errorf("norm=layer over gaussian and zero: exit %d\n%s%s", code, out, errOut)
	}
}

// TestRunParamTwice: a param given twice is a usage error naming both
// values (the second silently replaced the first, so a run under
// `--param intermediate=bf16 --param intermediate=f32` checked f32 while
// its header listed both).
func TestRunParamTwice(t *testing.T) {
	code, _, errOut := run(t, "run", "--suite", "../../../../fixtures/suites/quick/normrope.toml", "--run", "norm_rope_store", "--impl", "reference",
		"--param", "intermediate=bf16", "--param", "N=4", "--param", "intermediate=f32")
	if code != 2 || !strings.Contains(errOut, `--param intermediate=f32: "intermediate" is already set by --param intermediate=bf16`) {
		t.Errorf("intermediate twice: exit %d, stderr %q; want 2 naming both", code, errOut)
	}
}

// TestRunParamCaptures: captured cases keep their recorded params, so
// --param over a folder of captures is refused saying so, not that no
// case takes the param (their kernel does).
func TestRunParamCaptures(t *testing.T) {
	dir := t.TempDir()
	code, out, _ := run(t, "run", "--suite", "../../../../fixtures/suites/quick/normrope.toml", "--run", "norm_rope_store/gaussian/v4-bf16/", "--impl", "mutant:bf16-truncate", "--save-failures", dir, "--diagnose=off")
	if code != 1 {
		t.Fatalf("saving a failure: exit %d\n%s", code, out)
	}
	code, _, errOut := run(t, "run", "--suite", dir, "--impl", "reference", "--param", "intermediate=bf16")
	if code != 2 || !strings.Contains(errOut, `--param intermediate=bf16: the selected cases of suite `+dir+` that take "intermediate" are captures (1), which keep the params they were recorded with`) {
		t.Errorf("--param over captures: exit %d, stderr %q", code, errOut)
	}
}
