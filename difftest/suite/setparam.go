// Suite parameters set from the command line (docs/failures.md, "Declared
// precision"): `difftest run --param accum_bits=8` sets the param in every
// case that takes it, so a user can declare the precision an
// implementation computes at without editing a suite.

package suite

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// ParseParamAssign parses one --param value "NAME=VALUE": VALUE as a TOML
// scalar would decode (an integer as int64, a number as float64, true or
// false as bool, anything else as a string). An empty NAME or a missing
// "=" is an error naming the flag.
func ParseParamAssign(s string) (string, any, error) {
	name, val, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return "", nil, fmt.Errorf("--param %q: want NAME=VALUE, e.g. accum_bits=8", s)
	}
	if i, err := strconv.ParseInt(val, 10, 64); err == nil {
		return name, i, nil
	}
	if f, err := strconv.ParseFloat(val, 64); err == nil {
		return name, f, nil
	}
	if b, err := strconv.ParseBool(val); err == nil && (val == "true" || val == "false") {
		return name, b, nil
	}
	return name, val, nil
}

// SetParams sets each NAME=VALUE of assigns (ParseParamAssign) in every
// case of s that run selects (its ID matches; nil selects every case) and
// whose kernel documents NAME for its family (FamilyDescriber), replacing
// the suite's value, and checks each changed case with CheckCaseSpec. A
// name no selected case takes, or a value a selected case rejects, is an
// error naming the param (and the case); cases run leaves out keep their
// params, so `--run` can leave out the families a configuration does not
// fit. Captured cases (SuiteCase.Capture) keep their params (when only
// captures take NAME, the error says so). A NAME given
// twice is an error naming both assignments (one would silently replace
// the other).
func SetParams(s *difftest.Suite, assigns []string, run *regexp.Regexp) error {
	seen := map[string]string{}
	for _, a := range assigns {
		name, val, err := ParseParamAssign(a)
		if err != nil {
			return err
		}
		if prev, ok := seen[name]; ok {
			return fmt.Errorf("--param %s: %q is already set by --param %s (give each param once)", a, name, prev)
		}
		seen[name] = a
		n, captured := 0, 0
		for i := range s.Cases {
			sc := &s.Cases[i]
			if (run != nil && !run.MatchString(sc.Spec.ID())) || !takesParam(sc.Spec, name) {
				continue
			}
			if sc.Capture != "" {
				captured++
				continue
			}
			ps := make(map[string]any, len(sc.Spec.Params)+1)
			for k, v := range sc.Spec.Params {
				ps[k] = v
			}
			ps[name] = val
			sc.Spec.Params = ps
			k, _ := difftest.LookupKernel(sc.Spec.Kernel)
			if err := CheckCaseSpec(k, sc.Spec); err != nil {
				return fmt.Errorf("--param %s: %w", a, err)
			}
			n++
		}
		if n == 0 && captured > 0 {
			return fmt.Errorf("--param %s: the selected cases of suite %s that take %q are captures (%d), which keep the params they were recorded with", a, s.Name, name, captured)
		}
		if n == 0 {
			return fmt.Errorf("--param %s: no selected case of suite %s takes %q (see difftest list families)", a, s.Name, name)
		}
	}
	return nil
}

// takesParam reports whether spec's kernel documents param name for
// spec's family.
func takesParam(spec difftest.CaseSpec, name string) bool {
	k, ok := difftest.LookupKernel(spec.Kernel)
	if !ok {
		return false
	}
	fd, ok := k.(difftest.FamilyDescriber)
	if !ok {
		return false
	}
	for _, f := range fd.DescribeFamilies() {
		if f.Name == spec.Family {
			return slices.ContainsFunc(f.Params, func(p difftest.ParamInfo) bool { return p.Name == name })
		}
	}
	return false
}
