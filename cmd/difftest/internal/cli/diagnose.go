package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// diagnoseFlag is --diagnose: "on" (the default: each failing case within
// triage.DefaultDiagnoseBudget, the run within
// triage.DefaultDiagnoseTotal), "off", or a duration, the budget of each
// failing case (the run's total is then the larger of that and the
// default total). A diagnosis is a hint, never a verdict: the flag changes
// no exit code, so replay lines do not repeat it.
type diagnoseFlag struct {
	off     bool
	perCase time.Duration
}

func (d *diagnoseFlag) String() string {
	switch {
	case d == nil || !d.off && d.perCase == 0:
		return "on"
	case d.off:
		return "off"
	}
	return d.perCase.String()
}

func (d *diagnoseFlag) Set(s string) error {
	switch s {
	case "on", "true":
		*d = diagnoseFlag{}
		return nil
	case "off", "false":
		*d = diagnoseFlag{off: true}
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return fmt.Errorf("want on, off or a positive duration such as 30s, got %q", s)
	}
	*d = diagnoseFlag{perCase: v}
	return nil
}

// IsBoolFlag lets "--diagnose" alone mean "on".
func (d *diagnoseFlag) IsBoolFlag() bool { return true }

// config is the triage.DiagnoseConfig of the flag, nil when off.
func (d *diagnoseFlag) config() *triage.DiagnoseConfig {
	if d.off {
		return nil
	}
	return &triage.DiagnoseConfig{PerCase: d.perCase, Total: max(d.perCase, triage.DefaultDiagnoseTotal)}
}

// hook is the run's diagnosis hook (difftest.Config.Diagnose), nil when off.
func (d *diagnoseFlag) hook() func(context.Context, difftest.Kernel, *difftest.Case, difftest.Outcome, *difftest.Record) {
	if c := d.config(); c != nil {
		return c.DiagnoseRecord
	}
	return nil
}

var diagnoseUsage = fmt.Sprintf("name the catalog mutants and semantic variants each failing case behaves like: on, off, or `BUDGET` per failing case (default on: %v per case, %v per run)",
	triage.DefaultDiagnoseBudget, triage.DefaultDiagnoseTotal)
