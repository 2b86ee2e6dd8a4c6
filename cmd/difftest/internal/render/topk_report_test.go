package render

import (
	"context"
	"io"
	"regexp"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/report"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
	"github.com/kerneldiff/kerneldiff/kernels/topk"
)

// TestReportDetails runs topk_transform mutants through the harness (difftest.Run) and
// reads the human table: the key metric names the rule that failed (a
// wrong page slot shows wrong_slots=N, not missing=0) and the worst lines
// name a tensor element, "page_indices[1][0]" or "scores[0][i]".
func TestReportDetails(t *testing.T) {
	tests := []struct {
		mutant, family, reason string
		params                 map[string]any
		key, worst             string // regexps on the table
	}{
		// K = 64, rows of 500 and 300 with distinct pages per row: row 1
		// translated through row 0's table gets a wrong slot in all 64
		// entries; row 0 is right.
		{"topk-page-row0", "gaussian", "a wrong slot is not a missing pick",
			map[string]any{"K": int64(64), "P": int64(4), "lengths": ints(500, 300)},
			`FAIL +topk_transform/report +mismatch +wrong_slots=64 `,
			`(?m)^    worst page_indices\[1\]\[0\]: got \d+ \(page \d+ offset \d+\), want \d+ = slot\(raw \d+\) = page_table\[1\]\[\d+\]·P \+ \d+ = \d+·\d+ \+ \d+`},
		// One fp16 coarse bin: selection by the coarse key misses picks.
		{"topk-coarse-only", "lowcontrast", "rule 3 lists score positions",
			map[string]any{"K": int64(64), "P": int64(4), "lengths": ints(16384)},
			`FAIL +topk_transform/report +mismatch +missing=[1-9]\d* `,
			`(?m)^    worst scores\[0\]\[\d+\]: got not chosen, want chosen: f32 0x[0-9a-f]{8} = `},
	}
	for _, tt := range tests {
		t.Run(tt.mutant, func(t *testing.T) {
			k, m, ok := difftest.FindMutant(tt.mutant)
			if !ok {
				t.Fatalf("no mutant %s", tt.mutant)
			}
			spec := difftest.CaseSpec{Kernel: topk.KernelName, Family: tt.family, Name: "report", Params: tt.params}
			var recs []*difftest.Record
			sum, err := difftest.Run(context.Background(), difftest.Config{
				Suite:    "t.toml",
				Items:    []difftest.Item{{Seed: 1, SuiteCase: difftest.SuiteCase{File: "t.toml", Spec: spec}}},
				Impl:     difftest.MutantImpl{Kernel: k.Name(), Mutant: m},
				ImplName: "mutant:" + tt.mutant,
				OnRecord: func(r *difftest.Record) error { recs = append(recs, r); return nil },
			})
			if err != nil || len(recs) != 1 {
				t.Fatalf("Run: %v, %d records", err, len(recs))
			}
			table := texttest.Render(t, func(w io.Writer) error { return WriteTable(w, &report.Report{Records: recs, Summary: &sum}) })
			for _, re := range []string{tt.key, tt.worst} {
				if !regexp.MustCompile(re).MatchString(table) {
					t.Errorf("%s: table lacks %s:\n%s", tt.reason, re, table)
				}
			}
		})
	}
}

// ints makes a suite's list parameter of ints (TOML integers are int64).
func ints(xs ...int) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = int64(x)
	}
	return out
}
