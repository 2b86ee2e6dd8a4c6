package suite

import (
	"errors"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
)

// A suite's parameters are checked when it is parsed, every case before
// any runs, after the checks of the file's structure.
func TestParseSuiteChecksEveryCaseParams(t *testing.T) {
	const head = "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"first\"\n[case.params]\nn = 8\n"
	tests := []struct {
		name, text, want string
	}{
		{"mistyped param in the last case", head + "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"random\"\nname = \"last\"\n[case.params]\nn = \"eight\"\n",
			`suite bad.toml: case fake_scatter/last: param "n": must be an integer, got the string "eight"`},
		{"unknown param in the last case", head + "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"random\"\nname = \"last\"\n[case.params]\nslot = 9\n",
			`suite bad.toml: case fake_scatter/last: unknown param(s) slot`},
		{"first bad case in file order", head + "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"b\"\n[case.params]\nm = 1\n" +
			"[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"c\"\n[case.params]\nq = 1\n",
			`suite bad.toml: case fake_scatter/b: unknown param(s) m`},
		{"a duplicate after a bad param is reported first", "[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"a\"\n[case.params]\nm = 1\n" + head +
			"[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"first\"\n",
			`suite bad.toml: case fake_scatter/first: duplicate case name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cases, err := ParseSuite("bad.toml", []byte(tt.text))
			var se *difftest.SuiteError
			if !errors.As(err, &se) || err.Error() != tt.want {
				t.Fatalf("ParseSuite = %d cases, %v\nwant *SuiteError %q", len(cases), err, tt.want)
			}
			if difftest.ExitCode(difftest.Summary{}, err) != difftest.ExitUsage {
				t.Errorf("exit code %d, want 2", difftest.ExitCode(difftest.Summary{}, err))
			}
		})
	}
}

// countingKernel is fake_scatter with its NewCase calls counted.
type countingKernel struct {
	fakekernel.Kernel
	drawn *[]uint64 // key of each NewCase call
}

func (k countingKernel) NewCase(spec difftest.CaseSpec, seed, key uint64) (*difftest.Case, error) {
	*k.drawn = append(*k.drawn, key)
	return k.Kernel.NewCase(spec, seed, key)
}

// checkingKernel also checks specs itself: n must be even.
type checkingKernel struct{ countingKernel }

func (checkingKernel) CheckSpec(spec difftest.CaseSpec) error {
	if n, _ := spec.Params["n"].(int64); n%2 != 0 {
		return errors.New("n must be even")
	}
	return nil
}

// CheckCaseSpec uses the kernel's SpecChecker and draws nothing; without
// one it draws the case once, under seed 0, and returns NewCase's error.
func TestCheckCaseSpec(t *testing.T) {
	spec := func(params map[string]any) difftest.CaseSpec {
		return difftest.CaseSpec{Kernel: fakekernel.Name, Family: "random", Name: "r", Params: params}
	}
	tests := []struct {
		name      string
		checker   bool
		params    map[string]any
		want      string // error, "" for nil
		drawnKeys int
	}{
		{"SpecChecker accepts", true, map[string]any{"n": int64(4)}, "", 0},
		{"SpecChecker rejects", true, map[string]any{"n": int64(5)}, "n must be even", 0},
		{"SpecChecker is trusted over NewCase", true, map[string]any{"n": int64(4), "typo": true}, "", 0},
		{"fallback accepts", false, map[string]any{"n": int64(5)}, "", 1},
		{"fallback rejects", false, map[string]any{"n": int64(4), "typo": true}, "case fake_scatter/r: unknown param(s) typo", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var drawn []uint64
			var k difftest.Kernel = countingKernel{drawn: &drawn}
			if tt.checker {
				k = checkingKernel{countingKernel{drawn: &drawn}}
			}
			err := CheckCaseSpec(k, spec(tt.params))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("CheckCaseSpec = %q, want %q", got, tt.want)
			}
			if len(drawn) != tt.drawnKeys {
				t.Fatalf("NewCase called %d times, want %d", len(drawn), tt.drawnKeys)
			}
			if len(drawn) == 1 && drawn[0] != rng.CaseKey(0, "fake_scatter/r") {
				t.Errorf("fallback drew with key %#x, want seed 0's %#x", drawn[0], rng.CaseKey(0, "fake_scatter/r"))
			}
		})
	}
}

// Params.Tables reads an array of tables as decoded, and names the first
// value that is not one.
func TestParamsTables(t *testing.T) {
	m := map[string]any{
		"runs":  []any{map[string]any{"length": int64(8)}, map[string]any{}},
		"bad":   []any{map[string]any{}, int64(3)},
		"plain": int64(5),
	}
	p := difftest.NewParams("k/c", m)
	got := p.Tables("runs")
	if len(got) != 2 || got[0]["length"] != int64(8) || len(got[1]) != 0 {
		t.Errorf("Tables(runs) = %v", got)
	}
	if p.Tables("absent") != nil {
		t.Error("Tables(absent) is not nil")
	}
	if p.Tables("bad") != nil || p.Err() == nil || p.Err().Error() != `case k/c: param "bad": element 1 must be a table {…}, got the integer 3` {
		t.Errorf("Tables(bad): err %v", p.Err())
	}
	p = difftest.NewParams("k/c", m)
	p.Tables("plain")
	if err := p.Err(); err == nil || err.Error() != `case k/c: param "plain": must be an array of tables, e.g. [{…}, {…}], got the integer 5` {
		t.Errorf("Tables(plain): err %v", err)
	}
}
