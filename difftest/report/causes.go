// Failures grouped by cause (docs/failures.md): the table, JUnit and the
// HTML report show one block per (class, diagnosis, first broken rule),
// not one per failing case, so that 137 cases failing for one reason read
// as one block.

package report

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// Cause is what a group of failing cases has in common: their failure
// class, their diagnosis and the first rule they break.
type Cause struct {
	Class difftest.Class
	// Diagnosis is the cases' Record.Diagnosis (the same names, in the
	// record's order); nil when they have none.
	Diagnosis []string
	// Undiagnosed is set when the cases have no diagnosis because it was
	// cut short or not made (Record.DiagnosisNote): unknown, which is not
	// the same as "matches nothing".
	Undiagnosed bool
	// Rule is the first broken rule by name where the records carry one
	// (RuleOf): "wrong_slots", "stage 3 topk_transform: padding"; empty
	// where only the message states it.
	Rule string
	// Shape, where Rule does not name the rule in full, is the cases'
	// message with every number replaced by "#" (MessageShape): failures
	// whose messages have one shape broke the same rule (the same tensor
	// and element kind, the same guard band, the same sentence).
	Shape string
	// Records are the failing cases, in report order: Records[0] is the
	// one a report shows in full.
	Records []*difftest.Record
}

// More is how many cases the block stands for besides its first.
func (c *Cause) More() int { return len(c.Records) - 1 }

// Causes groups the failing records of recs by cause: class, diagnosis,
// and the first broken rule (RuleOf; the message's shape when the record
// names none). The groups come largest first, ties in the order of their
// first case; the records of each in report order. Passing and skipped
// records are left out.
func Causes(recs []*difftest.Record) []*Cause {
	var out []*Cause
	index := map[string]*Cause{}
	for _, r := range recs {
		if !r.Failed() {
			continue
		}
		rule, shape := RuleOf(r)
		c := &Cause{Class: r.Class, Diagnosis: r.Diagnosis, Undiagnosed: len(r.Diagnosis) == 0 && r.DiagnosisNote != "", Rule: rule, Shape: shape}
		key := c.key()
		if g, ok := index[key]; ok {
			g.Records = append(g.Records, r)
			continue
		}
		c.Records = []*difftest.Record{r}
		index[key] = c
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b *Cause) int { return len(b.Records) - len(a.Records) })
	return out
}

// key identifies a cause: the NUL byte cannot occur in a class, a
// diagnosis name or a message shape written by difftest.
func (c *Cause) key() string {
	return strings.Join([]string{string(c.Class), strings.Join(c.Diagnosis, "+"), strconv.FormatBool(c.Undiagnosed), c.Rule, c.Shape}, "\x00")
}

// Title is the block's heading: "137 cases · mismatch · rule padding",
// the rule only where the records name one (else their message states
// it), and "no diagnosis" or "not diagnosed" where a failing comparison
// has none (a diagnosis is the block's next lines, DiagnosisLines).
// Escaped (SafeText).
func (c *Cause) Title() string {
	n := "1 case"
	if len(c.Records) != 1 {
		n = fmt.Sprintf("%d cases", len(c.Records))
	}
	parts := []string{n, difftest.SafeText(string(c.Class))}
	if c.Rule != "" {
		parts = append(parts, "rule "+difftest.SafeText(c.Rule))
	}
	switch {
	case len(c.Diagnosis) > 0:
	case c.Undiagnosed:
		parts = append(parts, "not diagnosed")
	case c.Class == difftest.Mismatch || c.Class == difftest.NonFinite:
		parts = append(parts, "no diagnosis")
	}
	return strings.Join(parts, " · ")
}

// RuleOf returns the first rule r broke, by the name its record carries,
// or else the shape of its message. The name: the failed_rule metric
// (top-k's rule counters: padding, out_of_range, wrong_slots, duplicates,
// out_of_order, missing, extra); for a chained case its failing stage and
// that stage's rule ("stage 3 topk_transform: padding", from the message's
// "stage N KERNEL:" prefix and the metric stageN_failed_rule), or the
// stage alone when the stage names no rule. The shape, given only where
// the name does not say it all: the message with each number (decimal,
// hexadecimal, exponent, NaN, ±Inf) replaced by "#" (MessageShape).
func RuleOf(r *difftest.Record) (rule, shape string) {
	if m := stagePrefix.FindStringSubmatch(r.Message); m != nil {
		rule = "stage " + m[1] + " " + m[2]
		if v, ok := r.Metrics["stage"+m[1]+"_failed_rule"].(string); ok && v != "" {
			return rule + ": " + v, ""
		}
		return rule, MessageShape(r.Message)
	}
	if v, ok := r.Metrics["failed_rule"].(string); ok && v != "" {
		return v, ""
	}
	return "", MessageShape(r.Message)
}

// stagePrefix matches a chained case's message, "stage 3 topk_transform:
// mismatch: …" (pipeline.RunChain).
var stagePrefix = regexp.MustCompile(`^stage (\d+) ([A-Za-z0-9_]+): `)

// numberRE matches the numbers a message quotes: hexadecimal, decimal
// with a fraction or an exponent, and the non-finite values %g prints.
var numberRE = regexp.MustCompile(`0[xX][0-9a-fA-F]+|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:NaN|Inf|inf|nan)\b`)

// MessageShape is msg with every number replaced by "#" ("row #:
// page_indices[#][#] = # inside the first min(K, L) = # entries (L =
// #)"): two failures whose messages have one shape state the same rule.
func MessageShape(msg string) string { return numberRE.ReplaceAllString(msg, "#") }

// CaseList renders the ids of recs compactly for a cause's block: the
// kernel prefix written once per run of cases of one kernel
// ("topk_transform/{a, b, c}"), a case's seed in brackets when recs ran
// under more than one seed, and at most limit ids (limit ≤ 0: all), the
// rest counted ("… and 97 more"). Ids are escaped (SafeText).
func CaseList(recs []*difftest.Record, limit int) string {
	seeds := false
	for _, r := range recs {
		seeds = seeds || r.Seed != recs[0].Seed
	}
	shown := recs
	if limit > 0 && len(recs) > limit {
		shown = recs[:limit]
	}
	var groups []string
	for i := 0; i < len(shown); {
		kernel, _, ok := strings.Cut(shown[i].Case, "/")
		j := i
		var names []string
		for ; j < len(shown); j++ {
			k, name, ok2 := strings.Cut(shown[j].Case, "/")
			if ok2 != ok || k != kernel {
				break
			}
			if !ok2 {
				name = shown[j].Case
			}
			if seeds {
				name += fmt.Sprintf(" [seed %d]", shown[j].Seed)
			}
			names = append(names, difftest.SafeText(name))
		}
		switch {
		case !ok:
			groups = append(groups, strings.Join(names, ", "))
		case len(names) == 1:
			groups = append(groups, difftest.SafeText(kernel)+"/"+names[0])
		default:
			groups = append(groups, difftest.SafeText(kernel)+"/{"+strings.Join(names, ", ")+"}")
		}
		i = j
	}
	s := strings.Join(groups, ", ")
	if len(shown) < len(recs) {
		s += fmt.Sprintf(" … and %d more", len(recs)-len(shown))
	}
	return s
}

// Block renders cause number n (from 1) of a report as the table prints it
// and JUnit's <system-out> holds it: the title; the diagnosis lines
// (triage.DiagnosisLines) of its first case; that case's id, seed and
// message, its worst elements that break the rule (difftest.Breaking, at
// most difftest.MaxWorst) and replay line(s); then, when it stands for
// more, "N more cases like this: " and their ids (CaseList, at most limit).
// Lines are indented as in the table, without a newline; text from the
// record is escaped.
func (c *Cause) Block(n, limit int) []string {
	r := c.Records[0]
	lines := []string{fmt.Sprintf("[%d] %s", n, c.Title())}
	for _, l := range triage.DiagnosisLines(r) {
		lines = append(lines, "  "+l)
	}
	lines = append(lines, fmt.Sprintf("  %s (seed %d): %s", difftest.SafeText(r.Case), r.Seed, difftest.SafeLine(r.Message)))
	for _, e := range WorstShown(r) {
		lines = append(lines, "    "+WorstLine(e))
	}
	for _, l := range replayLines(r) {
		lines = append(lines, "    replay: "+l)
	}
	if more := c.More(); more > 0 {
		lines = append(lines, "  "+MoreLine(more)+": "+CaseList(c.Records[1:], limit))
	}
	return lines
}

// WorstShown is what a cause's block lists of its first case's worst
// elements: those that break the rule (difftest.Breaking), at most
// difftest.MaxWorst.
func WorstShown(r *difftest.Record) []difftest.Element {
	w := difftest.Breaking(r.Worst)
	return w[:min(len(w), difftest.MaxWorst)]
}

// MoreLine is "1 more case like this", "N more cases like this".
func MoreLine(n int) string {
	if n == 1 {
		return "1 more case like this"
	}
	return fmt.Sprintf("%d more cases like this", n)
}

// WorstLine formats one worst element: "worst page_indices[1][0]: got
// -64, want 361920 = slot(raw 0)", with " (ratio R)" for an element
// compared within a tolerance (Element.Ratio set); an exactly compared one
// has none to print. Escaped (SafeText).
func WorstLine(e difftest.Element) string {
	line := fmt.Sprintf("worst %s: got %s, want %s", elementName(e), difftest.SafeText(e.Got), difftest.SafeText(e.Want))
	if e.Ratio != nil {
		line += fmt.Sprintf(" (ratio %.3g)", *e.Ratio)
	}
	return line
}

// elementName is e's tensor and index as one name, escaped (SafeText):
// "page_indices[1][0]" for a subscript index, "cache token 0 slot 21 dim
// 42" (a space between) for an index in words.
func elementName(e difftest.Element) string {
	if e.Index == "" || strings.HasPrefix(e.Index, "[") {
		return difftest.SafeText(e.Tensor) + difftest.SafeText(e.Index)
	}
	return difftest.SafeText(e.Tensor) + " " + difftest.SafeText(e.Index)
}

// replayLines are a record's replay commands: its suite case's, and its
// saved capture's when it has one. Escaped (SafeText).
func replayLines(r *difftest.Record) []string {
	var out []string
	if r.Replay != "" {
		out = append(out, difftest.SafeText(r.Replay))
	}
	if r.Capture != "" {
		out = append(out, difftest.SafeText(ReplayCaptureCommand(r)))
	}
	return out
}
