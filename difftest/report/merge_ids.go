// Merge's check of case ids against the suite: a shard whose case lines
// were renamed, swapped or taken from another suite is refused, not only
// one whose counts or indices are off.

package report

import (
	"fmt"
	"github.com/kerneldiff/kerneldiff/difftest"
	"strings"
)

// CheckCaseIDs checks the case lines of rep, the shard report named where,
// against ids, the case ids in file order of suite, the suite its header
// names: the header's case count must be len(ids), and the case line at
// index i must be case ids[i mod len(ids)], under every seed (so the same
// ids in the same order for each seed). Indices outside the run are left
// to MergeNamed, which names them. Case ids are escaped for the terminal
// in the error.
func CheckCaseIDs(where string, rep *Report, suite string, ids []string) error {
	C := len(ids)
	if rep.Header.Cases != C {
		return fmt.Errorf("merge: %s: its header counts %d cases per seed, but suite %s has %d: the shard was run on another version of the suite", where, rep.Header.Cases, difftest.SafeLine(suite), C)
	}
	if C == 0 {
		return nil
	}
	for _, r := range rep.Records {
		if r.Index < 0 || r.Index/C >= max(rep.Header.Repeat, 1) {
			continue
		}
		if want := ids[r.Index%C]; r.Case != want {
			return fmt.Errorf("merge: %s: index %d (seed %d) is case %s, but suite %s has %s at position %d: a renamed, reordered or foreign case line", where, r.Index, r.Seed, difftest.SafeLine(r.Case), difftest.SafeLine(suite), difftest.SafeLine(want), r.Index%C)
		}
	}
	return nil
}

// checkRecordFields refuses a case line whose own fields disagree: a
// verdict other than pass, fail or skip, or a kernel other than the one
// its case id names (kernel/name; a line without a kernel is not checked).
func checkRecordFields(where string, r *difftest.Record) error {
	switch r.Verdict {
	case difftest.VerdictPass, difftest.VerdictFail, difftest.VerdictSkip:
	default:
		return fmt.Errorf("merge: %s: index %d (%s) has verdict %q, want pass, fail or skip", where, r.Index, difftest.SafeLine(r.Case), difftest.SafeLine(string(r.Verdict)))
	}
	if k, _, ok := strings.Cut(r.Case, "/"); r.Kernel != "" && (!ok || k != r.Kernel) {
		return fmt.Errorf("merge: %s: index %d is case %s of kernel %q: a case id names its kernel (kernel/name)", where, r.Index, difftest.SafeLine(r.Case), difftest.SafeLine(r.Kernel))
	}
	return nil
}
