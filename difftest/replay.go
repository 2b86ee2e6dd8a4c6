// Replay commands: every failure prints one shell command that re-runs
// exactly that case (DESIGN.md §1, §7).
package difftest

import (
	"fmt"
	"regexp"
	"strings"
)

// ReplayOptions are the run flags a replay command must repeat.
type ReplayOptions struct {
	Suite  string // suite name or file
	Impl   string
	Fatbin string // --fatbin, "" when not given
	Device int    // --device, repeated when not 0
}

// ReplayCommand returns
//
//	difftest run --suite SUITE --seed SEED --impl IMPL --run '^ID$' [--fatbin PATH] [--device N]
//
// with the case id regexp-quoted and every argument shell-quoted.
func ReplayCommand(o ReplayOptions, caseID string, seed uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "difftest run --suite %s --seed %d --impl %s --run %s",
		ShellQuote(o.Suite), seed, ShellQuote(o.Impl), singleQuote("^"+regexp.QuoteMeta(caseID)+"$"))
	if o.Fatbin != "" {
		b.WriteString(" --fatbin " + ShellQuote(o.Fatbin))
	}
	if o.Device != 0 {
		fmt.Fprintf(&b, " --device %d", o.Device)
	}
	return b.String()
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`)

// ShellQuote returns s unchanged when it holds only characters no POSIX
// shell treats specially, and single-quoted otherwise.
func ShellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return singleQuote(s)
}

func singleQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
