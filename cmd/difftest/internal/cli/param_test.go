package cli

import (
	"strings"
	"testing"
)

// TestRunParam: --param sets a suite param in every case that takes it.
// The mutant bf16-truncate (the BF16 store truncates) fails the quick
// suite's store cases under the default f32 contract, with "passes as
// intermediate=bf16" among the diagnosis and a replay line that repeats
// no --param; with --param intermediate=bf16 (a bound wider than one bf16
// ULP) it passes them all. A name
// no case takes and a value out of range are usage errors naming the
// param; the replay line of a failure under --param repeats it.
func TestRunParam(t *testing.T) {
	base := []string{"run", "--suite", "../../../../fixtures/suites/quick/normrope.toml", "--run", "norm_rope_store", "--impl", "mutant:bf16-truncate"}
	code, out, _ := run(t, append(base, "--diagnose")...)
	if code != 1 || !strings.Contains(out, "passes as intermediate=bf16") || strings.Contains(out, "--param") {
		t.Errorf("default precision: exit %d\n%s", code, out)
	}
	if code, out, errOut := run(t, append(base, "--param", "intermediate=bf16")...); code != 0 {
		t.Errorf("--param intermediate=bf16: exit %d\n%s%s", code, out, errOut)
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
