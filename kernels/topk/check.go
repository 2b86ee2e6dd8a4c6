// The exact, tie-aware validity check of topk_transform (docs/contracts/topk_transform.md,
// "Validity check", rules 1–3) with recall, Jaccard, tie band and needle
// diagnostics.

package topk

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// maxWorst caps the elements listed per rule and case.
const maxWorst = 8

// The rules of the validity check, in the order checkRow applies them.
// Each is a counter metric of the Result under its name, and the name of
// the first failing row's rule is the "failed_rule" metric (the table's
// key metric, see Kernel.KeyMetric).
const (
	rulePadding    = iota // rule 1: −1 inside the first min(K, L) entries, or not −1 after them
	ruleOutOfRange        // rule 2: raw_indices outside [0, L)
	ruleWrongSlot         // rule 2: page_indices ≠ slot(raw), or (without raw) no slot of the row
	ruleDuplicate         // rule 2: a position chosen more than once
	ruleOutOfOrder        // L ≤ K: entry j is not position j
	ruleMissing           // rule 3: ranks above the K-th, not chosen
	ruleExtra             // rule 3: chosen, ranks below the K-th
	nRules
)

// ruleNames are the metric names of the rules.
var ruleNames = [nRules]string{"padding", "out_of_range", "wrong_slots", "duplicates", "out_of_order", "missing", "extra"}

// Check decides whether got (page_indices, and raw_indices when the case
// returns them) is a valid result for c. want is the reference's output;
// it only feeds the recall and Jaccard diagnostics, since any tie-break is
// valid. For each row b with L = seq_lens[b] and n = min(K, L):
//
//  1. exactly the first n entries are not −1, in both outputs; when L ≤ K
//     the row must be exactly 0, 1, …, L−1 (docs/contracts/topk_transform.md, "L ≤ K");
//  2. raw indices are distinct and in [0, L), and page_indices[j] ==
//     slot(raw[j]); without raw_indices each page index is mapped back to
//     its position through the row's page table (injective, by Validate),
//     and one that does not map back is reported alone, the selection
//     unchecked (see pageFault);
//  3. when L > K: every position whose key32 ranks strictly above the
//     K-th largest key is chosen and no chosen position ranks below it.
//     With K distinct picks this is exactly "the sorted chosen keys equal
//     the sorted top-K keys"; "every chosen key ≥ the K-th" alone would
//     accept {2, 2} from [3, 2, 2, 2] with K = 2.
//
// A row is checked rule by rule; within the first rule it breaks every
// offending entry is counted, and the later rules are not applied to it
// (their reading would rest on broken entries). The first failing row
// (lowest b) gives the Result's Class (Mismatch) and its one-line Message,
// unless a row breaks out_of_range: then the first such row gives them, a
// pick at or past L being the cause to name (docs/failures.md).
//
// Metrics (all rows summed): valid (bool); one int counter per rule:
// padding (rule-1 entries), out_of_range (raw indices outside [0, L)),
// wrong_slots (page indices that are not slot(raw), or without
// raw_indices not a slot of the row), duplicates (entries repeating an
// earlier entry's position), out_of_order (short-row entries not at their
// own position), missing and extra (rule-3 positions); failed_rule
// (failures only: the counter name of the Message's rule); recall and
// jaccard of the chosen positions against want's (ties may legitimately
// differ); tie_band (positions whose key equals a row's K-th key, over
// rows with L > K); needle_found (needle cases: whether every planted
// maximum was chosen). Worst lists up to 8 offenders per rule, those of
// the Message's rule first: output entries as page_indices[b][j] or
// raw_indices[b][j], rule-3 positions as scores[b][i] with their f32 bits
// and value.
func Check(c *difftest.Case, got, want []*difftest.Tensor) difftest.Result {
	v, err := newView(c)
	if err != nil {
		return difftest.Result{Class: difftest.InvalidCase, Message: err.Error()}
	}
	gPage, gRaw, err := outputs(c, v.p, got)
	if err != nil {
		return difftest.Result{Class: difftest.BadOutput, Message: err.Error()}
	}
	wPage, wRaw, err := outputs(c, v.p, want)
	if err != nil {
		return difftest.Result{Class: difftest.BadOutput, Message: "reference: " + err.Error()}
	}
	rows := make([]rowVerdict, v.p.Batch)
	_ = parallelRows(v.p.Batch, func(s *checkScratch, b int) error {
		rows[b] = v.checkRow(b, gPage, gRaw, wPage, wRaw, s)
		return nil
	})
	if gRaw == nil {
		if res, ok := v.pageFault(rows); ok {
			return res
		}
	}
	return summarize(rows)
}

// rowVerdict is the outcome of one row.
type rowVerdict struct {
	msg          string // first broken rule; empty if valid
	rule         int    // the rule of msg
	inter, union int    // |got ∩ want|, |got ∪ want| over chosen positions
	wantN        int
	tieBand      int
	count        [nRules]int
	worst        [nRules][]difftest.Element // capped at maxWorst
	needle       int                        // 1 found, 0 missed, −1 no needle in this row
	// unmapped is the first page index of the row that does not map back
	// through its page table (no raw_indices; see decode), if any.
	unmapped *unmappedSlot
}

// unmappedSlot is a page_indices entry that no position of its row maps
// to: page_indices[b][j] = slot, whose page id is either not among the
// row's used pages (page < 0) or is its page `page`, at an offset that
// puts the position at or past L.
type unmappedSlot struct {
	b, j     int
	slot, id int64
	page     int   // the row's page index holding id, or −1
	offset   int64 // slot & (P−1)
	pos      int64 // page·P + offset when page ≥ 0
	L, used  int   // seq_lens[b], ceil(L/P)
	negative bool  // slot < 0 (−1 in the first min(K, L) entries is rule 1's)
}

// reason says why u does not map back, for messages and Element.Want.
func (u unmappedSlot) reason() string {
	switch {
	case u.negative:
		return "a slot is never negative"
	case u.page < 0:
		return fmt.Sprintf("page id %d is not among its %d used pages", u.id, u.used)
	default:
		return fmt.Sprintf("page id %d is its page %d, and offset %d makes position %d ≥ L = %d", u.id, u.page, u.offset, u.pos, u.L)
	}
}

// slotFormula writes how slot(raw i) of row b is made, for a wrong_slots
// message: "page_table[1][2]·P + 5 = 90·64 + 5", the page-table entry,
// the page size and the offset within the page, so that a slot one page
// off, of another page size or without its offset reads as such.
func (v *view) slotFormula(b, i int) string {
	pj, off := i>>v.shift, i&(v.p.P-1)
	return fmt.Sprintf("page_table[%d][%d]·P + %d = %d·%d + %d", b, pj, off, v.table.I32(b*v.p.MaxPages+pj), v.p.P, off)
}

// slotParts writes a slot as its page id and offset under the case's
// page size: "5765 (page 90 offset 5)", "-64 (page -1 offset 0)" (floor
// division, so a negative slot has an offset in [0, P)).
func (v *view) slotParts(sl int64) string {
	return fmt.Sprintf("%d (page %d offset %d)", sl, sl>>v.shift, sl&int64(v.p.P-1))
}

// offend counts one offender of rule; the first offender of the row sets
// the row's message.
func (r *rowVerdict) offend(rule int, e difftest.Element, b int, format string, args ...any) {
	r.count[rule]++
	if len(r.worst[rule]) < maxWorst {
		r.worst[rule] = append(r.worst[rule], e)
	}
	if r.msg == "" {
		r.msg = fmt.Sprintf("row %d: ", b) + fmt.Sprintf(format, args...)
		r.rule = rule
	}
}

// checkScratch is per-worker memory for checkRow.
type checkScratch struct {
	pos, wpos []int64
	at        []int32 // per position: 1 + entry index that chose it, 0 if none
	keys      []uint32
	sel       scratch
}

// entry names output entry [b][j] of t.
func entry(t *difftest.Tensor, b, j int) (string, string) {
	return t.Name, fmt.Sprintf("[%d][%d]", b, j)
}

// checkRow applies rules 1–3 to row b.
func (v *view) checkRow(b int, gPage, gRaw, wPage, wRaw *difftest.Tensor, s *checkScratch) (r rowVerdict) {
	K, L := v.p.K, v.length(b)
	n := min(K, L)
	r.needle = -1
	// Rule 1: −1 exactly in the tail.
	for _, t := range []*difftest.Tensor{gPage, gRaw} {
		if t == nil {
			continue
		}
		for j := 0; j < K; j++ {
			x := t.I32(b*K + j)
			if j < n && x == -1 {
				name, idx := entry(t, b, j)
				r.offend(rulePadding, difftest.Element{Tensor: name, Index: idx, Got: "-1", Want: fmt.Sprintf("a pick (entry < min(K, L) = %d)", n)},
					b, "%s[%d][%d] = -1 inside the first min(K, L) = %d entries (L = %d)", t.Name, b, j, n, L)
			}
			if j >= n && x != -1 {
				name, idx := entry(t, b, j)
				r.offend(rulePadding, difftest.Element{Tensor: name, Index: idx, Got: fmt.Sprint(x), Want: fmt.Sprintf("-1 (entry ≥ min(K, L) = %d)", n)},
					b, "%s[%d][%d] = %d past the first min(K, L) = %d entries must be -1 (L = %d)", t.Name, b, j, x, n, L)
			}
		}
	}
	if r.msg != "" {
		// A pick outside the row is the cause when both fail (a −inf
		// pick emitted as −1 leaves a hole, the pick past L that took
		// its place is the bug): it leads the message.
		var past rowVerdict
		v.pastRow(b, gPage, gRaw, &past)
		if past.msg != "" {
			pad := r.count[rulePadding]
			r.msg, r.rule = fmt.Sprintf("%s; also %d entries break the padding rule", past.msg, pad), ruleOutOfRange
			r.count[ruleOutOfRange] = past.count[ruleOutOfRange]
			r.worst[ruleOutOfRange] = past.worst[ruleOutOfRange]
		}
		return r
	}
	// Rule 2: positions in range, page_indices = slot(raw), distinct.
	s.pos = v.decode(b, n, gPage, gRaw, s.pos, &r)
	if r.msg != "" {
		return r
	}
	pick := gPage
	if gRaw != nil {
		pick = gRaw
	}
	s.at = grow(s.at, L)
	clear(s.at)
	for j, i := range s.pos {
		if prev := s.at[i]; prev != 0 {
			name, idx := entry(pick, b, j)
			r.offend(ruleDuplicate, difftest.Element{Tensor: name, Index: idx, Got: fmt.Sprintf("position %d", i), Want: fmt.Sprintf("a position not already chosen by entry %d", prev-1)},
				b, "position %d chosen twice (entries %d and %d)", i, prev-1, j)
			continue
		}
		s.at[i] = int32(j + 1)
	}
	if r.msg != "" {
		return r
	}
	if L <= K {
		for j, i := range s.pos {
			if i != int64(j) {
				name, idx := entry(pick, b, j)
				r.offend(ruleOutOfOrder, difftest.Element{Tensor: name, Index: idx, Got: fmt.Sprintf("position %d", i), Want: fmt.Sprintf("position %d", j)},
					b, "short row (L = %d ≤ K = %d) must list positions 0..L-1 in order: entry %d is position %d", L, K, j, i)
			}
		}
		if r.msg != "" {
			return r
		}
	}
	// Diagnostics against the reference's choice.
	var wr rowVerdict
	s.wpos = v.decode(b, n, wPage, wRaw, s.wpos, &wr)
	if wr.msg == "" {
		r.wantN = len(s.wpos)
		for _, i := range s.wpos {
			if s.at[i] != 0 {
				r.inter++
			}
		}
		r.union = len(s.pos) + len(s.wpos) - r.inter
	}
	if needles := v.p.Needles; b < len(needles) && needles[b] >= 0 && needles[b] < L {
		r.needle = 0
		if s.at[needles[b]] != 0 {
			r.needle = 1
		}
	}
	if L <= K {
		return r
	}
	// Rule 3: nothing above the K-th left out, nothing below it taken. The
	// message names the first missing position if any, else the first
	// extra one.
	s.keys = v.keys(b, L, s.keys)
	kth, _ := threshold(s.keys, K, &s.sel)
	kthDesc := v.describeKey(kth)
	var extra rowVerdict
	for i, x := range s.keys {
		chosen := s.at[i] != 0
		switch {
		case x == kth:
			r.tieBand++
		case x > kth && !chosen:
			r.offend(ruleMissing, difftest.Element{Tensor: TensorScores, Index: fmt.Sprintf("[%d][%d]", b, i), Got: "not chosen", Want: "chosen: " + v.describe(b, i)},
				b, "position %d (%s) ranks above the K-th (%s) but is not chosen", i, v.describe(b, i), kthDesc)
		case x < kth && chosen:
			extra.offend(ruleExtra, difftest.Element{Tensor: TensorScores, Index: fmt.Sprintf("[%d][%d]", b, i), Got: "chosen: " + v.describe(b, i), Want: "not chosen"},
				b, "position %d (%s) is chosen but ranks below the K-th (%s)", i, v.describe(b, i), kthDesc)
		}
	}
	r.count[ruleExtra], r.worst[ruleExtra] = extra.count[ruleExtra], extra.worst[ruleExtra]
	if r.msg == "" {
		r.msg, r.rule = extra.msg, extra.rule
	}
	return r
}

// decode returns the n chosen positions of row b: raw_indices when
// present (checking page_indices[j] == slot(raw[j])), else page_indices
// mapped back through the row's page table. Every entry that is out of
// range or not the right slot is counted in r (rules out_of_range and
// wrong_slots); the positions are then meaningless.
func (v *view) decode(b, n int, page, raw *difftest.Tensor, pos []int64, r *rowVerdict) []int64 {
	K, L := v.p.K, v.length(b)
	pos = grow(pos, n)
	if raw != nil {
		for j := range pos {
			i := int64(raw.I32(b*K + j))
			pos[j] = i
			if i < 0 || i >= int64(L) {
				v.offendRaw(b, j, i, raw, r)
				continue
			}
			if got, want := int64(page.I32(b*K+j)), v.slot(b, int(i)); got != want {
				name, idx := entry(page, b, j)
				r.offend(ruleWrongSlot, difftest.Element{Tensor: name, Index: idx, Got: v.slotParts(got), Want: fmt.Sprintf("%d = slot(raw %d) = %s", want, i, v.slotFormula(b, int(i)))},
					b, "page_indices[%d][%d] = %s, want slot(raw %d) = %d = %s (L = %d, P = %d)", b, j, v.slotParts(got), i, want, v.slotFormula(b, int(i)), L, v.p.P)
			}
		}
		return pos
	}
	// Invert: group the entries by page id, then scan the used table once.
	byPage := make(map[int64][]int, n)
	for j := range pos {
		sl := int64(page.I32(b*K + j))
		pos[j] = -1
		if sl >= 0 {
			byPage[sl>>v.shift] = append(byPage[sl>>v.shift], j)
		}
	}
	used := (L + v.p.P - 1) >> v.shift
	for pj := 0; pj < used && len(byPage) > 0; pj++ {
		id := int64(v.table.I32(b*v.p.MaxPages + pj))
		for _, j := range byPage[id] {
			pos[j] = int64(pj)<<v.shift | int64(page.I32(b*K+j))&int64(v.p.P-1)
		}
		delete(byPage, id)
	}
	var own map[int64]int
	for j, i := range pos {
		if i >= 0 && i < int64(L) {
			continue
		}
		sl := int64(page.I32(b*K + j))
		if pj, at, ok := v.ownPosition(b, sl, &own); ok && at >= int64(L) {
			v.offendPast(b, j, sl, pj, at, page, r)
			continue
		}
		u := unmappedSlot{b: b, j: j, slot: sl, id: sl >> v.shift, page: -1, offset: sl & int64(v.p.P-1), L: L, used: used, negative: sl < 0}
		if i >= int64(L) {
			u.page, u.pos = int(i>>v.shift), i
		}
		name, idx := entry(page, b, j)
		r.offend(ruleWrongSlot, difftest.Element{Tensor: name, Index: idx, Got: fmt.Sprint(sl), Want: fmt.Sprintf("a slot of row %d's page table (%s)", b, u.reason())},
			b, "page_indices[%d][%d] = %d does not map back through row %d's page table: %s", b, j, sl, b, u.reason())
		if r.unmapped == nil {
			first := u
			r.unmapped = &first
		}
	}
	return pos
}

// offendRaw counts raw_indices[b][j] = i, outside [0, L), under rule
// out_of_range; the message says which side of the row it lies on.
func (v *view) offendRaw(b, j int, i int64, raw *difftest.Tensor, r *rowVerdict) {
	L := v.length(b)
	name, idx := entry(raw, b, j)
	e := difftest.Element{Tensor: name, Index: idx, Got: fmt.Sprint(i), Want: fmt.Sprintf("a position in [0, L = %d)", L)}
	switch {
	case i >= int64(v.p.Stride):
		r.offend(ruleOutOfRange, e, b, "raw_indices[%d][%d] = %d is out of the row (stride %d, L = %d)", b, j, i, v.p.Stride, L)
	case i >= int64(L):
		r.offend(ruleOutOfRange, e, b, "raw_indices[%d][%d] = %d is a pick at or past L = %d (outside [0, L))", b, j, i, L)
	default:
		r.offend(ruleOutOfRange, e, b, "raw_indices[%d][%d] = %d is outside [0, L = %d)", b, j, i, L)
	}
}

// offendPast counts page_indices[b][j] = sl, which reads back through row
// b's own page table (its entry pj) to position at ≥ L, under rule
// out_of_range: a pick past the row's length.
func (v *view) offendPast(b, j int, sl int64, pj int, at int64, page *difftest.Tensor, r *rowVerdict) {
	L := v.length(b)
	name, idx := entry(page, b, j)
	r.offend(ruleOutOfRange, difftest.Element{Tensor: name, Index: idx, Got: fmt.Sprintf("%d (position %d)", sl, at), Want: fmt.Sprintf("the slot of a position in [0, L = %d)", L)},
		b, "page_indices[%d][%d] = %d is a pick at or past L: position %d ≥ L = %d (page_table[%d][%d] = %d, offset %d)",
		b, j, sl, at, L, b, pj, sl>>v.shift, sl&int64(v.p.P-1))
}

// ownPosition reads slot sl back through all of row b's page table
// (max_pages entries, used or not): the first entry pj holding its page id
// and the position pj·P + (sl & (P−1)). *own caches the row's inverted
// table between calls (nil at first). ok is false for a negative slot or
// a page id the row's table does not hold.
func (v *view) ownPosition(b int, sl int64, own *map[int64]int) (pj int, at int64, ok bool) {
	if sl < 0 {
		return 0, 0, false
	}
	if *own == nil {
		*own = make(map[int64]int, v.p.MaxPages)
		for p := v.p.MaxPages - 1; p >= 0; p-- {
			(*own)[int64(v.table.I32(b*v.p.MaxPages+p))] = p
		}
	}
	pj, ok = (*own)[sl>>v.shift]
	return pj, int64(pj)<<v.shift | sl&int64(v.p.P-1), ok
}

// pastRow counts in r every entry of row b, −1 aside, that is a pick
// outside the row: a raw index outside [0, L), or without raw_indices a
// page index that reads back through the row's own page table to a
// position ≥ L (ownPosition). checkRow applies it when rule 1 fails, so
// that such a pick, the cause, is named before the padding rule it also
// breaks.
func (v *view) pastRow(b int, page, raw *difftest.Tensor, r *rowVerdict) {
	K, L := v.p.K, v.length(b)
	var own map[int64]int
	for j := 0; j < K; j++ {
		if raw != nil {
			if i := int64(raw.I32(b*K + j)); i != -1 && (i < 0 || i >= int64(L)) {
				v.offendRaw(b, j, i, raw, r)
			}
			continue
		}
		sl := int64(page.I32(b*K + j))
		if sl == -1 {
			continue
		}
		if pj, at, ok := v.ownPosition(b, sl, &own); ok && at >= int64(L) {
			v.offendPast(b, j, sl, pj, at, page, r)
		}
	}
}

// pageFault reports, for a case without raw_indices, a page index that
// does not map back through its row's page table: the positions of every
// row are read back through the table, so once one entry is known not to
// be a slot of its row, the others may be slots of the wrong positions,
// and selection errors (rule 3, duplicates, order) would send the reader
// to the wrong bug. The Result is the page-table fault alone: Message
// names the first such entry (lowest row, then entry): its row, output
// index j, slot value and why it does not map back (a negative slot; a
// page id not among the row's ceil(L/P) used pages, with the row whose
// table does hold it, if one does; or an offset that puts the position
// at or past L). Metrics keep valid, failed_rule (wrong_slots) and the
// counters padding, out_of_range and wrong_slots, which do not rest on
// the read-back positions; duplicates, out_of_order, missing, extra,
// recall, jaccard, tie_band and needle_found are left out (not checked).
// Worst lists the unmapped entries, then rule-1 entries. ok is false when
// every page index maps back.
func (v *view) pageFault(rows []rowVerdict) (difftest.Result, bool) {
	var u *unmappedSlot
	for i := range rows {
		if rows[i].unmapped != nil {
			u = rows[i].unmapped
			break
		}
	}
	if u == nil {
		return difftest.Result{}, false
	}
	where := ""
	if !u.negative && u.page < 0 {
		if fb, fp, ok := v.holder(u.id, u.b); ok {
			where = fmt.Sprintf(" (it is page_table[%d][%d], a page of row %d)", fb, fp, fb)
		}
	}
	res := difftest.Result{Class: difftest.Mismatch, Message: fmt.Sprintf("row %d: page_indices[%d][%d] = %d does not map back through row %d's page table: %s%s; the selection is not checked (without raw_indices every position is read back through the page table)",
		u.b, u.b, u.j, u.slot, u.b, u.reason(), where)}
	var count [nRules]int
	var worst [nRules][]difftest.Element
	for _, r := range rows {
		for _, k := range []int{ruleWrongSlot, rulePadding, ruleOutOfRange} {
			count[k] += r.count[k]
			if room := maxWorst - len(worst[k]); room > 0 {
				worst[k] = append(worst[k], r.worst[k][:min(len(r.worst[k]), room)]...)
			}
		}
	}
	res.Metrics = map[string]any{"valid": false, "failed_rule": ruleNames[ruleWrongSlot]}
	for _, k := range []int{ruleWrongSlot, rulePadding, ruleOutOfRange} {
		res.Metrics[ruleNames[k]] = count[k]
		res.Worst = append(res.Worst, worst[k]...)
	}
	return res, true
}

// holder finds a row other than b whose used pages hold page id: the
// first such (row, page index) in row order.
func (v *view) holder(id int64, b int) (int, int, bool) {
	for rb := 0; rb < v.p.Batch; rb++ {
		if rb == b {
			continue
		}
		used := (v.length(rb) + v.p.P - 1) >> v.shift
		for pj := 0; pj < used; pj++ {
			if int64(v.table.I32(rb*v.p.MaxPages+pj)) == id {
				return rb, pj, true
			}
		}
	}
	return 0, 0, false
}

// describe formats scores[b][i] as "f32 0x3f800000 = 1".
// For 16-bit scores, "bf16 0x3f80 = 1" (scores16.go).
func (v *view) describe(b, i int) string { return v.describeScore(v.bits(b, i)) }

func describeBits(bits uint32) string {
	return fmt.Sprintf("f32 %#08x = %s", bits, strconv.FormatFloat(float64(math.Float32frombits(bits)), 'g', -1, 32))
}

// summarize folds the row verdicts into one Result.
func summarize(rows []rowVerdict) difftest.Result {
	var (
		res                       difftest.Result
		inter, union, wantN, ties int
		count                     [nRules]int
		worst                     [nRules][]difftest.Element
		needles, found            int
		first                     = -1 // the rule of the Message
	)
	// The Message is the first failing row's, or the first row's with a
	// pick out of its range when any row has one: a pick at or past L is
	// the cause to name first, whatever an earlier row breaks.
	lead := slices.IndexFunc(rows, func(r rowVerdict) bool { return r.msg != "" && r.rule == ruleOutOfRange })
	if lead < 0 {
		lead = slices.IndexFunc(rows, func(r rowVerdict) bool { return r.msg != "" })
	}
	if lead >= 0 {
		r := rows[lead]
		res.Class, res.Message = difftest.Mismatch, r.msg
		res.Metrics = map[string]any{"failed_rule": ruleNames[r.rule]}
		first = r.rule
	}
	for _, r := range rows {
		inter += r.inter
		union += r.union
		wantN += r.wantN
		ties += r.tieBand
		for k := range count {
			count[k] += r.count[k]
			if room := maxWorst - len(worst[k]); room > 0 {
				worst[k] = append(worst[k], r.worst[k][:min(len(r.worst[k]), room)]...)
			}
		}
		if r.needle >= 0 {
			needles++
			found += r.needle
		}
	}
	ratio := func(a, b int) float64 {
		if b == 0 {
			return 1
		}
		return float64(a) / float64(b)
	}
	if res.Metrics == nil {
		res.Metrics = map[string]any{}
	}
	res.Metrics["valid"] = !res.Failed()
	res.Metrics["recall"] = ratio(inter, wantN)
	res.Metrics["jaccard"] = ratio(inter, union)
	res.Metrics["tie_band"] = ties
	// The offenders of the Message's rule first, so that a report that
	// shows the first few shows the rule the message names.
	if first >= 0 {
		res.Worst = append(res.Worst, worst[first]...)
	}
	for k, name := range ruleNames {
		res.Metrics[name] = count[k]
		if k != first {
			res.Worst = append(res.Worst, worst[k]...)
		}
	}
	if needles > 0 {
		res.Metrics["needle_found"] = found == needles
	}
	return res
}
