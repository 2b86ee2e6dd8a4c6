package topk

import (
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// notChecked ends the message of a page-table fault (Check without
// raw_indices).
const notChecked = "the selection is not checked (without raw_indices every position is read back through the page table)"

// TestCheckPageFault: without raw_indices a page index that does not map
// back through its row's page table is a page-table fault, reported alone:
// which row, entry and slot, and why, and no selection diagnostics (they
// would read positions through the broken translation and say "got not
// chosen, want chosen"). The case is TestCheckRules': K = 2, P = 2,
//
//	row 0, L = 4: [3, 2, 2, 2]; table [10 20] → slots 20 21 40 41.
//	row 1, L = 1: [5]; table [30] → page [60 −1].
//	row 2, L = 3: [1, −inf, −inf]; table [7 8] → page {14, 15}.
func TestCheckPageFault(t *testing.T) {
	scores := [][]uint32{{fb(3), fb(2), fb(2), fb(2)}, {fb(5)}, {fb(1), negInf, negInf}}
	lens := []int32{4, 1, 3}
	table := [][]int32{{10, 20}, {30}, {7, 8}}
	type edit struct {
		row  int
		page []int32
	}
	tests := []struct {
		name, reason string
		edits        []edit
		want         string // the message, without notChecked
		wrongSlots   int
		worst        []string // Worst as tensor+index, in order
	}{
		{"foreign-page", "a page of another row names that row", []edit{{0, []int32{20, 60}}},
			"row 0: page_indices[0][1] = 60 does not map back through row 0's page table: page id 30 is not among its 2 used pages (it is page_table[1][0], a page of row 1)",
			1, []string{"page_indices[0][1]"}},
		{"unknown-page", "a page id no row holds", []edit{{0, []int32{20, 99}}},
			"row 0: page_indices[0][1] = 99 does not map back through row 0's page table: page id 49 is not among its 2 used pages",
			1, []string{"page_indices[0][1]"}},
		{"negative", "a negative slot other than the −1 padding", []edit{{2, []int32{14, -7}}},
			"row 2: page_indices[2][1] = -7 does not map back through row 2's page table: a slot is never negative",
			1, []string{"page_indices[2][1]"}},
		{"fault-after-selection-error", "row 0 reads back to a wrong selection, row 2 does not map back: the page table is named, not row 0's selection",
			[]edit{{0, []int32{21, 40}}, {2, []int32{14, 99}}},
			"row 2: page_indices[2][1] = 99 does not map back through row 2's page table: page id 49 is not among its 2 used pages",
			1, []string{"page_indices[2][1]"}},
		{"fault-with-padding", "rule-1 entries (which read no position) stay, after the unmapped ones",
			[]edit{{0, []int32{20, -1}}, {2, []int32{61, 14}}},
			"row 2: page_indices[2][0] = 61 does not map back through row 2's page table: page id 30 is not among its 2 used pages (it is page_table[1][0], a page of row 1)",
			1, []string{"page_indices[2][0]", "page_indices[0][1]"}},
		{"every-row", "all unmapped entries are counted; the message is the lowest row's",
			[]edit{{0, []int32{14, 15}}, {2, []int32{20, 21}}},
			"row 0: page_indices[0][0] = 14 does not map back through row 0's page table: page id 7 is not among its 2 used pages (it is page_table[2][0], a page of row 2)",
			4, []string{"page_indices[0][0]", "page_indices[0][1]", "page_indices[2][0]", "page_indices[2][1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := handCase(t, 2, 2, false, scores, lens, table)
			want := runRef(t, c)
			got := runRef(t, c)
			for _, e := range tt.edits {
				setRow(got[0], e.row, 2, e.page)
			}
			r := Check(c, got, want)
			if r.Class != difftest.Mismatch || r.Message != tt.want+"; "+notChecked {
				t.Errorf("%s:\n got %s %q\nwant mismatch %q", tt.reason, r.Class, r.Message, tt.want+"; "+notChecked)
			}
			if r.Metrics["failed_rule"] != "wrong_slots" || r.Metrics["wrong_slots"] != tt.wrongSlots || r.Metrics["valid"] != false {
				t.Errorf("%s: metrics %v, want failed_rule wrong_slots, wrong_slots %d", tt.reason, r.Metrics, tt.wrongSlots)
			}
			for _, k := range []string{"missing", "extra", "duplicates", "out_of_order", "recall", "jaccard", "tie_band", "needle_found"} {
				if v, ok := r.Metrics[k]; ok {
					t.Errorf("%s: metric %s = %v: selection diagnostics on a page-table fault", tt.reason, k, v)
				}
			}
			var worst []string
			for _, e := range r.Worst {
				worst = append(worst, e.Tensor+e.Index)
				if e.Ratio != nil {
					t.Errorf("%s: worst %s%s has a ratio; index comparisons are exact", tt.reason, e.Tensor, e.Index)
				}
			}
			if strings.Join(worst, " ") != strings.Join(tt.worst, " ") {
				t.Errorf("%s: worst %v, want %v", tt.reason, worst, tt.worst)
			}
			if key := (Kernel{}).KeyMetric(&difftest.Record{Verdict: difftest.VerdictFail, Class: r.Class, Metrics: r.Metrics}); !strings.HasPrefix(key, "wrong_slots=") {
				t.Errorf("%s: key metric %q", tt.reason, key)
			}
		})
	}
}

// TestCheckPageFaultMutant: the catalog mutant topk-page-row0 (every row
// read through row 0's page table) on a case without raw_indices where
// row 1's table permutes row 0's pages, so its slots read back to wrong
// positions ("position 0 ... is not chosen", the wrong bug), and row 2's
// pages are its own, so its slots do not read back at all. The page table
// is what the report must name. K = 2, P = 1, L = 4 in every row.
func TestCheckPageFaultMutant(t *testing.T) {
	c := handCase(t, 2, 1, false,
		[][]uint32{{fb(1), fb(2), fb(3), fb(4)}, {fb(4), fb(3), fb(2), fb(1)}, {fb(4), fb(3), fb(2), fb(1)}},
		[]int32{4, 4, 4}, [][]int32{{0, 1, 2, 3}, {3, 2, 1, 0}, {10, 11, 12, 13}})
	want := runRef(t, c)
	got := newOuts(c)
	if err := runMutant(c, got, faultPageRow0); err != nil {
		t.Fatal(err)
	}
	r := Check(c, got, want)
	const msg = "row 2: page_indices[2][0] = 0 does not map back through row 2's page table: page id 0 is not among its 4 used pages (it is page_table[0][0], a page of row 0); " + notChecked
	if r.Message != msg {
		t.Errorf("got  %q\nwant %q", r.Message, msg)
	}
	for _, e := range r.Worst {
		if e.Tensor == TensorScores {
			t.Errorf("selection diagnostic %s%s: got %s, want %s", e.Tensor, e.Index, e.Got, e.Want)
		}
	}
}
