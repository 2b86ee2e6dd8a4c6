// Failures grouped by cause (docs/failures.md): the table, JUnit and the
// HTML report show one block per cause, not one per failing case, so that
// 137 cases failing for one reason read as one block. A diagnosed failure's
// cause is its class and diagnosis (the known bug it behaves like names
// the cause, whichever rule each case broke first); an undiagnosed one's
// is its class and first broken rule.

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
	// Rule is Records[0]'s first broken rule by name where the record
	// carries one (RuleOf): "wrong_slots", "stage 3 topk_transform:
	// padding"; empty where only the message states it.
	Rule string
	// Shape, where Rule does not name the rule in full, is the cases'
	// message with every number replaced by "#" (MessageShape): failures
	// whose messages have one shape broke the same rule (the same tensor
	// and element kind, the same guard band, the same sentence).
	Shape string
	// Records are the failing cases, in report order: Records[0] is the
	// one a report shows in full.
	Records []*difftest.Record
	// Rules are the first broken rules of Records, one entry per rule
	// (Rule and Shape as above), largest first (ties in order of first
	// appearance), and Records[0] is the first case of Rules[0]: one entry
	// for an undiagnosed cause, one or more for a diagnosed one (a bug
	// that breaks the FP8 codes of one case and the scales of another is
	// still one cause).
	Rules []*RuleGroup
}

// RuleGroup is one first broken rule of a cause's cases: its name (or
// message shape) and the cases that broke it first, in report order.
type RuleGroup struct {
	Rule, Shape string
	Records     []*difftest.Record
}

// Label names the rule in a few words: "rule wrong_slots", or the message
// shape up to the value it quotes ("cache token # slot # dim #"), at most
// 80 characters. Escaped (SafeText).
func (g *RuleGroup) Label() string {
	if g.Rule != "" {
		return "rule " + difftest.SafeText(g.Rule)
	}
	l := g.Shape
	for _, cut := range []string{": got ", " got ", ": "} {
		if i := strings.Index(l, cut); i > 0 {
			l = l[:i]
			break
		}
	}
	if r := []rune(l); len(r) > 80 {
		l = string(r[:79]) + "…"
	}
	return difftest.SafeLine(l)
}

// More is how many cases the block stands for besides its first.
func (c *Cause) More() int { return len(c.Records) - 1 }

// Causes groups the failing records of recs by cause: class and
// diagnosis for a diagnosed record, class and first broken rule (RuleOf;
// the message's shape when the record names none) for one without a
// diagnosis. Within a cause, Rules counts the rules its cases broke
// first. The groups come largest first, ties in the order of their first
// case; the records of each in report order. Passing and skipped records
// are left out.
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
		g, ok := index[key]
		if !ok {
			g = c
			index[key] = g
			out = append(out, g)
		}
		g.Records = append(g.Records, r)
		g.addRule(rule, shape, r)
	}
	for _, c := range out {
		// The case shown in full is the first of the rule most of the
		// cause's cases broke first.
		slices.SortStableFunc(c.Rules, func(a, b *RuleGroup) int { return len(b.Records) - len(a.Records) })
		if first := c.Rules[0].Records[0]; first != c.Records[0] {
			i := slices.Index(c.Records, first)
			c.Records = slices.Concat([]*difftest.Record{first}, c.Records[:i], c.Records[i+1:])
			c.Rule, c.Shape = c.Rules[0].Rule, c.Rules[0].Shape
		}
	}
	slices.SortStableFunc(out, func(a, b *Cause) int { return len(b.Records) - len(a.Records) })
	return out
}

// addRule counts r under its first broken rule.
func (c *Cause) addRule(rule, shape string, r *difftest.Record) {
	for _, g := range c.Rules {
		if g.Rule == rule && g.Shape == shape {
			g.Records = append(g.Records, r)
			return
		}
	}
	c.Rules = append(c.Rules, &RuleGroup{Rule: rule, Shape: shape, Records: []*difftest.Record{r}})
}

// key identifies a cause: class and diagnosis where there is one, class,
// rule and shape where there is none. The NUL byte cannot occur in a
// class, a diagnosis name or a message shape written by difftest.
func (c *Cause) key() string {
	if len(c.Diagnosis) > 0 {
		return strings.Join([]string{string(c.Class), strings.Join(c.Diagnosis, "+")}, "\x00")
	}
	return strings.Join([]string{string(c.Class), "", strconv.FormatBool(c.Undiagnosed), c.Rule, c.Shape}, "\x00")
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
	switch {
	case len(c.Rules) > 1:
		parts = append(parts, fmt.Sprintf("%d rules", len(c.Rules)))
	case c.Rule != "":
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
// message, the program's note on it (a warning opening with
// difftest.ProgramSays), its worst elements that break the rule (difftest.Breaking, at
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
	for _, w := range r.Warnings {
		// The program's own word on the run (a hint such as "fill it in
		// place") belongs beside the failure it explains.
		if strings.HasPrefix(w, difftest.ProgramSays) {
			lines = append(lines, "    "+difftest.SafeLine(w))
		}
	}
	for _, e := range WorstShown(r) {
		lines = append(lines, "    "+WorstLine(e))
	}
	for _, l := range replayLines(r) {
		lines = append(lines, "    replay: "+l)
	}
	if len(c.Rules) > 1 {
		lines = append(lines, "  first broken rule, by case:")
		for _, g := range c.Rules {
			n := "1 case"
			if len(g.Records) != 1 {
				n = fmt.Sprintf("%d cases", len(g.Records))
			}
			lines = append(lines, fmt.Sprintf("    %s: %s, e.g. %s", g.Label(), n, difftest.SafeText(g.Records[0].Case)))
		}
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
