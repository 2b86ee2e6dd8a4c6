package report

import (
	"fmt"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// runShard is the report of shard sh of a run of `cases` cases per seed
// (ids k/c0 …), seeds 7 … 7+repeat−1, --run keeping `selected` (nil =
// all). It holds records of the given indices, each with its own seed and
// id; index 4 fails (mismatch). The summary counts them when finished.
func runShard(sh string, cases, repeat int, selected []int, finished bool, idx ...int) *Report {
	r := &Report{Header: difftest.Header{Type: "header", Suite: "quick", Seed: 7, Repeat: repeat, Cases: cases, Selected: selected,
		Shard: sh, Impl: "cuda", GeneratorVersion: difftest.GeneratorVersion}}
	s := &difftest.Summary{Elapsed: time.Second}
	for _, i := range idx {
		rec := &difftest.Record{Type: "case", Index: i, Case: fmt.Sprintf("k/c%d", i%cases), Seed: 7 + uint64(i/cases), Verdict: difftest.VerdictPass}
		if i == 4 {
			rec.Verdict, rec.Class = difftest.VerdictFail, difftest.Mismatch
		}
		r.Records = append(r.Records, rec)
		s.Add(rec)
	}
	if finished {
		r.Summary = s
	}
	return r
}

// drop removes the case line of index i from r, leaving its summary as it
// was: a line lost in transfer, or deleted.
func drop(r *Report, i int) *Report {
	for k, rec := range r.Records {
		if rec.Index == i {
			r.Records = append(r.Records[:k:k], r.Records[k+1:]...)
			return r
		}
	}
	panic(fmt.Sprintf("no index %d", i))
}

// edit applies f to the record of index i.
func edit(r *Report, i int, f func(*difftest.Record)) *Report {
	for _, rec := range r.Records {
		if rec.Index == i {
			f(rec)
			return r
		}
	}
	panic(fmt.Sprintf("no index %d", i))
}

// TestMergeLosesNoCase: the two inputs (a shard with one case
// line deleted merged as "passed 18" of 19; a record with index 10^12)
// and the other ways a shard report can disagree with its header or its
// own summary line. Each is an error naming the report and the index.
func TestMergeLosesNoCase(t *testing.T) {
	all6 := func(sh string, idx ...int) *Report { return runShard(sh, 6, 1, nil, true, idx...) }
	names := []string{"a.jsonl", "b.jsonl"}
	recount := func(r *Report) *Report {
		s := &difftest.Summary{Elapsed: r.Summary.Elapsed}
		for _, rec := range r.Records {
			s.Add(rec)
		}
		r.Summary = s
		return r
	}
	tests := []struct {
		name string
		reps []*Report
		want string
	}{
		{"a case line deleted, summary intact", []*Report{all6("0/2", 0, 2, 4), drop(all6("1/2", 1, 3, 5), 3)},
			"merge: b.jsonl (shard 1/2) lacks index 3 (suite case 3, seed 7): the shard finished (its summary counts 3 cases, the file holds 2 case lines)"},
		{"the last case line deleted", []*Report{all6("0/2", 0, 2, 4), drop(all6("1/2", 1, 3, 5), 5)},
			"merge: b.jsonl (shard 1/2) lacks index 5 (suite case 5, seed 7): the shard finished (its summary counts 3 cases, the file holds 2 case lines)"},
		{"a case line deleted and the summary recounted", []*Report{recount(drop(all6("0/2", 0, 2, 4), 2)), all6("1/2", 1, 3, 5)},
			"merge: a.jsonl (shard 0/2) lacks index 2 (suite case 2, seed 7): the shard finished (its summary counts 2 cases, the file holds 2 case lines)"},
		{"a lost line named by its case under another seed", []*Report{runShard("0/2", 3, 2, nil, true, 0, 2, 4), drop(runShard("1/2", 3, 2, nil, true, 1, 3, 5), 5)},
			"merge: b.jsonl (shard 1/2) lacks index 5 (k/c2 seed 8): the shard finished (its summary counts 3 cases, the file holds 2 case lines)"},
		{"a gap in a shard cut short", []*Report{all6("0/2", 0, 2, 4), runShard("1/2", 6, 1, nil, false, 1, 5)},
			"merge: b.jsonl (shard 1/2) lacks index 3 (suite case 3, seed 7), which comes before its last case line (index 5)"},
		{"a gap in a shard stopped by --failfast", []*Report{all6("0/2", 0, 2, 4), func() *Report {
			r := runShard("1/2", 6, 1, nil, true, 1, 5)
			r.Summary.Aborted = "--failfast after k/c5"
			return r
		}()}, "merge: b.jsonl (shard 1/2) lacks index 3 (suite case 3, seed 7), which comes before its last case line (index 5)"},
		{"index 10^12", []*Report{edit(all6("0/2", 0, 2, 4), 2, func(r *difftest.Record) { r.Index = 1_000_000_000_000 }), all6("1/2", 1, 3, 5)},
			"merge: a.jsonl (shard 0/2): index 1000000000000 (k/c2 seed 7) is outside the run's 6 cases (6 per seed × 1 seed)"},
		{"a negative index", []*Report{edit(all6("0/2", 0, 2, 4), 2, func(r *difftest.Record) { r.Index = -2 }), all6("1/2", 1, 3, 5)},
			"merge: a.jsonl (shard 0/2): index -2 (k/c2 seed 7) is outside the run's 6 cases (6 per seed × 1 seed)"},
		{"a seed that is not its index's", []*Report{edit(all6("0/2", 0, 2, 4), 2, func(r *difftest.Record) { r.Seed = 8 }), all6("1/2", 1, 3, 5)},
			"merge: a.jsonl (shard 0/2): index 2 (k/c2) has seed 8, but index 2 is a case of seed 7 (6 cases per seed from seed 7)"},
		{"a case --run did not select", []*Report{runShard("0/2", 6, 1, []int{0, 2, 3}, true, 0, 2), runShard("1/2", 6, 1, []int{0, 2, 3}, true, 3, 5)},
			"merge: b.jsonl (shard 1/2): index 5 (k/c5 seed 7) is suite case 5, which the run's --run did not select"},
		{"one suite case under two ids", []*Report{runShard("0/2", 3, 2, nil, true, 0, 2, 4), edit(runShard("1/2", 3, 2, nil, true, 1, 3, 5), 5, func(r *difftest.Record) { r.Case = "k/other" })},
			"merge: b.jsonl (shard 1/2): index 5 is k/other seed 8, but index 2, the same suite case under seed 7, is k/c2"},
		{"a summary that counts a case more", []*Report{all6("0/2", 0, 2, 4), func() *Report {
			r := all6("1/2", 1, 3, 5)
			r.Summary.Passed++
			return r
		}()}, "merge: b.jsonl (shard 1/2): its summary counts 4 cases (4 passed, 0 failed), but its case lines are 3 cases (3 passed, 0 failed)"},
		{"a failure edited into a pass", []*Report{edit(all6("0/2", 0, 2, 4), 4, func(r *difftest.Record) { r.Verdict, r.Class = difftest.VerdictPass, "" }), all6("1/2", 1, 3, 5)},
			"merge: a.jsonl (shard 0/2): its summary counts 3 cases (2 passed, 1 failed: mismatch 1), but its case lines are 3 cases (3 passed, 0 failed)"},
		{"a failure's class edited", []*Report{edit(all6("0/2", 0, 2, 4), 4, func(r *difftest.Record) { r.Class = difftest.Guard }), all6("1/2", 1, 3, 5)},
			"merge: a.jsonl (shard 0/2): its summary counts 3 cases (2 passed, 1 failed: mismatch 1), but its case lines are 3 cases (2 passed, 1 failed: guard 1)"},
		{"a header without a case count", []*Report{func() *Report {
			r := all6("0/1", 0, 1, 2, 3, 4, 5)
			r.Header.Cases = 0
			return r
		}()}, `merge: a.jsonl: its header does not say how many cases the suite has ("cases"), so its case lines cannot be checked: it was written by an older difftest; run the shard again`},
		{"headers that disagree on the suite's size", []*Report{all6("0/2", 0, 2, 4), runShard("1/2", 7, 1, nil, true, 1, 3, 5)},
			"merge: b.jsonl ran all of 7 cases per seed; a.jsonl ran all of 6"},
		{"headers that disagree on the selection", []*Report{all6("0/2", 0, 2, 4), runShard("1/2", 6, 1, []int{1, 3, 5}, true, 1, 3, 5)},
			"merge: b.jsonl ran 3 (--run) of 6 cases per seed; a.jsonl ran all of 6"},
		{"an unsharded run with a line deleted", []*Report{drop(runShard("", 6, 1, nil, true, 0, 1, 2, 3, 4, 5), 4)},
			"merge: a.jsonl lacks index 4 (suite case 4, seed 7): the shard finished (its summary counts 6 cases, the file holds 5 case lines)"},
		{"a selection out of order", []*Report{runShard("", 6, 1, []int{3, 1}, true, 1, 3)},
			`merge: a.jsonl: header "selected" entry 1 is 1: want increasing suite positions in [0, 6)`},
		{"a header whose size overflows", []*Report{runShard("", 1<<40, 1<<40, nil, true, 0)},
			"merge: a.jsonl: header claims 1099511627776 cases per seed × 1099511627776 seeds, more than an index can hold"},
		{"a huge header and a finished shard", []*Report{runShard("0/2", 6, 1<<50, nil, true, 0, 2, 4), runShard("1/2", 6, 1<<50, nil, true, 1, 3, 5)},
			"merge: a.jsonl (shard 0/2) lacks index 6 (k/c0 seed 8): the shard finished (its summary counts 3 cases, the file holds 3 case lines)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := MergeNamed(names[:len(tt.reps)], tt.reps)
			if err == nil {
				t.Fatalf("merged %d records (%s), want error %q", len(m.Records), fmt.Sprintf("%+v", *m.Summary), tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("err = %q\nwant  %q", err, tt.want)
			}
		})
	}
}

// TestMergeSelectedAndCutShort: merges that must succeed, among them
// --run selections, shards that ran nothing, and shards cut short whose
// header claims an enormous run (the check must not walk it).
func TestMergeSelectedAndCutShort(t *testing.T) {
	tests := []struct {
		name   string
		reps   []*Report
		passed int
	}{
		{"--run kept suite cases 1 and 3 of 6, two seeds", []*Report{
			runShard("0/2", 6, 2, []int{1, 3}, true), runShard("1/2", 6, 2, []int{1, 3}, true, 1, 3, 7, 9)}, 4},
		{"a shard cut short holds a prefix", []*Report{
			runShard("0/2", 6, 2, nil, true, 0, 2, 4, 6, 8, 10), runShard("1/2", 6, 2, nil, false, 1, 3)}, 7},
		{"a shard cut short in a run of 2^50 seeds", []*Report{
			runShard("0/2", 6, 1<<50, nil, false, 0, 2), runShard("1/2", 6, 1<<50, nil, false, 1)}, 3},
		{"a finished shard that the selection never reaches, 2^50 seeds", []*Report{
			runShard("0/2", 2, 1<<50, []int{0}, false, 0, 2), runShard("1/2", 2, 1<<50, []int{0}, true)}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := MergeNamed([]string{"a.jsonl", "b.jsonl"}, tt.reps)
			if err != nil {
				t.Fatal(err)
			}
			if m.Summary.Passed != tt.passed {
				t.Errorf("summary %s, want %d passed", fmt.Sprintf("%+v", *m.Summary), tt.passed)
			}
		})
	}
}
