package cli

import (
	"fmt"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/report"
)

// checkShardIDs checks every shard's case lines against the suite its
// header names (loadSuite: an embedded name, a file or a capture folder,
// resolved from the working folder), or against suite when given (merge
// --suite, for shards run elsewhere): same case count, and at each index
// the case id the suite has at that position, for every seed
// (report.CheckCaseIDs). A suite that cannot be loaded is an error: the
// case lines could not be checked.
func checkShardIDs(names []string, reps []*report.Report, suite string) error {
	loaded := map[string][]string{}
	for i, r := range reps {
		name := suite
		if name == "" {
			name = r.Header.Suite
		}
		ids, ok := loaded[name]
		if !ok {
			if name == "" {
				return fmt.Errorf("merge: %s: its header names no suite: give merge --suite NAME|FILE", names[i])
			}
			s, err := loadSuite(name)
			if err != nil {
				return fmt.Errorf("merge: %s: its suite %s cannot be loaded here, so its case ids cannot be checked (%v): give merge --suite NAME|FILE", names[i], difftest.SafeLine(name), err)
			}
			for _, sc := range s.Cases {
				ids = append(ids, sc.Spec.ID())
			}
			loaded[name] = ids
		}
		if err := report.CheckCaseIDs(names[i], r, name, ids); err != nil {
			return err
		}
	}
	return nil
}
