package topk

import (
	"errors"
	"slices"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
)

// run is one entry of the runs param as TOML decodes it.
func run(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// runsOf returns a runs param value.
func runsOf(entries ...map[string]any) []any {
	out := make([]any, len(entries))
	for i, e := range entries {
		out[i] = e
	}
	return out
}

// seqLens returns the seq_lens input of c.
func seqLens(c *difftest.Case) []int {
	p := c.Params.(*Params)
	out := make([]int, p.Batch)
	for b := range out {
		out[b] = int(c.Inputs[1].I32(b))
	}
	return out
}

// runs gives the rows in order, each run's rows consecutive: a hand-worked
// decode run, a prefill run (step 1), a run with a negative step and an
// empty-row run; and the case is byte for byte the one its lengths list
// written out gives (same name, so same key): runs is a way of writing
// lengths, not a generator of its own.
func TestRunsLengths(t *testing.T) {
	runs := runsOf(
		run("length", int64(5), "rows", int64(3)),
		run("length", int64(10), "rows", int64(2), "step", int64(1)),
		run("length", int64(9), "rows", int64(3), "step", int64(-4)),
		run("length", int64(0), "rows", int64(1)),
	)
	want := []int{5, 5, 5, 10, 11, 9, 5, 1, 0}
	c := gen(t, "gaussian", "runs", map[string]any{"K": int64(4), "P": int64(4), "runs": runs})
	p := c.Params.(*Params)
	if got := seqLens(c); !slices.Equal(got, want) {
		t.Fatalf("seq_lens %v, want %v", got, want)
	}
	if p.Batch != 9 || p.Stride != 11 || p.MaxPages != 3 {
		t.Errorf("batch %d stride %d max_pages %d, want 9, 11, 3", p.Batch, p.Stride, p.MaxPages)
	}
	written := gen(t, "gaussian", "runs", map[string]any{"K": int64(4), "P": int64(4), "lengths": ints(want...)})
	if difftest.InputDigest(c) != difftest.InputDigest(written) {
		t.Error("runs and the same lengths written out draw different inputs")
	}
	// batch may restate the total.
	c = gen(t, "gaussian", "runs", map[string]any{"K": int64(4), "runs": runs, "batch": int64(9)})
	if got := seqLens(c); !slices.Equal(got, want) {
		t.Errorf("with batch = 9: seq_lens %v", got)
	}
}

// Rows of one length never share their contents (docs/contracts/topk_transform.md: "rows of
// equal length always with different contents"): each row draws from its
// own stream, in every drawn family (not literal), decode runs and
// prefill runs alike; and
// the page-table rows differ too.
func TestRunsRowsDiffer(t *testing.T) {
	extra := map[string]map[string]any{"relu": {"positives": int64(40)}}
	for _, fam := range Families() {
		if fam == FamilyLiteral {
			continue // its rows are what its params write, not drawn
		}
		params := map[string]any{"K": int64(64), "P": int64(16), "runs": runsOf(
			run("length", int64(600), "rows", int64(6)),
			run("length", int64(601), "rows", int64(6), "step", int64(1)),
		)}
		for k, v := range extra[fam] {
			params[k] = v
		}
		if f, _ := familyByName(fam); f.bits16 {
			params["dtype"] = ScoreBF16
		}
		c := gen(t, fam, "rows-differ", params)
		rows := make([][]uint32, c.Params.(*Params).Batch)
		for b := range rows {
			rows[b] = rowBits(c, b)
		}
		for b := range rows {
			for d := b + 1; d < len(rows); d++ {
				if len(rows[b]) == len(rows[d]) && slices.Equal(rows[b], rows[d]) {
					t.Errorf("%s: rows %d and %d (length %d) hold the same scores", fam, b, d, len(rows[b]))
				}
			}
		}
		p := c.Params.(*Params)
		table := c.Inputs[2]
		for b := 1; b < p.Batch; b++ {
			if table.I32(b*p.MaxPages) == table.I32((b-1)*p.MaxPages) {
				t.Errorf("%s: rows %d and %d start on the same page", fam, b-1, b)
			}
		}
		// The reference's selection is valid on every row (a decode run
		// with L > K and rows just above it).
		out := runRef(t, c)
		if r := Check(c, out, out); r.Failed() {
			t.Errorf("%s: %s", fam, r.Message)
		}
	}
}

// Bad runs are errors naming the case, the param, the run as written and
// the rule; nothing is clamped. Each also goes through GenerateCase: a
// *difftest.SuiteError (exit 2).
func TestRunsErrors(t *testing.T) {
	decode := run("length", int64(8192), "rows", int64(64))
	tests := []struct {
		reason string
		params map[string]any
		want   string
	}{
		{"lengths and runs", map[string]any{"lengths": ints(3), "runs": runsOf(decode)},
			`case topk_transform/e: param "runs": give lengths or runs, not both`},
		{"neither", map[string]any{},
			`case topk_transform/e: param "lengths": required (or runs), at least one length`},
		{"empty runs", map[string]any{"runs": []any{}},
			`case topk_transform/e: param "runs": at least one run {length = L, rows = N}`},
		{"runs = 5", map[string]any{"runs": int64(5)},
			`case topk_transform/e: param "runs": must be an array of tables, e.g. [{…}, {…}], got the integer 5`},
		{"a list of numbers", map[string]any{"runs": ints(8192, 64)},
			`case topk_transform/e: param "runs": element 0 must be a table {…}, got the integer 8192`},
		{"unknown key", map[string]any{"runs": runsOf(run("length", int64(8192), "count", int64(64)))},
			`case topk_transform/e: param "runs": runs[0] {length = 8192, count = 64}: unknown key "count" (a run has length, rows, step)`},
		{"no length", map[string]any{"runs": runsOf(decode, run("rows", int64(2)))},
			`case topk_transform/e: param "runs": runs[1] {rows = 2}: length is required`},
		{"no rows", map[string]any{"runs": runsOf(run("length", int64(10)))},
			`case topk_transform/e: param "runs": runs[0] {length = 10}: rows is required`},
		{"rows = 0", map[string]any{"runs": runsOf(run("length", int64(10), "rows", int64(0)))},
			`case topk_transform/e: param "runs": runs[0] {length = 10, rows = 0}: rows must be ≥ 1, got 0`},
		{"a float length", map[string]any{"runs": runsOf(run("length", 8192.0, "rows", int64(2)))},
			`case topk_transform/e: param "runs": runs[0] {length = 8192.0, rows = 2}: length must be an integer in the int32 range, got 8192.0`},
		{"a string step", map[string]any{"runs": runsOf(run("length", int64(1), "rows", int64(2), "step", "1"))},
			`case topk_transform/e: param "runs": runs[0] {length = 1, rows = 2, step = "1"}: step must be an integer in the int32 range, got "1"`},
		{"rows = 2^40", map[string]any{"runs": runsOf(run("length", int64(1), "rows", int64(1)<<40))},
			`case topk_transform/e: param "runs": runs[0] {length = 1, rows = 1099511627776}: rows must be an integer in the int32 range, got 1099511627776`},
		{"a negative length", map[string]any{"runs": runsOf(run("length", int64(-1), "rows", int64(2)))},
			`case topk_transform/e: param "runs": runs[0] {length = -1, rows = 2}: every length must be in [0, 16777216]; the run goes from -1 to -1`},
		{"a step below 0", map[string]any{"runs": runsOf(run("length", int64(10), "rows", int64(4), "step", int64(-4)))},
			`case topk_transform/e: param "runs": runs[0] {length = 10, rows = 4, step = -4}: every length must be in [0, 16777216]; the run goes from 10 to -2`},
		{"a step past MaxSeqLen", map[string]any{"runs": runsOf(run("length", int64(MaxSeqLen), "rows", int64(2), "step", int64(1)))},
			`case topk_transform/e: param "runs": runs[0] {length = 16777216, rows = 2, step = 1}: every length must be in [0, 16777216]; the run goes from 16777216 to 16777217`},
		{"more rows than MaxBatch", map[string]any{"runs": runsOf(run("length", int64(1), "rows", int64(40000)), run("length", int64(2), "rows", int64(40000)))},
			`case topk_transform/e: param "runs": runs[1] {length = 2, rows = 40000}: the runs add up to more than 65536 rows (MaxBatch), got 80000 so far`},
		{"batch disagrees", map[string]any{"runs": runsOf(decode, decode), "batch": int64(64)},
			`case topk_transform/e: param "batch": the runs give 128 rows, batch says 64; leave batch out (runs are the whole batch)`},
		{"batch·stride through runs", map[string]any{"runs": runsOf(run("length", int64(MaxSeqLen), "rows", int64(17)))},
			`case topk_transform/e: param "batch·stride": exceeds the limit of 268435456 scores: got 285212672`},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		if tt.reason == "" || seen[tt.reason] {
			t.Fatalf("row %q: empty or duplicate reason", tt.reason)
		}
		seen[tt.reason] = true
		tt.params["K"] = int64(4)
		spec := difftest.CaseSpec{Kernel: KernelName, Family: "gaussian", Name: "e", Params: tt.params}
		_, err := NewCase(spec, 1, 1)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s:\n got %v\nwant %s", tt.reason, err, tt.want)
		}
		if err2 := kerneltest.CheckSpecAgrees(t, Kernel{}, spec); err2 == nil {
			t.Errorf("%s: CheckSpec accepts it", tt.reason)
		}
		_, _, err = difftest.GenerateCase(difftest.Item{Seed: 1, SuiteCase: difftest.SuiteCase{File: "t.toml", Spec: spec}})
		var se *difftest.SuiteError
		if !errors.As(err, &se) {
			t.Errorf("%s: GenerateCase returned %T %v, want a *difftest.SuiteError (exit 2)", tt.reason, err, err)
		}
	}
}
