// The selftest table (difftest selftest, difftest gpu-selftest).

package render

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// WriteSelftestTable prints the rows as an aligned table
//
//	KERNEL          MUTANT              CAUGHT  CASE                      CHECK     DIAGNOSED AS
//	topk_transform  reference           passed  (41 cases)                -         -
//	topk_transform  topk-tie-hole       yes     topk_transform/ties-k     mismatch  topk-tie-hole
//
// (DIAGNOSED AS: what Diagnose named on the catching case, "nothing" when
// it named none, marked "(WRONG)" when the row expects another name),
// followed by one line per row that is not OK, and a verdict line.
func WriteSelftestTable(w io.Writer, rows []triage.SelftestRow, ok bool) error {
	table := [][]string{{"KERNEL", "MUTANT", "CAUGHT", "CASE", "CHECK", "DIAGNOSED AS", "TIME"}}
	var bad []string
	caught, mutants, expect, diagnosed := 0, 0, 0, 0
	for _, r := range rows {
		status, where, check := "no", fmt.Sprintf("(%d cases)", r.Cases), "-"
		if r.Mutant == "reference" {
			status = "passed"
			if r.Caught {
				status = "FAILED"
			}
		} else {
			mutants++
			if r.Caught {
				status = "yes"
				caught++
			} else {
				status = "NO"
			}
		}
		if len(r.Expect) > 0 && r.Mutant != "reference" {
			expect++
			if r.Caught && r.DiagnosedAsExpected() {
				diagnosed++
			}
		}
		diag := "-"
		if r.Caught {
			where, check = r.Case, string(r.Class)
			if r.Mutant != "reference" {
				diag = strings.Join(r.Diagnosis, ", ")
				if diag == "" {
					diag = "nothing"
				}
				if len(r.Expect) > 0 && !r.DiagnosedAsExpected() {
					diag += " (WRONG)"
				}
			}
		}
		table = append(table, []string{r.Kernel, r.Mutant, status, where, check, difftest.SafeText(diag), fmtDuration(r.Elapsed)})
		if !r.OK() {
			switch {
			case r.Mutant == "reference":
				bad = append(bad, fmt.Sprintf("the %s reference fails %s (seed %d): %s: %s", r.Kernel, r.Case, r.Seed, r.Class, difftest.SafeLine(r.Message)))
			case !r.Caught:
				bad = append(bad, fmt.Sprintf("mutant %s (%s) passed all %d cases of %s", r.Mutant, r.Fault, r.Cases, r.Kernel))
			default:
				what := "nothing"
				if len(r.Diagnosis) > 0 {
					what = strings.Join(r.Diagnosis, ", ")
				}
				if r.DiagnosisNote != "" {
					what += " (" + r.DiagnosisNote + ")"
				}
				bad = append(bad, fmt.Sprintf("mutant %s, caught by %s (seed %d), is diagnosed as %s, not as %s", r.Mutant, r.Case, r.Seed, difftest.SafeLine(what), strings.Join(r.Expect, " or ")))
			}
		}
	}
	widths := make([]int, len(table[0]))
	for _, row := range table {
		for j, c := range row {
			widths[j] = max(widths[j], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, row := range table {
		var line strings.Builder
		for j, c := range row {
			line.WriteString(c)
			if j < len(row)-1 {
				line.WriteString(strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c)+2))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	if len(bad) > 0 {
		b.WriteString("\n")
		for _, l := range bad {
			b.WriteString(l + "\n")
		}
	}
	verdict := "selftest passed"
	if !ok {
		verdict = "selftest FAILED"
	}
	fmt.Fprintf(&b, "\n%s: %d of %d mutants caught, reference %s", verdict, caught, mutants, triage.RefWord(rows))
	if expect > 0 {
		fmt.Fprintf(&b, "; %d of %d diagnosed as themselves", diagnosed, expect)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
