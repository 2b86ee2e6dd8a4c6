// Listing of the registered CLI subcommands.
package difftest

import "sort"

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
