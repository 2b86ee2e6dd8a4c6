package report

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// failing builds a failing record.
func failing(id string, class difftest.Class, msg string, diag []string, metrics map[string]any) *difftest.Record {
	return &difftest.Record{Case: id, Kernel: strings.Split(id, "/")[0], Seed: 1, Verdict: difftest.VerdictFail, Class: class, Message: msg, Diagnosis: diag, Metrics: metrics}
}

// TestCauses: a diagnosed failure groups by class and diagnosis alone
// (one bug is one cause, whichever rule each case broke first: its Rules
// count them); an undiagnosed one by class and first broken rule, where a
// named rule (top-k's failed_rule, a chain's stage and its rule) groups
// messages that differ in more than numbers and an unnamed one groups
// messages of one shape; largest group first, then by first case.
func TestCauses(t *testing.T) {
	row0 := []string{"topk-page-row0"}
	padding := map[string]any{"failed_rule": "padding"}
	recs := []*difftest.Record{
		{Case: "topk_transform/pass", Verdict: difftest.VerdictPass},
		failing("norm_rope_store/a", difftest.Mismatch, "cache token 3 slot 5 dim 7: got 0x3f (1.5), want 0x40 (2; exact 1.99 ± 1e-05, accepted [2, 2]) (ratio 63.7); 1 of 4096 elements mismatch", nil, nil),
		failing("topk_transform/a", difftest.Mismatch, "row 1: page_indices[1][160] = -1 inside the first min(K, L) = 512 entries (L = 3000)", row0, padding),
		failing("topk_transform/b", difftest.Mismatch, "row 1: page_indices[1][2] = 61 past the first min(K, L) = 1 entries must be -1 (L = 1)", row0, padding),
		failing("topk_transform/c", difftest.Mismatch, "row 1: page_indices[1][0] = -64, want slot(raw 0) = 361920", row0, map[string]any{"failed_rule": "wrong_slots"}),
		failing("norm_rope_store/b", difftest.Mismatch, "cache token 0 slot 17 dim 100: got 0xff (NaN), want 0x41 (2.5; exact 2.51 ± 2e-05, accepted [2.5, 2.5]) (ratio 1e+09); 7 of 512 elements mismatch", nil, nil),
		failing("norm_rope_store/c", difftest.Mismatch, "cache token 0 slot 17 scale: got 0.5, want 1 (exact 1, accepted [1, 1]) (ratio 1e+09); 1 of 512 elements mismatch", nil, nil),
		failing("norm_rope_store/d", difftest.Guard, "cache: byte 132 is outside what the contract writes but changed (0x00, want canary 0xa5)", nil, nil),
		failing("pipeline/a", difftest.Mismatch, "stage 3 topk_transform: mismatch: row 1: page_indices[1][446] = -1 inside the first min(K, L) = 1024 entries (L = 2000)", row0, map[string]any{"failed_stage": 3, "stage3_failed_rule": "padding"}),
		failing("topk_transform/d", difftest.Mismatch, "row 0: page_indices[0][7] = -1 inside the first min(K, L) = 512 entries (L = 700)", row0, padding),
		failing("topk_transform/e", difftest.Mismatch, "row 0: page_indices[0][7] = -1 inside the first min(K, L) = 512 entries (L = 700)", nil, padding),
		{Case: "topk_transform/f", Verdict: difftest.VerdictFail, Class: difftest.Mismatch, Message: "row 0: x", Metrics: padding, DiagnosisNote: "not diagnosed: the run's diagnosis budget is spent (--diagnose)"},
	}
	var got []string
	for _, c := range Causes(recs) {
		got = append(got, c.Title()+" "+strings.Join(c.Diagnosis, "+")+": "+CaseList(c.Records, 0))
	}
	want := []string{
		"5 cases · mismatch · 3 rules topk-page-row0: topk_transform/{a, b, c}, pipeline/a, topk_transform/d",
		"2 cases · mismatch · no diagnosis : norm_rope_store/{a, b}",
		"1 case · mismatch · no diagnosis : norm_rope_store/c",
		"1 case · guard : norm_rope_store/d",
		"1 case · mismatch · rule padding · no diagnosis : topk_transform/e",
		"1 case · mismatch · rule padding · not diagnosed : topk_transform/f",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("causes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The diagnosed cause counts its rules, each with one example, and
	// its block lists them under its first case.
	first := Causes(recs)[0]
	var rules []string
	for _, g := range first.Rules {
		rules = append(rules, fmt.Sprintf("%s=%d(%s)", g.Label(), len(g.Records), g.Records[0].Case))
	}
	if got, want := strings.Join(rules, " "), "rule padding=3(topk_transform/a) rule wrong_slots=1(topk_transform/c) rule stage 3 topk_transform: padding=1(pipeline/a)"; got != want {
		t.Errorf("rules: %s\nwant   %s", got, want)
	}
	texttest.Contains(t, "block", strings.Join(first.Block(1, 0), "\n"),
		"  first broken rule, by case:\n    rule padding: 3 cases, e.g. topk_transform/a\n    rule wrong_slots: 1 case, e.g. topk_transform/c\n    rule stage 3 topk_transform: padding: 1 case, e.g. pipeline/a\n  4 more cases like this: ")
	// An unnamed rule is labelled by its message's shape up to the value.
	if got := Causes(recs)[1].Rules[0].Label(); got != "cache token # slot # dim #" {
		t.Errorf("shape label = %q", got)
	}
}

func TestRuleOf(t *testing.T) {
	tests := []struct {
		msg         string
		metrics     map[string]any
		rule, shape string
	}{
		{"row 2: page_indices[2][0] = 3696 does not map back", map[string]any{"failed_rule": "wrong_slots"}, "wrong_slots", ""},
		{"stage 1 norm_rope_store: mismatch: cache token 3 slot 5 dim 7: got 0x3f (-1.5e-05), want -inf", map[string]any{"failed_stage": 1}, "stage 1 norm_rope_store",
			"stage # norm_rope_store: mismatch: cache token # slot # dim #: got # (#), want #"},
		{"cache: guard byte 1 before the start changed (0x00, want 0xa5)", nil, "", "cache: guard byte # before the start changed (#, want #)"},
		{"logits [0][17]: got NaN, want +Inf", nil, "", "logits [#][#]: got #, want #"},
	}
	for _, tt := range tests {
		rule, shape := RuleOf(&difftest.Record{Message: tt.msg, Metrics: tt.metrics})
		if rule != tt.rule || shape != tt.shape {
			t.Errorf("RuleOf(%q) = %q, %q; want %q, %q", tt.msg, rule, shape, tt.rule, tt.shape)
		}
	}
}

// TestCaseList: one kernel prefix per run of its cases, seeds when there
// are several, and a cap with the rest counted.
func TestCaseList(t *testing.T) {
	var recs []*difftest.Record
	for i := range 5 {
		recs = append(recs, &difftest.Record{Case: fmt.Sprintf("topk_transform/c%d", i), Seed: 1})
	}
	recs = append(recs, &difftest.Record{Case: "pipeline/p", Seed: 1}, &difftest.Record{Case: "odd\x1b", Seed: 1})
	if got, want := CaseList(recs, 0), `topk_transform/{c0, c1, c2, c3, c4}, pipeline/p, odd\x1b`; got != want {
		t.Errorf("CaseList = %q, want %q", got, want)
	}
	if got, want := CaseList(recs, 3), "topk_transform/{c0, c1, c2} … and 4 more"; got != want {
		t.Errorf("CaseList capped = %q, want %q", got, want)
	}
	recs[1].Seed = 2
	if got, want := CaseList(recs[:2], 0), "topk_transform/{c0 [seed 1], c1 [seed 2]}"; got != want {
		t.Errorf("CaseList with seeds = %q, want %q", got, want)
	}
}

// TestJUnitByCause: every <failure> names its cause; the first case of a
// cause lists the worst elements and the other cases' ids, the others
// refer to it and list none; the <testsuite>'s <system-out> holds one
// block per cause.
func TestJUnitByCause(t *testing.T) {
	padding := map[string]any{"failed_rule": "padding"}
	var recs []*difftest.Record
	for i := range 3 {
		r := failing(fmt.Sprintf("topk_transform/c%d", i), difftest.Mismatch, fmt.Sprintf("row 0: page_indices[0][%d] = -1 inside the first min(K, L) = 512 entries (L = 900)", i), []string{"topk-page-row0"}, padding)
		r.Worst = []difftest.Element{{Tensor: "page_indices", Index: fmt.Sprintf("[0][%d]", i), Got: "-1", Want: "a pick"}}
		recs = append(recs, r)
	}
	recs = append(recs, failing("norm_rope_store/g", difftest.Guard, "cache: guard byte 1 before the start changed (0x00, want 0xa5)", nil, nil))
	out := texttest.Render(t, func(w io.Writer) error {
		return WriteJUnit(w, &Report{Header: difftest.Header{Suite: "s", Seed: 1}, Records: recs})
	})
	texttest.Contains(t, "JUnit", out,
		"cause [1] of 2: 3 cases · mismatch · rule padding\nbehaves like topk-page-row0\n",
		"worst: page_indices[0][0] got -1 want a pick\n2 more cases like this: topk_transform/{c1, c2}\n",
		"like topk_transform/c0 (seed 1), whose failure lists the worst elements of this cause\n",
		"cause [2] of 2: 1 case · guard\n",
		"<system-out><![CDATA[failures by cause (2):\n\n[1] 3 cases · mismatch · rule padding\n  behaves like topk-page-row0\n  topk_transform/c0 (seed 1): row 0: page_indices[0][0] = -1",
		"\n  2 more cases like this: topk_transform/{c1, c2}\n\n[2] 1 case · guard\n",
	)
	if n := strings.Count(out, "worst: "); n != 1 {
		t.Errorf("%d worst lines in the failures, want 1 (the first case of its cause)", n)
	}
}

// TestWorstLine: a subscript index follows its tensor's name directly, an
// index in words (norm_rope_store's) after a space, and a ratio is printed
// only where the element has one.
func TestWorstLine(t *testing.T) {
	for _, c := range []struct {
		e    difftest.Element
		want string
	}{
		{difftest.Element{Tensor: "page_indices", Index: "[1][0]", Got: "-64", Want: "5760 = slot(raw 0)"},
			"worst page_indices[1][0]: got -64, want 5760 = slot(raw 0)"},
		{difftest.Element{Tensor: "cache", Index: "token 0 slot 21 dim 42", Got: "0xf3 (-176)", Want: "0xf4 (-192)", Ratio: difftest.RatioOf(50.3)},
			"worst cache token 0 slot 21 dim 42: got 0xf3 (-176), want 0xf4 (-192) (ratio 50.3)"},
		{difftest.Element{Tensor: "cache", Got: "1", Want: "2"}, "worst cache: got 1, want 2"},
	} {
		if got := WorstLine(c.e); got != c.want {
			t.Errorf("WorstLine(%+v) = %q, want %q", c.e, got, c.want)
		}
	}
}

// The program's note on a failing run (an output returned instead of
// written: "fill it in place") is shown under the failure's message, not
// only among the footnotes; other warnings stay there.
func TestBlockShowsProgramNote(t *testing.T) {
	r := failing("topk_transform/a", difftest.Unwritten, "page_indices[0][0]: never written", nil, nil)
	r.Warnings = []string{"a warning of the harness", difftest.ProgramSays + "output 'page_indices' still holds only the poison: fill it in place"}
	lines := Causes([]*difftest.Record{r})[0].Block(1, 0)
	if len(lines) < 3 || lines[1] != "  topk_transform/a (seed 1): page_indices[0][0]: never written" ||
		lines[2] != "    the program says: output 'page_indices' still holds only the poison: fill it in place" {
		t.Errorf("block:\n%s", strings.Join(lines, "\n"))
	}
	if strings.Contains(strings.Join(lines, "\n"), "a warning of the harness") {
		t.Errorf("a harness warning moved into the block:\n%s", strings.Join(lines, "\n"))
	}
}
