// The launch table: each kernel's launcher file (topk.go, normrope.go,
// logits.go) registers itself here from init, so the table is the set of
// launcher files and no list of kernels is kept by hand
// (docs/adding-a-kernel.md). launchers_test.go checks it against the entry
// points the kernels' headers declare (kernels/entries.txt, generated).

package bridge

import (
	"fmt"
	"sort"
)

// launcher is one kernel's launcher: the contract it launches, its packer,
// the C parameter struct it packs (passed by value, the entry's only
// parameter) and the entry points it may launch.
type launcher struct {
	Kernel  string   // contract name, e.g. "topk_transform"
	Pack    packer   // case → launch
	Struct  string   // C type name, e.g. "kd_topk_params"
	Header  string   // the header that declares Struct, from the repository root
	Size    int      // sizeof(Struct) as cgo compiled it, bytes
	Entries []string // extern "C" entry points the packer may name
}

// launchers are the registered launchers by contract name.
var launchers = map[string]launcher{}

// registerLauncher adds l to the launch table; called from the init of a
// launcher file. It panics on a second launcher for a contract or an
// entry point (a programming error).
func registerLauncher(l launcher) {
	if _, dup := launchers[l.Kernel]; dup {
		panic(fmt.Sprintf("bridge: second launcher for %s", l.Kernel))
	}
	for _, o := range launchers {
		for _, e := range o.Entries {
			for _, f := range l.Entries {
				if e == f {
					panic(fmt.Sprintf("bridge: entry point %s launched by %s and %s", e, o.Kernel, l.Kernel))
				}
			}
		}
	}
	launchers[l.Kernel] = l
}

// launcherNames returns the contracts with a launcher, sorted.
func launcherNames() []string {
	names := make([]string, 0, len(launchers))
	for n := range launchers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
