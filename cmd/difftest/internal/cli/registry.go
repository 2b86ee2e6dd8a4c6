// Subcommands added to the built-in ones: the registry, its listing.
package cli

import (
	"context"
	"io"

	"github.com/kerneldiff/kerneldiff/difftest/registry"
)

// Command is a subcommand added to the built-in ones (cmd/difftest adds
// "info", "gpu-selftest" and the hidden worker over bridge, and "study").
type Command struct {
	Name    string
	Summary string
	// Usage, when set, is the one-line synopsis `difftest help` prints in
	// place of Name, e.g. "info [--fatbin FILE] [--device N]".
	Usage  string
	Hidden bool
	Run    func(ctx context.Context, args []string, stdout, stderr io.Writer) int // exit code per docs/interfaces.md
}

var registered = registry.Table[Command]{Kind: "cli: command"}

// RegisterCommand adds a CLI subcommand. It panics on a duplicate name.
func RegisterCommand(c Command) { registered.Add(c.Name, c) }

// LookupCommand returns the registered subcommand with that name.
func LookupCommand(name string) (Command, bool) { return registered.Get(name) }

// Commands returns every registered subcommand (hidden ones included),
// sorted by name.
func Commands() []Command { return registered.Values() }
