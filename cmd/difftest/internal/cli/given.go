package cli

import (
	"flag"
	"fmt"
	"regexp"
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// noMatchMessage is the usage error of a run that selects no case: it
// names the suite and only the selection flags the user gave (--run,
// --shard), as given, not the empty defaults of the others.
func noMatchMessage(fs *flag.FlagSet, suite string) string {
	var given []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "run" || f.Name == "shard" {
			given = append(given, fmt.Sprintf("--%s %q", f.Name, f.Value.String()))
		}
	})
	if len(given) == 0 {
		return fmt.Sprintf("suite %s has no case to run", suite)
	}
	msg := fmt.Sprintf("no case of suite %s matches %s", suite, strings.Join(given, " "))
	if f := fs.Lookup("run"); f != nil {
		msg += runKernelHint(f.Value.String())
	}
	return msg
}

// runKernelHint names a --run pattern's kernel when it is none: a case
// id is KERNEL/NAME, so a pattern whose literal start is "WORD/" (or
// "^WORD/") asks for kernel WORD. It returns "; topk_transfrom is no
// kernel (did you mean \"topk_transform\"? known: …)", or "" when the
// pattern does not start with a kernel name or the name is a kernel's.
func runKernelHint(run string) string {
	re, err := regexp.Compile(run)
	if err != nil {
		return ""
	}
	prefix, _ := re.LiteralPrefix()
	name, _, ok := strings.Cut(prefix, "/")
	if !ok || name == "" {
		return ""
	}
	if _, known := difftest.LookupKernel(name); known {
		return ""
	}
	return "; " + difftest.UnknownName("kernel", name, difftest.KernelNames()) + " in --run"
}

// flagGiven reports whether flag name was set on the command line (as
// opposed to left at its default).
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
