package topk

import (
	"context"
	"slices"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// TestMatchTieFreedom: a variant is an alternative contract, so an
// implementation that picks among the keys tied at the K-th under the
// variant's order, in an order that is neither the lowest nor the highest
// positions (torch.topk on CPU), is diagnosed as that variant; one that
// also leaves out a position above the K-th is not. K = 2, P = 1, one row
// [3, −0, +0, −0, +0]: under torch's float comparison the four zeros tie;
// under key32 +0 ranks above −0, so {0, 3} (3 and a −0) fails the
// contract. The variant itself returns {0, 1} (lowest tied) and, with the
// highest-position rule, {0, 4}: exact matching names neither.
func TestMatchTieFreedom(t *testing.T) {
	c := handCase(t, 2, 1, true, [][]uint32{{fb(3), negZ, 0, negZ, 0}}, []int32{5}, [][]int32{{10, 11, 12, 13, 14}})
	want := runRef(t, c)
	tests := []struct {
		name       string
		page, raw  []int32
		matches    []string
		failsCheck bool
	}{
		{"middle-tie", []int32{13, 10}, []int32{3, 0}, []string{VariantZeroTie}, true},
		{"another-middle-tie", []int32{10, 11}, []int32{0, 1}, []string{VariantZeroTie}, true},
		{"misses-above", []int32{11, 13}, []int32{1, 3}, nil, true},
		{"duplicate-tie", []int32{13, 13}, []int32{3, 3}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runRef(t, c)
			setRow(got[0], 0, 2, tt.page)
			setRow(got[1], 0, 2, tt.raw)
			if r := Check(c, got, want); r.Failed() != tt.failsCheck {
				t.Fatalf("Check: %s %q", r.Class, r.Message)
			}
			d := triage.Diagnose(context.Background(), Kernel{}, c, got, want, 0)
			if !slices.Equal(d.Matches, tt.matches) {
				t.Errorf("diagnosed as %v, want %v", d.Matches, tt.matches)
			}
		})
	}
}
