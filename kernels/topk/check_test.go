package topk

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// TestCheckRules: each rule of docs/contracts/topk_transform.md broken once, with the one-line
// message it must produce. The case: K = 2, P = 2, identity-like tables.
//
//	row 0, L = 4: [3, 2, 2, 2]; table [10 20] → slots 20 21 40 41.
//	  Reference picks raw {0, 1} → page {20, 21}.
//	row 1, L = 1: [5]; table [30] → raw [0 −1], page [60 −1].
//	row 2, L = 3: [1, −inf, −inf]; table [7 8] → raw {0, 1}, page {14, 15}.
func TestCheckRules(t *testing.T) {
	scores := [][]uint32{
		{fb(3), fb(2), fb(2), fb(2)},
		{fb(5)},
		{fb(1), negInf, negInf},
	}
	lens := []int32{4, 1, 3}
	table := [][]int32{{10, 20}, {30}, {7, 8}}
	type edit struct {
		row  int
		page []int32
		raw  []int32
	}
	tests := []struct {
		name, reason string
		edits        []edit
		noRaw        bool
		want         string // "" = valid
		rule         string // failed_rule and the key metric's name
		count        int    // the rule's counter
	}{
		{"reference", "the reference is valid", nil, false, "", "", 0},
		{"tie-swap", "any tied pick is valid: {0, 3}", []edit{{0, []int32{41, 20}, []int32{3, 0}}}, false, "", "", 0},
		{"neg-inf-picks", "−inf positions are valid picks", []edit{{2, []int32{16, 14}, []int32{2, 0}}}, false, "", "", 0},
		{"rule3-example", "{2, 2} from [3, 2, 2, 2] with K = 2 must fail",
			[]edit{{0, []int32{21, 40}, []int32{1, 2}}}, false,
			"row 0: position 0 (f32 0x40400000 = 3) ranks above the K-th (f32 0x40000000 = 2) but is not chosen", "missing", 1},
		{"extra-below", "−inf chosen over 1.0", []edit{{2, []int32{15, 16}, []int32{1, 2}}}, false,
			"row 2: position 0 (f32 0x3f800000 = 1) ranks above the K-th (f32 0xff800000 = -Inf) but is not chosen", "missing", 1},
		{"hole", "−1 inside min(K, L), in both outputs", []edit{{0, []int32{20, -1}, []int32{0, -1}}}, false,
			"row 0: page_indices[0][1] = -1 inside the first min(K, L) = 2 entries (L = 4)", "padding", 2},
		{"tail-not-minus-one", "the tail must be −1 when L < K", []edit{{1, []int32{60, 61}, []int32{0, 0}}}, false,
			"row 1: page_indices[1][1] = 61 past the first min(K, L) = 1 entries must be -1 (L = 1)", "padding", 2},
		{"tail-pick-past-L", "a pick past L in the tail is that, before the padding rule", []edit{{1, []int32{60, 61}, []int32{0, 1}}}, false,
			"row 1: raw_indices[1][1] = 1 is a pick at or past L = 1 (outside [0, L)); also 2 entries break the padding rule", "out_of_range", 1},
		{"hole-and-pick-past-L", "−inf picked as −1 and a pick past L in its place (SGLang's PyTorch fallback): the pick past L leads",
			[]edit{{2, []int32{-1, 17}, []int32{-1, 3}}}, false,
			"row 2: raw_indices[2][1] = 3 is a pick at or past L = 3 (outside [0, L)); also 2 entries break the padding rule", "out_of_range", 1},
		{"hole-and-pick-past-L-no-raw", "the same without raw_indices: read back through the row's own table",
			[]edit{{2, []int32{-1, 17}, nil}}, true,
			"row 2: page_indices[2][1] = 17 is a pick at or past L: position 3 ≥ L = 3 (page_table[2][1] = 8, offset 1); also 1 entries break the padding rule", "out_of_range", 1},
		{"pick-past-L-no-raw", "a slot of the row's own table at a position past L is a pick past L, not a foreign slot",
			[]edit{{2, []int32{14, 17}, nil}}, true,
			"row 2: page_indices[2][1] = 17 is a pick at or past L: position 3 ≥ L = 3 (page_table[2][1] = 8, offset 1)", "out_of_range", 1},
		{"duplicate", "raw indices distinct", []edit{{0, []int32{20, 20}, []int32{0, 0}}}, false,
			"row 0: position 0 chosen twice (entries 0 and 1)", "duplicates", 1},
		{"out-of-range", "raw in [0, L)", []edit{{2, []int32{14, 16}, []int32{0, 3}}}, false,
			"row 2: raw_indices[2][1] = 3 is a pick at or past L = 3 (outside [0, L))", "out_of_range", 1},
		{"wrong-slot", "page_indices = slot(raw)", []edit{{0, []int32{20, 22}, []int32{0, 1}}}, false,
			"row 0: page_indices[0][1] = 22 (page 11 offset 0), want slot(raw 1) = 21 = page_table[0][0]·P + 1 = 10·2 + 1 (L = 4, P = 2)", "wrong_slots", 1},
		{"wrong-slots-two-rows", "every wrong slot counts; the message is row 0's", []edit{{0, []int32{21, 22}, []int32{0, 1}}, {2, []int32{15, 14}, []int32{0, 1}}}, false,
			"row 0: page_indices[0][0] = 21 (page 10 offset 1), want slot(raw 0) = 20 = page_table[0][0]·P + 0 = 10·2 + 0 (L = 4, P = 2)", "wrong_slots", 4},
		{"no-raw-inverted", "without raw the table is inverted", []edit{{0, []int32{20, 41}, nil}}, true, "", "", 0},
		{"no-raw-foreign-slot", "a slot of another row", []edit{{0, []int32{20, 60}, nil}}, true,
			"row 0: page_indices[0][1] = 60 does not map back through row 0's page table: page id 30 is not among its 2 used pages (it is page_table[1][0], a page of row 1); " + notChecked, "wrong_slots", 1},
		{"no-raw-rule3", "rule 3 through the inverted table", []edit{{0, []int32{21, 40}, nil}}, true,
			"row 0: position 0 (f32 0x40400000 = 3) ranks above the K-th (f32 0x40000000 = 2) but is not chosen", "missing", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := handCase(t, 2, 2, !tt.noRaw, scores, lens, table)
			want := runRef(t, c)
			got := runRef(t, c)
			for _, e := range tt.edits {
				setRow(got[0], e.row, 2, e.page)
				if e.raw != nil {
					setRow(got[1], e.row, 2, e.raw)
				}
			}
			r := Check(c, got, want)
			if r.Message != tt.want {
				t.Errorf("%s:\n got %q\nwant %q", tt.reason, r.Message, tt.want)
			}
			if r.Failed() != (tt.want != "") || (r.Failed() && r.Class != difftest.Mismatch) {
				t.Errorf("%s: class %q", tt.reason, r.Class)
			}
			if r.Metrics["valid"] != !r.Failed() {
				t.Errorf("valid metric %v with class %q", r.Metrics["valid"], r.Class)
			}
			if tt.rule != "" && (r.Metrics["failed_rule"] != tt.rule || r.Metrics[tt.rule] != tt.count) {
				t.Errorf("%s: failed_rule %v, %s = %v; want %s = %d", tt.reason, r.Metrics["failed_rule"], tt.rule, r.Metrics[tt.rule], tt.rule, tt.count)
			}
			rec := &difftest.Record{Verdict: difftest.VerdictPass, Class: r.Class, Metrics: r.Metrics}
			wantKey := ""
			if r.Failed() {
				rec.Verdict = difftest.VerdictFail
				wantKey = fmt.Sprintf("%s=%d", tt.rule, tt.count)
			}
			if got := (Kernel{}).KeyMetric(rec); got != wantKey {
				t.Errorf("%s: key metric %q, want %q", tt.reason, got, wantKey)
			}
		})
	}
}

// TestCheckWorstLeadsWithTheMessagesRule: row 0 breaks rule 2 (a wrong
// slot), row 2 rule 1 (a −1 inside min(K, L)). The message is row 0's,
// and the worst list starts with that rule's offender, not with the
// padding rule's (a report that shows the first few elements shows what
// the message names).
func TestCheckWorstLeadsWithTheMessagesRule(t *testing.T) {
	c := handCase(t, 2, 2, true, [][]uint32{{fb(3), fb(2), fb(2), fb(2)}, {fb(5)}, {fb(1), negInf, negInf}},
		[]int32{4, 1, 3}, [][]int32{{10, 20}, {30}, {7, 8}})
	want := runRef(t, c)
	got := runRef(t, c)
	setRow(got[0], 0, 2, []int32{20, 22})
	setRow(got[0], 2, 2, []int32{14, -1})
	setRow(got[1], 2, 2, []int32{0, -1})
	r := Check(c, got, want)
	if r.Metrics["failed_rule"] != "wrong_slots" || len(r.Worst) != 3 {
		t.Fatalf("failed_rule %v, worst %+v; want wrong_slots and three offenders", r.Metrics["failed_rule"], r.Worst)
	}
	if w := r.Worst[0]; w.Tensor != "page_indices" || w.Index != "[0][1]" || w.Got != "22 (page 11 offset 0)" {
		t.Errorf("worst[0] = %+v, want page_indices[0][1] = 22, the wrong slot the message names (%s)", w, r.Message)
	}
}

// TestCheckOutOfRangeLeads: a pick at or past L is the cause the message
// names even when an earlier row breaks another rule. K = 2, P = 1, row 0
// [3, 1, 2] (L = 3) gets {0, −1}: −1 inside the first min(K, L) entries
// (padding); row 1 [4, 2, 9] (L = 2, stride 3) gets {0, 2}: position 2 is
// past L (SGLang's PyTorch fallback picking a masked position). The
// message is row 1's out_of_range, and both counters are kept.
func TestCheckOutOfRangeLeads(t *testing.T) {
	c := handCase(t, 1, 1, true, [][]uint32{{fb(3), fb(1), fb(2)}, {fb(4), fb(2), fb(9)}},
		[]int32{3, 2}, [][]int32{{10, 11, 12}, {20, 21, 22}})
	want := runRef(t, c)
	got := runRef(t, c)
	setRow(got[0], 0, 1, []int32{-1})
	setRow(got[1], 0, 1, []int32{-1})
	setRow(got[0], 1, 1, []int32{22})
	setRow(got[1], 1, 1, []int32{2})
	r := Check(c, got, want)
	if r.Metrics["failed_rule"] != "out_of_range" || !strings.HasPrefix(r.Message, "row 1: raw_indices[1][0] = 2 is a pick at or past L = 2") {
		t.Fatalf("failed_rule %v, message %q; want row 1's out_of_range", r.Metrics["failed_rule"], r.Message)
	}
	if r.Metrics["padding"] != 2 || r.Metrics["out_of_range"] != 1 {
		t.Errorf("padding %v, out_of_range %v; want 2 and 1", r.Metrics["padding"], r.Metrics["out_of_range"])
	}
	if w := r.Worst[0]; w.Tensor != "raw_indices" || w.Index != "[1][0]" {
		t.Errorf("worst[0] = %+v, want raw_indices[1][0]", w)
	}
}

// TestCheckShortRowOrder: L ≤ K rows must list 0..L−1 in order.
func TestCheckShortRowOrder(t *testing.T) {
	c := handCase(t, 4, 1, true, [][]uint32{{fb(1), fb(2), fb(3)}}, []int32{3}, [][]int32{{5, 6, 7}})
	want := runRef(t, c)
	got := runRef(t, c)
	setRow(got[0], 0, 4, []int32{7, 6, 5, -1})
	setRow(got[1], 0, 4, []int32{2, 1, 0, -1})
	r := Check(c, got, want)
	const msg = "row 0: short row (L = 3 ≤ K = 4) must list positions 0..L-1 in order: entry 0 is position 2"
	if r.Message != msg {
		t.Errorf("got %q, want %q", r.Message, msg)
	}
}

// TestCheckMetrics: recall, Jaccard, tie band, missing/extra and needle.
func TestCheckMetrics(t *testing.T) {
	// K = 2, one row [3, 2, 2, 2, 1]: K-th = 2, tie band 3. got {1, 4}
	// misses 0 (above the K-th) and takes 4 (below it).
	c := handCase(t, 2, 1, true, [][]uint32{{fb(3), fb(2), fb(2), fb(2), fb(1)}}, []int32{5}, [][]int32{{0, 1, 2, 3, 4}})
	c.Params.(*Params).Needles = []int{0}
	want := runRef(t, c) // {0, 1}
	got := runRef(t, c)
	setRow(got[0], 0, 2, []int32{1, 4})
	setRow(got[1], 0, 2, []int32{1, 4})
	r := Check(c, got, want)
	m := r.Metrics
	if m["recall"] != 0.5 || m["jaccard"] != 1.0/3 || m["tie_band"] != 3 || m["missing"] != 1 || m["extra"] != 1 || m["needle_found"] != false {
		t.Errorf("metrics %v", m)
	}
	wantWorst := []difftest.Element{
		{Tensor: "scores", Index: "[0][0]", Got: "not chosen", Want: "chosen: f32 0x40400000 = 3"},
		{Tensor: "scores", Index: "[0][4]", Got: "chosen: f32 0x3f800000 = 1", Want: "not chosen"},
	}
	if !slices.Equal(r.Worst, wantWorst) || r.Metrics["failed_rule"] != "missing" {
		t.Errorf("worst %+v, failed_rule %v", r.Worst, r.Metrics["failed_rule"])
	}
	if r := Check(c, want, want); r.Metrics["recall"] != 1.0 || r.Metrics["needle_found"] != true {
		t.Errorf("reference metrics %v", r.Metrics)
	}
	// Only an extra pick: K = 2 of [3, 2, 2, 1], got {0, 3}.
	c = handCase(t, 2, 1, true, [][]uint32{{fb(3), fb(2), fb(2), fb(1)}}, []int32{4}, [][]int32{{0, 1, 2, 3}})
	want = runRef(t, c)
	got = runRef(t, c)
	setRow(got[0], 0, 2, []int32{0, 3})
	setRow(got[1], 0, 2, []int32{0, 3})
	r = Check(c, got, want)
	const extraMsg = "row 0: position 3 (f32 0x3f800000 = 1) is chosen but ranks below the K-th (f32 0x40000000 = 2)"
	if r.Message != extraMsg || r.Metrics["failed_rule"] != "extra" || r.Metrics["extra"] != 1 || r.Metrics["missing"] != 0 {
		t.Errorf("extra only: %q, metrics %v", r.Message, r.Metrics)
	}
}

// TestEquivalent: runs agree as sets per row; −1 places must match.
func TestEquivalent(t *testing.T) {
	c := handCase(t, 2, 1, true, [][]uint32{{fb(3), fb(2), fb(1)}, {fb(1)}}, []int32{3, 1}, [][]int32{{0, 1, 2}, {5}})
	k := Kernel{}
	a := runRef(t, c)
	b := runRef(t, c)
	if err := k.Equivalent(c, a, b); err != nil {
		t.Fatal(err)
	}
	setRow(b[0], 0, 2, []int32{1, 0}) // same set, other order
	setRow(b[1], 0, 2, []int32{1, 0})
	if err := k.Equivalent(c, a, b); err != nil {
		t.Errorf("reordered: %v", err)
	}
	setRow(b[1], 0, 2, []int32{2, 0})
	if err := k.Equivalent(c, a, b); err == nil || err.Error() != "row 0: raw_indices differ as sets between runs (sorted entry 1: 1 vs 2)" {
		t.Errorf("different set: %v", err)
	}
	b = runRef(t, c)
	setRow(b[0], 1, 2, []int32{5, 7})
	if err := k.Equivalent(c, a, b); err == nil || err.Error() != "row 1: page_indices[1][1] is -1 in one run and 7 in the other" {
		t.Errorf("tail: %v", err)
	}
	w := k.Written(c)
	if len(w) != 2 || w[0][0] != (difftest.Range{Off: 0, Len: 16}) || w[1][0] != (difftest.Range{Off: 0, Len: 16}) {
		t.Errorf("Written %v", w)
	}
}

// TestCheckGarbage: arbitrary outputs (poison, out-of-range, negative,
// huge, INT_MIN) give a verdict, never a panic, and are never accepted.
func TestCheckGarbage(t *testing.T) {
	st := rng.NewStream(5, 0, 0)
	for _, raw := range []bool{true, false} {
		c := gen(t, "specials", "garbage", map[string]any{"K": int64(8), "P": int64(4), "lengths": ints(0, 3, 8, 9, 40), "raw": raw})
		want := runRef(t, c)
		pool := []int32{-1, 0, 1, 7, 8, 39, 40, 41, math.MinInt32, math.MaxInt32, -5, int32(0xA5A5A5A5 - 1<<32)}
		for trial := 0; trial < 300; trial++ {
			got := runRef(t, c)
			for n := 1 + st.Intn(3); n > 0; n-- {
				o := got[st.Intn(len(got))]
				o.SetI32(st.Intn(o.Len()), pool[st.Intn(len(pool))]+int32(st.Intn(2)))
			}
			same := true
			for i := range got {
				same = same && slices.Equal(got[i].Data, want[i].Data)
			}
			r := Check(c, got, want)
			if same && r.Failed() {
				t.Fatalf("raw=%v trial %d: the reference's own outputs rejected: %s", raw, trial, r.Message)
			}
			if !same && !r.Failed() {
				// A change can still be valid (e.g. another slot of the
				// same tie); confirm with an independent reading.
				if !tieSwap(c, got, want) {
					t.Fatalf("raw=%v trial %d: invalid outputs accepted", raw, trial)
				}
			}
		}
		// Poison everywhere.
		got := newOuts(c)
		if r := Check(c, got, want); !r.Failed() {
			t.Errorf("raw=%v: poisoned outputs accepted", raw)
		}
	}
}

// tieSwap is an independent, brute-force reading of validity for the
// garbage test: each row's entries decode (raw, or page_indices by
// scanning every position's slot) to distinct positions in [0, L) with −1
// exactly where want has it, and their score bits sorted equal want's.
func tieSwap(c *difftest.Case, got, want []*difftest.Tensor) bool {
	p := c.Params.(*Params)
	slotOf := func(b, i int) int32 {
		return c.Inputs[2].I32(b*p.MaxPages+i/p.P)*int32(p.P) + int32(i%p.P)
	}
	decode := func(outs []*difftest.Tensor, b, j int) int {
		if p.ReturnRaw {
			i := int(outs[1].I32(b*p.K + j))
			if i >= 0 && i < int(c.Inputs[1].I32(b)) && outs[0].I32(b*p.K+j) == slotOf(b, i) {
				return i
			}
			return -2
		}
		s := outs[0].I32(b*p.K + j)
		for i := 0; i < int(c.Inputs[1].I32(b)); i++ {
			if slotOf(b, i) == s {
				return i
			}
		}
		return -2
	}
	for b := 0; b < p.Batch; b++ {
		var g, w []uint32
		seen := map[int]bool{}
		for j := 0; j < p.K; j++ {
			if (want[0].I32(b*p.K+j) == -1) != (got[0].I32(b*p.K+j) == -1) {
				return false
			}
			if want[0].I32(b*p.K+j) == -1 {
				continue
			}
			gi, wi := decode(got, b, j), decode(want, b, j)
			if gi < 0 || seen[gi] {
				return false
			}
			seen[gi] = true
			g = append(g, c.Inputs[0].U32(b*p.Stride+gi))
			w = append(w, c.Inputs[0].U32(b*p.Stride+wi))
		}
		slices.Sort(g)
		slices.Sort(w)
		if !slices.Equal(g, w) {
			return false
		}
	}
	return true
}

// An L = 0 row has no picks (n = 0): any entry but −1 is also outside
// [0, L), reported as out_of_range before the padding rule it breaks, as
// docs/contracts/topk_transform.md's rule 1 states; without raw_indices
// a slot read back through the row's table is a position past L too.
func TestCheckEmptyRow(t *testing.T) {
	for _, tc := range []struct {
		name      string
		raw       bool
		page, got []int32
		msg       string
	}{
		{"a position", true, []int32{40, -1}, []int32{0, -1},
			"row 1: raw_indices[1][0] = 0 is a pick at or past L = 0 (outside [0, L)); also 2 entries break the padding rule"},
		{"a negative", true, []int32{-7, -1}, []int32{-7, -1},
			"row 1: raw_indices[1][0] = -7 is outside [0, L = 0); also 2 entries break the padding rule"},
		{"a slot of the row's own page, no raw_indices", false, []int32{40, -1}, nil,
			"row 1: page_indices[1][0] = 40 is a pick at or past L: position 0 ≥ L = 0 (page_table[1][0] = 20, offset 0); also 1 entries break the padding rule"},
	} {
		c := handCase(t, 2, 2, tc.raw, [][]uint32{{fb(3), fb(2), fb(1)}, {}}, []int32{3, 0}, [][]int32{{10, 11}, {20, 21}})
		want := runRef(t, c)
		got := runRef(t, c)
		setRow(got[0], 1, 2, tc.page)
		if tc.raw {
			setRow(got[1], 1, 2, tc.got)
		}
		r := Check(c, got, want)
		if r.Message != tc.msg || r.Metrics["failed_rule"] != "out_of_range" {
			t.Errorf("%s: got %q (%v)\nwant %q (out_of_range)", tc.name, r.Message, r.Metrics["failed_rule"], tc.msg)
		}
	}
}
