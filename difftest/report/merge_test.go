package report

import (
	"fmt"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// shardReport is the report of one shard of a run of the 6-case expanded
// suite k/c0 … k/c5 (seed 7; runShard); the case with index 4 fails.
// Records hold the given indices; finished says whether the summary line
// was written. Its start time and elapsed time grow with the records.
func shardReport(shard string, finished bool, idx ...int) *Report {
	r := runShard(shard, 6, 1, nil, finished, idx...)
	r.Header.Started = time.Date(2025, 6, 1, 3, 0, len(idx), 0, time.UTC)
	if r.Summary != nil {
		r.Summary.Elapsed = time.Duration(len(idx)) * time.Second
	}
	return r
}

func TestMergeWholeSplits(t *testing.T) {
	tests := []struct {
		name         string
		reps         []*Report
		merged       int    // want MergedShards
		passed       int    // want Summary.Passed (Failed is 1: index 4)
		elapsed      int    // want Summary.Elapsed in seconds, the longest shard's
		aborted      string // want Summary.Aborted
		startSeconds int    // want Header.Started's second, the earliest shard's
	}{
		{"3-way split, given out of order", []*Report{
			shardReport("2/3", true, 2, 5), shardReport("0/3", true, 0, 3), shardReport("1/3", true, 1, 4),
		}, 3, 5, 2, "", 2},
		{"2-way split", []*Report{shardReport("0/2", true, 0, 2, 4), shardReport("1/2", true, 1, 3, 5)}, 2, 5, 3, "", 3},
		{"one-way split", []*Report{shardReport("0/1", true, 0, 1, 2, 3, 4, 5)}, 1, 5, 6, "", 6},
		{"unsharded run on its own", []*Report{shardReport("", true, 0, 1, 2, 3, 4, 5)}, 0, 5, 6, "", 6},
		{"more shards than cases: 6/8 and 7/8 ran none", []*Report{
			shardReport("0/8", true, 0), shardReport("1/8", true, 1), shardReport("2/8", true, 2), shardReport("3/8", true, 3),
			shardReport("4/8", true, 4), shardReport("5/8", true, 5), shardReport("6/8", true), shardReport("7/8", true),
		}, 8, 5, 1, "", 0},
		{"a shard cut short by a crash", []*Report{shardReport("0/2", true, 0, 2, 4), shardReport("1/2", false, 1, 3)}, 2, 4, 3,
			"report 2 (shard 1/2) has no summary: it did not finish", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Merge(tt.reps)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range m.Records {
				if r.Index != i {
					t.Fatalf("record %d has index %d: records out of order", i, r.Index)
				}
			}
			h, s := m.Header, m.Summary
			if h.Shard != "" || h.MergedShards != tt.merged || h.Started.Second() != tt.startSeconds || h.Suite != "quick" || h.Seed != 7 {
				t.Errorf("header %+v, want no shard, merged_shards %d, started at second %d", h, tt.merged, tt.startSeconds)
			}
			if s.Passed != tt.passed || s.Failed != 1 || s.Classes[difftest.Mismatch] != 1 || s.Elapsed != time.Duration(tt.elapsed)*time.Second || s.Aborted != tt.aborted {
				t.Errorf("summary %+v, want %d passed, 1 failed, %ds, aborted %q", s, tt.passed, tt.elapsed, tt.aborted)
			}
		})
	}
}

func TestMergeRejectsIncompleteSplits(t *testing.T) {
	twelve := []*Report{shardReport("0/12", true, 0), shardReport("1/12", true, 1)}
	seed8 := shardReport("1/2", true, 1, 3, 5)
	seed8.Header.Seed = 8
	tests := []struct {
		name  string
		names []string
		reps  []*Report
		want  string
	}{
		{"2 of 3 shards", []string{"s0.jsonl", "s1.jsonl"},
			[]*Report{shardReport("0/3", true, 0, 3), shardReport("1/3", true, 1, 4)},
			"merge: shard 2/3 missing"},
		{"a single shard", []string{"s1.jsonl"},
			[]*Report{shardReport("1/3", true, 1, 4)},
			"merge: shards 0/3, 2/3 missing"},
		{"many missing", []string{"a", "b"}, twelve,
			"merge: 10 of 12 shards missing: 2/12, 3/12, 4/12, 5/12, 6/12, 7/12, 8/12, 9/12, …"},
		{"/3 and /2 mixed", []string{"a.jsonl", "b.jsonl", "c.jsonl"},
			[]*Report{shardReport("0/3", true, 0, 3), shardReport("1/3", true, 1, 4), shardReport("1/2", true, 1, 3, 5)},
			"merge: reports mix /3 and /2 shards: a.jsonl is shard 0/3, c.jsonl is shard 1/2"},
		{"one shard given twice", []string{"a.jsonl", "b.jsonl"},
			[]*Report{shardReport("0/2", true, 0, 2, 4), shardReport("0/2", true, 0, 2, 4)},
			"merge: shard 0/2 appears twice: a.jsonl and b.jsonl"},
		{"a whole run with a shard", []string{"all.jsonl", "s1.jsonl"},
			[]*Report{shardReport("", true, 0, 1, 2, 3, 4, 5), shardReport("1/2", true, 1, 3, 5)},
			"merge: all.jsonl has no shard in its header (a whole run); merge joins the shards I/N of one split"},
		{"bad shard in a header", []string{"a.jsonl"},
			[]*Report{shardReport("3/2", true, 1)},
			`merge: a.jsonl: header shard "3/2" is not I/N with 0 ≤ I < N`},
		{"a record of another shard", []string{"a.jsonl", "b.jsonl"},
			[]*Report{shardReport("0/2", true, 0, 2, 3), shardReport("1/2", true, 1, 5)},
			"merge: a.jsonl (shard 0/2) holds index 3 (k/c3 seed 7), which belongs to shard 1/2"},
		{"an index twice within a shard", []string{"a.jsonl", "b.jsonl"},
			[]*Report{shardReport("0/2", true, 0, 2, 2), shardReport("1/2", true, 1, 5)},
			"merge: index 2 (k/c2 seed 7) appears twice in a.jsonl (also k/c2 seed 7)"},
		{"another seed", []string{"a.jsonl", "b.jsonl"},
			[]*Report{shardReport("0/2", true, 0, 2, 4), seed8},
			fmt.Sprintf("merge: b.jsonl ran suite quick seed 8 repeat 1 impl cuda generator %d; a.jsonl ran suite quick seed 7 repeat 1 impl cuda generator %[1]d", difftest.GeneratorVersion)},
		{"nothing", nil, nil, "merge: no reports"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := MergeNamed(tt.names, tt.reps)
			if err == nil {
				t.Fatalf("merged %d records, want error %q", len(m.Records), tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("err = %q\nwant  %q", err, tt.want)
			}
		})
	}
}
