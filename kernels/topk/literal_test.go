package topk

import (
	"slices"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
)

// TestSuiteEntryRoundTrip: a hand case with specials, a past-length fill
// and a permuted page table renders as a literal entry that parses,
// passes CheckSpec and draws the same input bytes (triage.SuiteEntry
// checks the digest), with runs of equal values folded.
func TestSuiteEntryRoundTrip(t *testing.T) {
	c := handCase(t, 2, 2, false, [][]uint32{{negZ, posNaN, 0, 0, 0, negInf}, {fb(1.5)}}, []int32{5, 1}, [][]int32{{5, 3, 9}, {7}})
	kerneltest.SuiteEntry(t, Kernel{}, c, "hand-shrunk",
		`family = "literal"`, `name = "hand-shrunk"`, "K = 2\n", "P = 2\n", "raw = false\n", "lengths = [5, 1]\n", "stride = 6\n",
		`scores = "80000000 7fc00000 00000000*3 ff800000 3fc00000 7fc00000*5"`,
		`page_table = "5 3 9 7 -1*2"`)
}

// TestLiteralErrors: a literal entry with a malformed list, a list of the
// wrong length or inputs that break the contract is a param error naming
// the param, from NewCase and CheckSpec alike.
func TestLiteralErrors(t *testing.T) {
	base := func(extra map[string]any) difftest.CaseSpec {
		p := map[string]any{"K": int64(2), "P": int64(1), "lengths": []any{int64(3)}}
		for k, v := range extra {
			p[k] = v
		}
		return difftest.CaseSpec{Kernel: KernelName, Family: FamilyLiteral, Name: "l", Params: p}
	}
	for _, tc := range []struct {
		extra map[string]any
		want  string
	}{
		{map[string]any{"scores": "3f80000"}, `param "scores": token "3f80000": want 8 hex digits`},
		{map[string]any{"scores": "3f800000*0"}, "repeat count must be an integer ≥ 1"},
		{map[string]any{"scores": "3f800000*2"}, "holds 2 values, batch·stride = 1·3 = 3"},
		{map[string]any{"scores": "3f800000*4000000000"}, "more than 3 values"},
		{map[string]any{"page_table": "0 1"}, `param "page_table": holds 2 ids, batch·max_pages = 1·3 = 3`},
		{map[string]any{"page_table": "0 -5 2"}, "the inputs break the contract"},
		{map[string]any{"page_table": "0 x 2"}, "want a decimal int32"},
	} {
		if err := kerneltest.CheckSpecAgrees(t, Kernel{}, base(tc.extra)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want %q from NewCase and CheckSpec", tc.extra, err, tc.want)
		}
	}
	// Unset lists: zeros and the usual fill and page table.
	c, err := NewCase(base(map[string]any{"pages": "identity"}), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := rowI32(c.Inputs[2], 0, 3); !slices.Equal(got, []int32{0, 1, 2}) || c.Inputs[0].U32(1) != 0 {
		t.Errorf("defaults: page row %v, score 1 0x%08x", got, c.Inputs[0].U32(1))
	}
}

// TestRunLength: runLength and parseRuns are inverse on both alphabets.
func TestRunLength(t *testing.T) {
	for _, tc := range []struct {
		v   []uint32
		hex bool
	}{
		{[]uint32{0, 0, 0, 0x7fc00000, 1, 1}, true},
		{[]uint32{0xFFFFFFFF, 0xFFFFFFFF, 5, 0x7FFFFFFF, 0x80000000}, false},
		{nil, true},
	} {
		s := runLength(tc.v, tc.hex)
		back, err := parseRuns(s, tc.hex, len(tc.v))
		if err != nil || !slices.Equal(back, tc.v) {
			t.Errorf("%v → %q → %v, %v", tc.v, s, back, err)
		}
	}
}
