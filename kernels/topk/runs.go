// Row lengths as serving engines batch them (docs/contracts/topk_transform.md "batches as
// serving engines build them"): the suite param runs, a list of runs of
// consecutive rows, instead of a lengths list that the rows cycle
// through.
//
//	runs = [{length = 8192, rows = 64}, {length = 4500, rows = 64}]   # decode: 64 rows of 8192, then 64 of 4500
//	runs = [{length = 8161, rows = 64, step = 1}]                     # a prefill chunk: 8161, 8162, …, 8224
//
// Every row draws its own scores and page-table row (rng stream by row
// index), so rows of one length have different contents.

package topk

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// runKeys are the keys of one entry of runs, in the order messages list
// them.
var runKeys = []string{"length", "rows", "step"}

// applyRuns replaces g's lengths and batch by those of the runs param:
// run i covers the next rows[i] rows, row j of the run (0-based) of length
// length[i] + j·step[i]. Rules, each a *paramError naming runs[i] as
// written:
//   - runs and lengths exclude each other;
//   - an entry has the keys length (required), rows (required) and step
//     (default 0), integers only;
//   - rows ≥ 1; the total of rows ≤ MaxBatch (checked before any length
//     is built); every length of the run in [0, MaxSeqLen];
//   - batch, when given (batchGiven), equals the total of rows: the runs
//     are the batch, nothing cycles.
func (g *genConfig) applyRuns(runs []map[string]any, batchGiven bool) error {
	if g.lengths != nil {
		return badParam("runs", "give lengths or runs, not both")
	}
	if len(runs) == 0 {
		return badParam("runs", "at least one run {length = L, rows = N}")
	}
	type run struct{ length, rows, step int }
	parsed := make([]run, len(runs))
	total := 0
	for i, t := range runs {
		at := fmt.Sprintf("runs[%d] %s", i, runString(t))
		for _, k := range sortedRunKeys(t) {
			if !slices.Contains(runKeys, k) {
				return badParam("runs", "%s: unknown key %q (a run has %s)", at, k, strings.Join(runKeys, ", "))
			}
		}
		var r run
		for _, f := range []struct {
			key      string
			dst      *int
			required bool
		}{{"length", &r.length, true}, {"rows", &r.rows, true}, {"step", &r.step, false}} {
			v, ok := t[f.key]
			if !ok {
				if f.required {
					return badParam("runs", "%s: %s is required", at, f.key)
				}
				continue
			}
			n, ok := v.(int64)
			if !ok || n < math.MinInt32 || n > math.MaxInt32 {
				return badParam("runs", "%s: %s must be an integer in the int32 range, got %s", at, f.key, runValue(v))
			}
			*f.dst = int(n)
		}
		if r.rows < 1 {
			return badParam("runs", "%s: rows must be ≥ 1, got %d", at, r.rows)
		}
		if total += r.rows; total > MaxBatch {
			return badParam("runs", "%s: the runs add up to more than %d rows (MaxBatch), got %d so far", at, MaxBatch, total)
		}
		first, last := r.length, r.length+(r.rows-1)*r.step
		for _, L := range []int{first, last} {
			if L < 0 || L > MaxSeqLen {
				return badParam("runs", "%s: every length must be in [0, %d]; the run goes from %d to %d", at, MaxSeqLen, first, last)
			}
		}
		parsed[i] = r
	}
	if batchGiven && g.Batch != total {
		return badParam("batch", "the runs give %d rows, batch says %d; leave batch out (runs are the whole batch)", total, g.Batch)
	}
	g.lengths = make([]int, 0, total)
	for _, r := range parsed {
		for j := range r.rows {
			g.lengths = append(g.lengths, r.length+j*r.step)
		}
	}
	g.Batch = total
	return nil
}

func sortedRunKeys(t map[string]any) []string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// runString writes a run entry as the suite file would: {length = 8192,
// rows = 64}, known keys first.
func runString(t map[string]any) string {
	var parts []string
	for _, k := range runKeys {
		if v, ok := t[k]; ok {
			parts = append(parts, k+" = "+runValue(v))
		}
	}
	for _, k := range sortedRunKeys(t) {
		if !slices.Contains(runKeys, k) {
			parts = append(parts, k+" = "+runValue(t[k]))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// runValue writes one value of a run entry for a message, a float with
// its point (64.0) so that it reads as the float it is.
func runValue(v any) string {
	switch x := v.(type) {
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEnN") {
			s += ".0"
		}
		return s
	case string:
		return strconv.Quote(x)
	}
	return fmt.Sprint(v)
}
