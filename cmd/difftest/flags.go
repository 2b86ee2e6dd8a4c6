package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// parseNoArgs parses args with fs for the command named name, which takes
// flags only. ok is false when the command should stop with code: 0 for
// -h, 2 (a usage error, reported on stderr) for a bad flag or a
// positional argument.
func parseNoArgs(fs *flag.FlagSet, args []string, name string, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return difftest.ExitPass, false
		}
		return difftest.ExitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", name, fs.Arg(0))
		return difftest.ExitUsage, false
	}
	return 0, true
}
