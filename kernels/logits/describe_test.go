// Tests of DescribeFamilies against the parser it documents, and of
// CheckSpec against NewCase.

package logits

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
	"github.com/kerneldiff/kerneldiff/difftest/paramtest"
	"github.com/kerneldiff/kerneldiff/internal/golden"
)

// TestDescribeFamiliesMatchesParser checks the family documentation
// against CheckSpec (paramtest.CheckFamilies), each family's doc against
// FamilyDoc, and that exactly lengths is marked required
// (paramtest.CheckFamilyDocs).
func TestDescribeFamiliesMatchesParser(t *testing.T) {
	paramtest.CheckFamilies(t, Kernel{}, ".", 13, "K") // K: a topk param, unknown here
	paramtest.CheckFamilyDocs(t, Kernel{}, FamilyDoc, func(_, param string) bool { return param == "lengths" })
}

// CheckSpec must agree with NewCase: the same error, or nil exactly when
// NewCase draws the case.
func TestCheckSpecAgreesWithNewCase(t *testing.T) {
	agree := func(spec difftest.CaseSpec) error { return kerneltest.CheckSpecAgrees(t, Kernel{}, spec) }
	for _, name := range []string{"quick"} {
		for _, s := range loadSuite(t, name) {
			if err := agree(s); err != nil {
				t.Errorf("suite %s: %v", name, err)
			}
		}
	}
	spec := func(family string, params map[string]any) difftest.CaseSpec {
		return difftest.CaseSpec{Kernel: KernelName, Family: family, Name: "bad", Params: params}
	}
	ok := func(extra ...any) map[string]any {
		m := map[string]any{"lengths": []any{int64(16), int64(40)}, "H": int64(2)}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	for _, tt := range []struct {
		name string
		spec difftest.CaseSpec
		want string // "" : accepted
	}{
		{"valid", spec("gaussian", ok()), ""},
		{"another kernel", difftest.CaseSpec{Kernel: "topk_transform", Family: "gaussian", Name: "bad", Params: ok()}, `kernel "topk_transform" is not indexer_logits`},
		{"unknown family", spec("gauss", ok()), `unknown family "gauss"`},
		{"lengths missing", spec("gaussian", map[string]any{"H": int64(2)}), `param "lengths": required`},
		{"a negative length", spec("gaussian", ok("lengths", []any{int64(-1)})), `param "lengths": element 0 must be in [0, 16777216], got -1`},
		{"P not a power of two", spec("gaussian", ok("P", int64(48))), `param "P": page size must be a power of two`},
		{"H = 129", spec("gaussian", ok("H", int64(129))), `param "H": heads must be in [1, 128], got 129`},
		{"unknown store", spec("gaussian", ok("store", "fp6")), `param "store": must be one of fp8, bf16, fp4, got "fp6"`},
		{"stride below a length", spec("gaussian", ok("stride", int64(39))), `param "stride": must be in [the longest length 40, 16777216], got 39`},
		{"max_pages below the pages", spec("gaussian", ok("max_pages", int64(0), "P", int64(16), "max_pages", int64(2))), `param "max_pages": must be in [ceil(40/16) = 3`},
		{"num_pages below the pages", spec("gaussian", ok("num_pages", int64(1))), `param "num_pages": the rows use 2 pages, got 1`},
		{"a cache over 16 GiB", spec("gaussian", ok("num_pages", int64(3000000))), `param "num_pages·page_bytes": exceeds the limit of 17179869184 cache bytes`},
		{"unknown page kind", spec("gaussian", ok("pages", "random")), `param "pages": must be one of identity, perm, distinct, high`},
		{"counts on gaussian", spec("gaussian", ok("counts", []any{int64(3)})), "unknown param(s) counts"},
		{"lengths on page-counts", spec("page-counts", ok()), "unknown param(s) lengths"},
		{"a zero page count", spec("page-counts", map[string]any{"counts": []any{int64(0)}}), `param "counts": element 0 must be in [1, 262144] pages, got 0`},
		{"special 0", spec("nan-keys", ok("special", int64(0))), `param "special": must be ≥ 1`},
		{"accum_bits 3", spec("gaussian", ok("accum_bits", int64(3))), `param "accum_bits": must be in [4, 24]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := agree(tt.spec)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

var update = flag.Bool("update", false, "rewrite testdata/digests.golden")

// digestCases are generated cases whose input SHA-256 digests are pinned:
// the same seed and case id must give the same bytes on every run, host
// and build (docs/running.md), keys written through norm_rope_store included.
var digestCases = []difftest.CaseSpec{
	{Kernel: KernelName, Family: "gaussian", Name: "digest/gaussian/fp8", Params: map[string]any{"lengths": []any{int64(0), int64(70), int64(129)}, "H": int64(3)}},
	{Kernel: KernelName, Family: "gaussian", Name: "digest/gaussian/bf16/high", Params: map[string]any{"lengths": []any{int64(33)}, "H": int64(2), "P": int64(16), "store": "bf16", "pages": "high"}},
	{Kernel: KernelName, Family: "page-counts", Name: "digest/page-counts/perm", Params: map[string]any{"counts": []any{int64(1), int64(3)}, "H": int64(1), "pages": "perm"}},
	{Kernel: KernelName, Family: "negative", Name: "digest/negative", Params: map[string]any{"lengths": []any{int64(65)}, "H": int64(4)}},
	{Kernel: KernelName, Family: "nan-keys", Name: "digest/nan-keys/bf16", Params: map[string]any{"lengths": []any{int64(100)}, "H": int64(2), "store": "bf16"}},
}

func TestInputDigests(t *testing.T) {
	golden.Check(t, filepath.Join("testdata", "digests.golden"), paramtest.InputDigests(t, Kernel{}, digestCases), *update,
		"a generator change bumps difftest.GeneratorVersion and rewrites it with -update")
}
