// Replay commands: every failure prints one shell command that re-runs
// exactly that case (docs/architecture.md and docs/interfaces.md), with every flag that can change
// its verdict.
package difftest

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// DefaultTimeout is the --timeout of `difftest run` and `replay` when none
// is given: per run of the implementation on one case.
const DefaultTimeout = 2 * time.Minute

// QuickTimeout is the --timeout of `difftest run --suite quick` when none
// is given: the quick suite's cases are small (a few seconds each on the
// CPU emulator of a loaded 2-core machine), so a hang is reported in a
// minute, not two.
const QuickTimeout = time.Minute

// DefaultTimeoutFor is the --timeout `difftest run --suite suite` takes
// when none is given: QuickTimeout for the embedded quick suite,
// DefaultTimeout for every other suite, file or folder.
func DefaultTimeoutFor(suite string) time.Duration {
	if suite == "quick" {
		return QuickTimeout
	}
	return DefaultTimeout
}

// ReplayOptions are the run flags a replay command must repeat: each one
// can change a case's verdict (--timeout turns a slow case into a
// time-out, --fatbin and --device pick what runs).
type ReplayOptions struct {
	// Prog is the program as the user invoked it (os.Args[0], e.g.
	// "build/difftest"), already fit for a shell; "" means "difftest".
	Prog    string
	Suite   string // suite name or file
	Impl    string
	Fatbin  string        // --fatbin, "" when not given
	Device  int           // --device, repeated when not 0
	Timeout time.Duration // --timeout, repeated when not the command's default (DefaultTimeoutFor the suite; DefaultTimeout for replay)
	// Params are the run's --param NAME=VALUE, in order: ReplayCommand
	// repeats them (a capture file holds the params it ran with).
	Params []string
}

func (o ReplayOptions) prog() string {
	if o.Prog == "" {
		return "difftest"
	}
	return o.Prog
}

// flags renders the verdict-changing flags other than --suite, --seed,
// --impl and --run: " --fatbin PATH --device N --timeout D", each only
// when it differs from the default (def: the command's --timeout).
func (o ReplayOptions) flags(def time.Duration) string {
	var b strings.Builder
	if o.Fatbin != "" {
		b.WriteString(" --fatbin " + ShellQuote(o.Fatbin))
	}
	if o.Device != 0 {
		fmt.Fprintf(&b, " --device %d", o.Device)
	}
	if o.Timeout != def {
		b.WriteString(" --timeout " + o.Timeout.String())
	}
	return b.String()
}

// ReplayCommand returns
//
//	PROG run --suite SUITE --seed SEED --impl IMPL --run '^ID$' [--fatbin PATH] [--device N] [--timeout D] [--param NAME=VALUE]…
//
// with the case id regexp-quoted and every argument shell-quoted.
func ReplayCommand(o ReplayOptions, caseID string, seed uint64) string {
	var ps strings.Builder
	for _, p := range o.Params {
		ps.WriteString(" --param " + ShellQuote(p))
	}
	return fmt.Sprintf("%s run --suite %s --seed %d --impl %s --run %s%s%s", o.prog(),
		ShellQuote(o.Suite), seed, ShellQuote(o.Impl), singleQuote("^"+regexp.QuoteMeta(caseID)+"$"), o.flags(DefaultTimeoutFor(o.Suite)), ps.String())
}

// ReplayCaptureLine returns
//
//	PROG replay --impl IMPL [--fatbin PATH] [--device N] [--timeout D] FILE
//
// the command that re-runs a capture file (--save-failures, or the one
// `difftest replay` was given) with the same implementation and flags.
func ReplayCaptureLine(o ReplayOptions, file string) string {
	return fmt.Sprintf("%s replay --impl %s%s %s", o.prog(), ShellQuote(o.Impl), o.flags(DefaultTimeout), ShellQuote(file))
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
