// Joining shard reports (`difftest merge`): the reports of every shard
// I/N, 0 ≤ I < N, of one split of one run become the report of the whole
// run, or nothing does.

package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// Merge joins the reports of the shards of one run; see MergeNamed. Its
// errors name the reports by position ("report 2").
func Merge(reps []*Report) (*Report, error) {
	names := make([]string, len(reps))
	for i := range reps {
		names[i] = fmt.Sprintf("report %d", i+1)
	}
	return MergeNamed(names, reps)
}

// MergeNamed joins the reports of the shards of one run into the report
// of the whole run. names[i] names reps[i] in errors (its file).
//
// The headers must agree on suite, seed, repeat, cases, selection,
// implementation, --param overrides and generator version, and their shards must be one
// whole split: every shard I/N for 0 ≤ I < N, each exactly once, all with
// the same N. A single report without a shard (an unsharded run) is
// accepted on its own, as the one shard 0/1.
//
// No case may be lost or invented. Every record must lie in the run
// (0 ≤ Index < Cases·Repeat), belong to its report's shard (Index ≡ I
// mod N), carry the seed of its index (Seed + Index/Cases), be a suite
// case the run selected (Header.Selected), have the case id of every
// other record of its suite case, and appear once. Every index the run
// selected for a shard must be in that shard's report when the shard
// finished (a summary line that does not say it stopped early), or, when
// it did not, every such index below its report's largest one (a run
// writes its cases in index order, so a shard cut short holds a prefix).
// A report's summary line must count exactly its case lines: passed,
// failed and the failures per class. A header without Cases (a report
// from a difftest that did not record it) is refused, since its records
// cannot be checked.
//
// Errors are one line naming the report and, for a lost case, its index,
// for example "merge: shard 2/3 missing", "merge: b.jsonl (shard 1/3)
// lacks index 4 (k/c4 seed 7): the shard finished (its summary counts 2
// cases, the file holds 1 case line)", "merge: a.jsonl (shard 0/2):
// index 1000000000000 (k/c seed 7) is outside the run's 6 cases (6 per
// seed × 1 seed)" or "merge: shard 0/2 appears twice: a.jsonl and
// b.jsonl". The CLI exits 2 on each (an input file error).
//
// The merged header has no shard, records the split in MergedShards and
// keeps the earliest start. Records are ordered by Index. The summary is
// recounted from the records, its Elapsed is the longest shard's, and
// Aborted notes each shard that did not finish or stopped early.
func MergeNamed(names []string, reps []*Report) (*Report, error) {
	if len(reps) == 0 {
		return nil, fmt.Errorf("merge: no reports")
	}
	if len(names) != len(reps) {
		return nil, fmt.Errorf("merge: %d names for %d reports", len(names), len(reps))
	}
	h := reps[0].Header
	for i, r := range reps[1:] {
		g := r.Header
		if g.Suite != h.Suite || g.Seed != h.Seed || g.Repeat != h.Repeat || g.Impl != h.Impl || g.GeneratorVersion != h.GeneratorVersion {
			return nil, fmt.Errorf("merge: %s ran suite %s seed %d repeat %d impl %s generator %d; %s ran suite %s seed %d repeat %d impl %s generator %d",
				names[i+1], g.Suite, g.Seed, g.Repeat, g.Impl, g.GeneratorVersion, names[0], h.Suite, h.Seed, h.Repeat, h.Impl, h.GeneratorVersion)
		}
		if !slices.Equal(g.Params, h.Params) {
			return nil, fmt.Errorf("merge: %s ran with --param %q; %s with %q", names[i+1], g.Params, names[0], h.Params)
		}
		if g.Cases != h.Cases || !slices.Equal(g.Selected, h.Selected) {
			return nil, fmt.Errorf("merge: %s ran %s of %d cases per seed; %s ran %s of %d", names[i+1], selectedWord(g), g.Cases, names[0], selectedWord(h), h.Cases)
		}
	}
	shards, err := checkSplit(names, reps)
	if err != nil {
		return nil, err
	}
	if err := checkCases(names, reps, shards); err != nil {
		return nil, err
	}
	out := &Report{Header: h}
	out.Header.Shard = ""
	if shards[0].N > 0 {
		out.Header.MergedShards = shards[0].N
	}
	sum := &difftest.Summary{}
	for i, r := range reps {
		g, sh := r.Header, shards[i]
		if !g.Started.IsZero() && (out.Header.Started.IsZero() || g.Started.Before(out.Header.Started)) {
			out.Header.Started = g.Started
		}
		for _, rec := range r.Records {
			out.Records = append(out.Records, rec)
			sum.Add(rec)
		}
		what := names[i]
		if sh.N > 0 {
			what += " (shard " + sh.String() + ")"
		}
		if r.Summary == nil {
			sum.Aborted = joinNote(sum.Aborted, what+" has no summary: it did not finish")
		} else {
			sum.Elapsed = max(sum.Elapsed, r.Summary.Elapsed)
			if r.Summary.Aborted != "" {
				sum.Aborted = joinNote(sum.Aborted, what+": "+r.Summary.Aborted)
			}
		}
	}
	sort.Slice(out.Records, func(i, j int) bool { return out.Records[i].Index < out.Records[j].Index })
	out.Summary = sum
	return out, nil
}

func selectedWord(h difftest.Header) string {
	if len(h.Selected) == 0 {
		return "all"
	}
	return fmt.Sprintf("%d (--run)", len(h.Selected))
}

// checkSplit parses each report's shard and checks that together they
// are one whole split (see MergeNamed). The zero Shard stands for a
// report without a shard, accepted only alone.
func checkSplit(names []string, reps []*Report) ([]difftest.Shard, error) {
	shards := make([]difftest.Shard, len(reps))
	for i, r := range reps {
		if r.Header.Shard == "" {
			if len(reps) > 1 {
				return nil, fmt.Errorf("merge: %s has no shard in its header (a whole run); merge joins the shards I/N of one split", names[i])
			}
			return shards, nil
		}
		sh, err := difftest.ParseShard(r.Header.Shard)
		if err != nil {
			return nil, fmt.Errorf("merge: %s: header shard %q is not I/N with 0 ≤ I < N", names[i], r.Header.Shard)
		}
		shards[i] = sh
	}
	n := shards[0].N
	where := map[int]int{} // shard I → index of its report
	for i, sh := range shards {
		if sh.N != n {
			return nil, fmt.Errorf("merge: reports mix /%d and /%d shards: %s is shard %s, %s is shard %s", n, sh.N, names[0], shards[0], names[i], sh)
		}
		if j, dup := where[sh.I]; dup {
			return nil, fmt.Errorf("merge: shard %s appears twice: %s and %s", sh, names[j], names[i])
		}
		where[sh.I] = i
	}
	var missing []string
	for I := 0; I < n && len(missing) <= 8; I++ {
		if _, ok := where[I]; !ok {
			missing = append(missing, difftest.Shard{I: I, N: n}.String())
		}
	}
	switch {
	case len(missing) == 1:
		return nil, fmt.Errorf("merge: shard %s missing", missing[0])
	case len(missing) > 8:
		return nil, fmt.Errorf("merge: %d of %d shards missing: %s, …", n-len(where), n, strings.Join(missing[:8], ", "))
	case len(missing) > 1:
		return nil, fmt.Errorf("merge: shards %s missing", strings.Join(missing, ", "))
	}
	return shards, nil
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
