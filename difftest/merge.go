// Joining shard reports (`difftest merge`).
package difftest

import (
	"fmt"
	"sort"
)

// Merge joins the reports of the shards of one run into one report. The
// headers must agree on suite, seed, repeat, implementation and generator
// version; the merged header drops the shard and keeps the earliest
// start. Records are ordered by Index; an Index present twice (overlapping
// shards) is an error. The summary is recounted from the records, its
// Elapsed is the longest shard's, and it notes shards that did not finish.
func Merge(reps []*Report) (*Report, error) {
	if len(reps) == 0 {
		return nil, fmt.Errorf("merge: no reports")
	}
	h := reps[0].Header
	h.Shard = ""
	out := &Report{Header: h}
	seen := map[int]string{}
	sum := &Summary{}
	for i, r := range reps {
		g := r.Header
		if g.Suite != h.Suite || g.Seed != h.Seed || g.Repeat != h.Repeat || g.Impl != h.Impl || g.GeneratorVersion != h.GeneratorVersion {
			return nil, fmt.Errorf("merge: report %d ran suite %s seed %d repeat %d impl %s generator %d; report 1 ran suite %s seed %d repeat %d impl %s generator %d",
				i+1, g.Suite, g.Seed, g.Repeat, g.Impl, g.GeneratorVersion, h.Suite, h.Seed, h.Repeat, h.Impl, h.GeneratorVersion)
		}
		if !g.Started.IsZero() && (out.Header.Started.IsZero() || g.Started.Before(out.Header.Started)) {
			out.Header.Started = g.Started
		}
		for _, rec := range r.Records {
			key := fmt.Sprintf("%s seed %d", rec.Case, rec.Seed)
			if prev, dup := seen[rec.Index]; dup {
				return nil, fmt.Errorf("merge: index %d (%s) appears twice (also %s): overlapping shards", rec.Index, key, prev)
			}
			seen[rec.Index] = key
			out.Records = append(out.Records, rec)
			sum.Add(rec)
		}
		if r.Summary == nil {
			sum.Aborted = joinNote(sum.Aborted, fmt.Sprintf("report %d (shard %s) has no summary: it did not finish", i+1, g.Shard))
		} else {
			sum.Elapsed = max(sum.Elapsed, r.Summary.Elapsed)
			if r.Summary.Aborted != "" {
				sum.Aborted = joinNote(sum.Aborted, fmt.Sprintf("shard %s: %s", g.Shard, r.Summary.Aborted))
			}
		}
	}
	sort.Slice(out.Records, func(i, j int) bool { return out.Records[i].Index < out.Records[j].Index })
	out.Summary = sum
	return out, nil
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
