// Subcommands added to the built-in ones: the registry, its listing.
package cli

import (
	"context"
	"io"
	"sort"
	"sync"
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

var registry struct {
	sync.Mutex
	commands map[string]Command
}

// RegisterCommand adds a CLI subcommand. It panics on a duplicate name.
func RegisterCommand(c Command) {
	registry.Lock()
	defer registry.Unlock()
	if registry.commands == nil {
		registry.commands = map[string]Command{}
	}
	if _, dup := registry.commands[c.Name]; dup {
		panic("cli: command registered twice: " + c.Name)
	}
	registry.commands[c.Name] = c
}

// LookupCommand returns the registered subcommand with that name.
func LookupCommand(name string) (Command, bool) {
	registry.Lock()
	defer registry.Unlock()
	c, ok := registry.commands[name]
	return c, ok
}

// Commands returns every registered subcommand (hidden ones included),
// sorted by name.
func Commands() []Command {
	registry.Lock()
	defer registry.Unlock()
	cs := make([]Command, 0, len(registry.commands))
	for _, c := range registry.commands {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	return cs
}
