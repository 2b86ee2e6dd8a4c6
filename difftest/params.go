package difftest

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Params reads a suite entry's parameters (CaseSpec.Params) with type
// checks, and reports any key the kernel did not read, so a typo in a
// suite file is an error rather than a silently ignored setting.
//
// Values come from TOML or JSON decoding: integers as int64 (or float64
// holding an integer, from JSON), floats as float64, arrays as []any.
// Every error names the case, the key and the rule.
type Params struct {
	id   string
	m    map[string]any
	used map[string]bool
	err  error
}

// NewParams wraps the parameters of the case with the given id.
func NewParams(id string, m map[string]any) *Params {
	return &Params{id: id, m: m, used: map[string]bool{}}
}

func (p *Params) fail(key, format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("case %s: param %q: %s", p.id, key, fmt.Sprintf(format, args...))
	}
}

func (p *Params) get(key string) (any, bool) {
	v, ok := p.m[key]
	if ok {
		p.used[key] = true
	}
	return v, ok
}

func toInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		if x < math.MinInt || x > math.MaxInt {
			return 0, false
		}
		return int(x), true
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, false
		}
		return int(x), true
	}
	return 0, false
}

// Int returns the integer at key, or def when absent.
func (p *Params) Int(key string, def int) int {
	v, ok := p.get(key)
	if !ok {
		return def
	}
	n, ok := toInt(v)
	if !ok {
		p.fail(key, "must be an integer, got %v", v)
	}
	return n
}

// Ints returns the integer array at key (a single integer is accepted as a
// one-element array), or def when absent.
func (p *Params) Ints(key string, def []int) []int {
	v, ok := p.get(key)
	if !ok {
		return def
	}
	if n, ok := toInt(v); ok {
		return []int{n}
	}
	arr, ok := v.([]any)
	if !ok {
		p.fail(key, "must be an array of integers, got %v", v)
		return def
	}
	out := make([]int, len(arr))
	for i, e := range arr {
		n, ok := toInt(e)
		if !ok {
			p.fail(key, "element %d must be an integer, got %v", i, e)
			return def
		}
		out[i] = n
	}
	return out
}

// Float returns the number at key, or def when absent.
func (p *Params) Float(key string, def float64) float64 {
	v, ok := p.get(key)
	if !ok {
		return def
	}
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case int:
		return float64(x)
	}
	p.fail(key, "must be a number, got %v", v)
	return def
}

// Bool returns the boolean at key, or def when absent.
func (p *Params) Bool(key string, def bool) bool {
	v, ok := p.get(key)
	if !ok {
		return def
	}
	b, ok := v.(bool)
	if !ok {
		p.fail(key, "must be true or false, got %v", v)
	}
	return b
}

// String returns the string at key, or def when absent. When allowed is
// non-empty the value must be one of them.
func (p *Params) String(key, def string, allowed ...string) string {
	v, ok := p.get(key)
	if !ok {
		return def
	}
	s, ok := v.(string)
	if !ok {
		p.fail(key, "must be a string, got %v", v)
		return def
	}
	if len(allowed) > 0 {
		for _, a := range allowed {
			if s == a {
				return s
			}
		}
		p.fail(key, "must be one of %s, got %q", strings.Join(allowed, ", "), s)
	}
	return s
}

// Err returns the first type error, or an error naming every key that
// was never read (unknown parameters).
func (p *Params) Err() error {
	if p.err != nil {
		return p.err
	}
	var unknown []string
	for k := range p.m {
		if !p.used[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("case %s: unknown param(s) %s", p.id, strings.Join(unknown, ", "))
	}
	return nil
}

// Tables returns the array of tables at key (TOML `key = [{a = 1}, {a =
// 2}]`), each as the decoded map, or nil when absent. The kernel checks
// the tables' own keys and values. A value that is not an array, or an
// element that is not a table, is a type error naming its position.
func (p *Params) Tables(key string) []map[string]any {
	v, ok := p.get(key)
	if !ok {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		p.fail(key, "must be an array of tables, e.g. [{…}, {…}], got %v", v)
		return nil
	}
	out := make([]map[string]any, len(arr))
	for i, e := range arr {
		t, ok := e.(map[string]any)
		if !ok {
			p.fail(key, "element %d must be a table {…}, got %v", i, e)
			return nil
		}
		out[i] = t
	}
	return out
}
