package cli

import (
	"flag"
	"fmt"
	"strings"
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
	return fmt.Sprintf("no case of suite %s matches %s", suite, strings.Join(given, " "))
}

// flagGiven reports whether flag name was set on the command line (as
// opposed to left at its default).
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
