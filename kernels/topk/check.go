// The exact, tie-aware validity check of topk_transform (DESIGN.md §3,
// "Validity check", rules 1–3) with recall, Jaccard, tie band and needle
// diagnostics.

package topk

import (
	"fmt"
	"math"
	"strconv"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// maxWorst caps the missing and the extra positions listed per case.
const maxWorst = 8

// Check decides whether got (page_indices, and raw_indices when the case
// returns them) is a valid result for c. want is the reference's output;
// it only feeds the recall and Jaccard diagnostics, since any tie-break is
// valid. For each row b with L = seq_lens[b] and n = min(K, L):
//
//  1. exactly the first n entries are not −1, in both outputs; when L ≤ K
//     the row must be exactly 0, 1, …, L−1 (DESIGN.md §3, "L ≤ K");
//  2. raw indices are distinct and in [0, L), and page_indices[j] ==
//     slot(raw[j]); without raw_indices each page index is mapped back to
//     its position through the row's page table (injective, by Validate);
//  3. when L > K: every position whose key32 ranks strictly above the
//     K-th largest key is chosen and no chosen position ranks below it.
//     With K distinct picks this is exactly "the sorted chosen keys equal
//     the sorted top-K keys"; "every chosen key ≥ the K-th" alone would
//     accept {2, 2} from [3, 2, 2, 2] with K = 2.
//
// The first failing row (lowest b) gives the Result's Class (Mismatch) and
// its one-line Message. Metrics: valid (bool), recall and jaccard of the
// chosen positions against want's (ties may legitimately differ), tie_band
// (positions whose key equals a row's K-th key, summed over rows with
// L > K), missing and extra (positions breaking rule 3), and needle_found
// (needle cases: whether every planted maximum was chosen). Worst lists up
// to 8 missing and 8 extra positions with their f32 values.
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
	return summarize(rows)
}

// rowVerdict is the outcome of one row.
type rowVerdict struct {
	msg            string // first broken rule; empty if valid
	inter, union   int    // |got ∩ want|, |got ∪ want| over chosen positions
	wantN          int
	tieBand        int
	missing, extra []difftest.Element // rule-3 offenders (capped)
	nMiss, nExtra  int
	needle         int // 1 found, 0 missed, −1 no needle in this row
}

// checkScratch is per-worker memory for checkRow.
type checkScratch struct {
	pos, wpos []int64
	at        []int32 // per position: 1 + entry index that chose it, 0 if none
	keys      []uint32
	sel       scratch
}

// checkRow applies rules 1–3 to row b.
func (v *view) checkRow(b int, gPage, gRaw, wPage, wRaw *difftest.Tensor, s *checkScratch) (r rowVerdict) {
	K, L := v.p.K, v.length(b)
	n := min(K, L)
	r.needle = -1
	fail := func(format string, args ...any) rowVerdict {
		r.msg = fmt.Sprintf("row %d: ", b) + fmt.Sprintf(format, args...)
		return r
	}
	// Rule 1: −1 exactly in the tail.
	for _, t := range []*difftest.Tensor{gPage, gRaw} {
		if t == nil {
			continue
		}
		for j := 0; j < K; j++ {
			x := t.I32(b*K + j)
			if j < n && x == -1 {
				return fail("%s[%d][%d] = -1 inside the first min(K, L) = %d entries (L = %d)", t.Name, b, j, n, L)
			}
			if j >= n && x != -1 {
				return fail("%s[%d][%d] = %d past the first min(K, L) = %d entries must be -1 (L = %d)", t.Name, b, j, x, n, L)
			}
		}
	}
	// Rule 2: positions in range, distinct, page_indices = slot(raw).
	var msg string
	s.pos, msg = v.decode(b, n, gPage, gRaw, s.pos)
	if msg != "" {
		return fail("%s", msg)
	}
	s.at = grow(s.at, L)
	clear(s.at)
	for j, i := range s.pos {
		if prev := s.at[i]; prev != 0 {
			return fail("position %d chosen twice (entries %d and %d)", i, prev-1, j)
		}
		s.at[i] = int32(j + 1)
	}
	if L <= K {
		for j, i := range s.pos {
			if i != int64(j) {
				return fail("short row (L = %d ≤ K = %d) must list positions 0..L-1 in order: entry %d is position %d", L, K, j, i)
			}
		}
	}
	// Diagnostics against the reference's choice.
	var wmsg string
	s.wpos, wmsg = v.decode(b, n, wPage, wRaw, s.wpos)
	if wmsg == "" {
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
	// Rule 3: nothing above the K-th left out, nothing below it taken.
	s.keys = v.keys(b, L, s.keys)
	kth, _ := threshold(s.keys, K, &s.sel)
	for i, x := range s.keys {
		chosen := s.at[i] != 0
		switch {
		case x == kth:
			r.tieBand++
		case x > kth && !chosen:
			r.nMiss++
			if len(r.missing) < maxWorst {
				r.missing = append(r.missing, difftest.Element{Tensor: TensorPageIndices, Index: fmt.Sprintf("row %d pos %d", b, i), Got: "not chosen", Want: "chosen: " + v.describe(b, i)})
			}
		case x < kth && chosen:
			r.nExtra++
			if len(r.extra) < maxWorst {
				r.extra = append(r.extra, difftest.Element{Tensor: TensorPageIndices, Index: fmt.Sprintf("row %d pos %d", b, i), Got: "chosen: " + v.describe(b, i), Want: "not chosen"})
			}
		}
	}
	if r.nMiss > 0 || r.nExtra > 0 {
		kthBits := numeric.Key32Bits(kth)
		for i, x := range s.keys {
			if x > kth && s.at[i] == 0 {
				return fail("position %d (%s) ranks above the K-th (%s) but is not chosen", i, v.describe(b, i), describeBits(kthBits))
			}
		}
		for i, x := range s.keys {
			if x < kth && s.at[i] != 0 {
				return fail("position %d (%s) is chosen but ranks below the K-th (%s)", i, v.describe(b, i), describeBits(kthBits))
			}
		}
	}
	return r
}

// decode returns the n chosen positions of row b: raw_indices when
// present (checking page_indices[j] == slot(raw[j])), else page_indices
// mapped back through the row's page table. A non-empty message names the
// first entry that is out of range or not a slot of the row.
func (v *view) decode(b, n int, page, raw *difftest.Tensor, pos []int64) ([]int64, string) {
	K, L := v.p.K, v.length(b)
	pos = grow(pos, n)
	if raw != nil {
		for j := range pos {
			i := int64(raw.I32(b*K + j))
			if i < 0 || i >= int64(L) {
				return nil, fmt.Sprintf("raw_indices[%d][%d] = %d outside [0, L = %d)", b, j, i, L)
			}
			if got, want := int64(page.I32(b*K+j)), v.slot(b, int(i)); got != want {
				return nil, fmt.Sprintf("page_indices[%d][%d] = %d, want slot(raw %d) = %d", b, j, got, i, want)
			}
			pos[j] = i
		}
		return pos, ""
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
	for j, i := range pos {
		if i < 0 || i >= int64(L) {
			return nil, fmt.Sprintf("page_indices[%d][%d] = %d is not the slot of any position in [0, L = %d) of the row", b, j, page.I32(b*K+j), L)
		}
	}
	return pos, ""
}

// describe formats scores[b][i] as "f32 0x3f800000 = 1".
func (v *view) describe(b, i int) string { return describeBits(v.bits(b, i)) }

func describeBits(bits uint32) string {
	return fmt.Sprintf("f32 %#08x = %s", bits, strconv.FormatFloat(float64(math.Float32frombits(bits)), 'g', -1, 32))
}

// summarize folds the row verdicts into one Result.
func summarize(rows []rowVerdict) difftest.Result {
	var (
		res                       difftest.Result
		inter, union, wantN, ties int
		nMiss, nExtra             int
		needles, found            int
		missing, extra            []difftest.Element
	)
	for _, r := range rows {
		if r.msg != "" && res.Message == "" {
			res.Class, res.Message = difftest.Mismatch, r.msg
		}
		inter += r.inter
		union += r.union
		wantN += r.wantN
		ties += r.tieBand
		nMiss += r.nMiss
		nExtra += r.nExtra
		if len(missing) < maxWorst {
			missing = append(missing, r.missing[:min(len(r.missing), maxWorst-len(missing))]...)
		}
		if len(extra) < maxWorst {
			extra = append(extra, r.extra[:min(len(r.extra), maxWorst-len(extra))]...)
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
	res.Metrics = map[string]any{
		"valid":    !res.Failed(),
		"recall":   ratio(inter, wantN),
		"jaccard":  ratio(inter, union),
		"tie_band": ties,
		"missing":  nMiss,
		"extra":    nExtra,
	}
	if needles > 0 {
		res.Metrics["needle_found"] = found == needles
	}
	res.Worst = append(missing, extra...)
	return res
}
