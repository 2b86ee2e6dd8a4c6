// Package registry is the name → value table behind every registry the
// tool fills from init functions: the harness's kernels, implementation
// factories and implementation prefixes, and the command's subcommands.
package registry

import (
	"sort"
	"sync"
)

// Table holds values by name; any goroutine may use it. Kind names what
// it holds in the panic of a second registration, e.g. "difftest:
// kernel". The zero value with Kind set is an empty table.
type Table[T any] struct {
	Kind string

	mu sync.Mutex
	m  map[string]T
}

// Add stores v under name. A second value for one name is a programming
// error: Add panics with "KIND registered twice: NAME".
func (t *Table[T]) Add(name string, v T) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.m[name]; dup {
		panic(t.Kind + " registered twice: " + name)
	}
	if t.m == nil {
		t.m = map[string]T{}
	}
	t.m[name] = v
}

// Get returns the value stored under name.
func (t *Table[T]) Get(name string) (T, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[name]
	return v, ok
}

// Names returns the names in the table, sorted.
func (t *Table[T]) Names() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := make([]string, 0, len(t.m))
	for n := range t.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Values returns the values in the order of their names (Names).
func (t *Table[T]) Values() []T {
	names := t.Names()
	t.mu.Lock()
	defer t.mu.Unlock()
	vs := make([]T, len(names))
	for i, n := range names {
		vs[i] = t.m[n]
	}
	return vs
}
