// A merge that cannot lose a case: each shard report's records are
// checked against its header (the run's size and selection) and its own
// summary line before MergeNamed joins them.

package report

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// SelectionOf returns what a report header records for `difftest merge`
// to check a shard's records by (Header.Cases, Header.Selected): the
// number of cases of s per seed, before --run and --shard, and the
// positions in s of the cases whose id run matches, nil when run is nil
// or matches every case.
func SelectionOf(s *difftest.Suite, run *regexp.Regexp) (cases int, selected []int) {
	if run == nil {
		return len(s.Cases), nil
	}
	for i, sc := range s.Cases {
		if run.MatchString(sc.Spec.ID()) {
			selected = append(selected, i)
		}
	}
	if len(selected) == len(s.Cases) {
		selected = nil
	}
	return len(s.Cases), selected
}

// mergeShard is what checkCases knows of one report.
type mergeShard struct {
	where    string         // "a.jsonl (shard 1/3)", or the name alone for an unsharded report
	sh       difftest.Shard // N ≥ 1 (an unsharded report is 0/1)
	finished bool           // a summary line that does not say it stopped early
	last     int            // largest Index, −1 without records
}

// checkCases applies MergeNamed's record rules to reports whose headers
// agree and whose shards are one whole split (checkSplit).
func checkCases(names []string, reps []*Report, shards []difftest.Shard) error {
	h := reps[0].Header
	if h.Cases < 1 {
		return fmt.Errorf("merge: %s: its header does not say how many cases the suite has (\"cases\"), so its case lines cannot be checked: it was written by an older difftest; run the shard again", names[0])
	}
	if h.Repeat < 1 {
		return fmt.Errorf("merge: %s: header repeat %d, want ≥ 1", names[0], h.Repeat)
	}
	C, R := h.Cases, h.Repeat
	if R > math.MaxInt/C {
		return fmt.Errorf("merge: %s: header claims %d cases per seed × %d seeds, more than an index can hold", names[0], C, R)
	}
	total := C * R
	for k, p := range h.Selected {
		if p < 0 || p >= C || (k > 0 && p <= h.Selected[k-1]) {
			return fmt.Errorf("merge: %s: header \"selected\" entry %d is %d: want increasing suite positions in [0, %d)", names[0], k, p, C)
		}
	}
	selected := func(p int) bool {
		if len(h.Selected) == 0 {
			return true
		}
		_, ok := slices.BinarySearch(h.Selected, p)
		return ok
	}
	seeds := "seeds"
	if R == 1 {
		seeds = "seed"
	}

	ms := make([]mergeShard, len(reps))
	seen := map[int]string{}  // index → "case seed N"
	posID := map[int]string{} // suite position → case id
	posIdx := map[int]int{}   // suite position → the index that gave posID
	for ri, r := range reps {
		m := mergeShard{where: names[ri], sh: shards[ri], last: -1}
		if m.sh.N == 0 {
			m.sh = difftest.Shard{I: 0, N: 1}
		} else {
			m.where += " (shard " + m.sh.String() + ")"
		}
		m.finished = r.Summary != nil && r.Summary.Aborted == ""
		for _, rec := range r.Records {
			i := rec.Index
			key := fmt.Sprintf("%s seed %d", rec.Case, rec.Seed)
			switch {
			case i < 0 || i >= total:
				return fmt.Errorf("merge: %s: index %d (%s) is outside the run's %d cases (%d per seed × %d %s)", m.where, i, key, total, C, R, seeds)
			case i%m.sh.N != m.sh.I:
				return fmt.Errorf("merge: %s holds index %d (%s), which belongs to shard %d/%d", m.where, i, key, i%m.sh.N, m.sh.N)
			}
			if err := checkRecordFields(m.where, rec); err != nil {
				return err
			}
			if prev, dup := seen[i]; dup {
				return fmt.Errorf("merge: index %d (%s) appears twice in %s (also %s)", i, key, names[ri], prev)
			}
			seen[i] = key
			if want := h.Seed + uint64(i/C); rec.Seed != want {
				return fmt.Errorf("merge: %s: index %d (%s) has seed %d, but index %d is a case of seed %d (%d cases per seed from seed %d)", m.where, i, rec.Case, rec.Seed, i, want, C, h.Seed)
			}
			pos := i % C
			if !selected(pos) {
				return fmt.Errorf("merge: %s: index %d (%s) is suite case %d, which the run's --run did not select", m.where, i, key, pos)
			}
			if id, ok := posID[pos]; !ok {
				posID[pos], posIdx[pos] = rec.Case, i
			} else if id != rec.Case {
				j := posIdx[pos]
				return fmt.Errorf("merge: %s: index %d is %s, but index %d, the same suite case under seed %d, is %s", m.where, i, key, j, h.Seed+uint64(j/C), id)
			}
			m.last = max(m.last, i)
		}
		ms[ri] = m
	}

	describe := func(i int) string {
		pos, seed := i%C, h.Seed+uint64(i/C)
		if id, ok := posID[pos]; ok {
			return fmt.Sprintf("%s seed %d", id, seed)
		}
		return fmt.Sprintf("suite case %d, seed %d", pos, seed)
	}
	if err := walkSelected(h, total, reps, ms, seen, describe); err != nil {
		return err
	}
	for i, r := range reps {
		if r.Summary == nil {
			continue
		}
		var got difftest.Summary
		for _, rec := range r.Records {
			got.Add(rec)
		}
		if got.Passed != r.Summary.Passed || got.Failed != r.Summary.Failed || got.Skipped != r.Summary.Skipped || !sameClasses(got.Classes, r.Summary.Classes) {
			return fmt.Errorf("merge: %s: its summary counts %s, but its case lines are %s", ms[i].where, countWords(*r.Summary), countWords(got))
		}
	}
	return nil
}

// walkSelected visits the indices the run selected in increasing order
// and fails on the first one missing from its shard's report where that
// report should hold it: a finished shard holds all of its indices, one
// cut short every index below its largest. The walk stops once no report
// can still be missing one: past every report's largest index when no
// shard finished, else N seeds past it (which shard an index belongs to
// repeats with a period of at most N seeds, so a finished shard that has
// any index later has one within N seeds). A header can therefore not
// make it run longer than the records given, N seeds and the selection.
func walkSelected(h difftest.Header, total int, reps []*Report, ms []mergeShard, seen map[int]string, describe func(int) string) error {
	C, N := h.Cases, ms[0].sh.N
	byShard := make([]int, N)
	anyFinished, maxLast := false, -1
	for i, m := range ms {
		byShard[m.sh.I] = i
		anyFinished = anyFinished || m.finished
		maxLast = max(maxLast, m.last)
	}
	nPos := C
	if len(h.Selected) > 0 {
		nPos = len(h.Selected)
	}
	stopSeed := -1
	for r := 0; r*C < total; r++ {
		if stopSeed >= 0 && r > stopSeed {
			return nil
		}
		for k := 0; k < nPos; k++ {
			p := k
			if len(h.Selected) > 0 {
				p = h.Selected[k]
			}
			i := r*C + p
			if i > maxLast {
				if !anyFinished {
					return nil
				}
				if stopSeed < 0 {
					stopSeed = r + N
				}
			}
			if _, ok := seen[i]; ok {
				continue
			}
			m := ms[byShard[i%N]]
			rep := reps[byShard[i%N]]
			switch {
			case m.finished:
				return fmt.Errorf("merge: %s lacks index %d (%s): the shard finished (its summary counts %d cases, the file holds %d case lines)",
					m.where, i, describe(i), rep.Summary.Passed+rep.Summary.Failed+rep.Summary.Skipped, len(rep.Records))
			case i < m.last:
				return fmt.Errorf("merge: %s lacks index %d (%s), which comes before its last case line (index %d)", m.where, i, describe(i), m.last)
			}
		}
	}
	return nil
}

func sameClasses(a, b map[difftest.Class]int) bool {
	n := 0
	for c, k := range a {
		if k == 0 {
			continue
		}
		if b[c] != k {
			return false
		}
		n++
	}
	for _, k := range b {
		if k != 0 {
			n--
		}
	}
	return n == 0
}

// countWords renders a summary's counts: "19 cases (18 passed, 1 failed:
// mismatch 1)".
func countWords(s difftest.Summary) string {
	w := fmt.Sprintf("%d cases (%d passed, %d failed", s.Passed+s.Failed+s.Skipped, s.Passed, s.Failed)
	if s.Skipped > 0 {
		w += fmt.Sprintf(", %d not tested", s.Skipped)
	}
	var cs []string
	for c, k := range s.Classes {
		if k != 0 {
			cs = append(cs, fmt.Sprintf("%s %d", c, k))
		}
	}
	sort.Strings(cs)
	if len(cs) > 0 {
		w += ": " + strings.Join(cs, ", ")
	}
	return w + ")"
}
