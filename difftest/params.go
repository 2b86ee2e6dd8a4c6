package difftest

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Params reads a suite entry's parameters (CaseSpec.Params) with type
// checks, and reports any key the kernel did not read, so a typo in a
// suite file is an error rather than a silently ignored setting.
//
// Values come from TOML decoding: integers as int64 (int is accepted for
// Go callers), floats as float64, arrays as []any. Nothing is coerced: a
// float is never an integer (K = 512.0 and K = 1e3 are floats in TOML and
// an error where an integer is read), a single value is never an array
// (lengths = 5 is an error; write [5]), and an integer is a float only when
// the float holds it exactly (|n| ≤ 2^53). Every error names the case, the
// key, what the file holds and the rule.
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
	}
	return 0, false
}

// intRule is the rule an integer parameter states when v is not one.
func intRule(v any) string {
	if x, ok := v.(float64); ok && x == math.Trunc(x) && math.Abs(x) < 1<<63 {
		return fmt.Sprintf("must be an integer, got %s (TOML reads 512.0 and 1e3 as floats; write %d)", DescribeTOML(v), int64(x))
	}
	return "must be an integer, got " + DescribeTOML(v)
}

// Int returns the integer at key, or def when absent.
func (p *Params) Int(key string, def int) int {
	v, ok := p.get(key)
	if !ok {
		return def
	}
	n, ok := toInt(v)
	if !ok {
		p.fail(key, "%s", intRule(v))
	}
	return n
}

// Ints returns the integer array at key, or def when absent. A single
// integer is an error, not a one-element array.
func (p *Params) Ints(key string, def []int) []int {
	v, ok := p.get(key)
	if !ok {
		return def
	}
	arr, ok := v.([]any)
	if !ok {
		if n, isInt := toInt(v); isInt {
			p.fail(key, "must be an array of integers, got the integer %d (write [%d])", n, n)
		} else {
			p.fail(key, "must be an array of integers, got %s", DescribeTOML(v))
		}
		return def
	}
	out := make([]int, len(arr))
	for i, e := range arr {
		n, ok := toInt(e)
		if !ok {
			p.fail(key, "element %d %s", i, intRule(e))
			return def
		}
		out[i] = n
	}
	return out
}

// Float returns the number at key, or def when absent. An integer is
// taken when a float64 holds it exactly (|n| ≤ 2^53).
func (p *Params) Float(key string, def float64) float64 {
	v, ok := p.get(key)
	if !ok {
		return def
	}
	var n int64
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		n = x
	case int:
		n = int64(x)
	default:
		p.fail(key, "must be a number, got %s", DescribeTOML(v))
		return def
	}
	if n > 1<<53 || n < -(1<<53) {
		p.fail(key, "the integer %d is not exactly a float (|n| ≤ 2^53); write it as a float, e.g. %g", n, float64(n))
		return def
	}
	return float64(n)
}

// Bool returns the boolean at key, or def when absent.
func (p *Params) Bool(key string, def bool) bool {
	v, ok := p.get(key)
	if !ok {
		return def
	}
	b, ok := v.(bool)
	if !ok {
		p.fail(key, "must be true or false, got %s", DescribeTOML(v))
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
		p.fail(key, "must be a string, got %s", DescribeTOML(v))
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
		p.fail(key, "must be an array of tables, e.g. [{…}, {…}], got %s", DescribeTOML(v))
		return nil
	}
	out := make([]map[string]any, len(arr))
	for i, e := range arr {
		t, ok := e.(map[string]any)
		if !ok {
			p.fail(key, "element %d must be a table {…}, got %s", i, DescribeTOML(e))
			return nil
		}
		out[i] = t
	}
	return out
}

// DescribeTOML renders a decoded TOML value for a message in the file's
// own terms: `the integer 5`, `the float 512.0`, `the string "x"`, `true`,
// `the array [1, 2]`, `a table`, `the date-time 1979-05-27T07:32:00Z`.
func DescribeTOML(v any) string {
	switch x := v.(type) {
	case string:
		return "the string " + strconv.Quote(x)
	case int64, int:
		return fmt.Sprintf("the integer %d", x)
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEnN") {
			s += ".0"
		}
		return "the float " + s
	case bool:
		return strconv.FormatBool(x)
	case []any:
		if len(x) > 8 {
			return fmt.Sprintf("an array of %d values", len(x))
		}
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = tomlLiteral(e)
		}
		return "the array [" + strings.Join(parts, ", ") + "]"
	case []map[string]any:
		return fmt.Sprintf("an array of %d tables", len(x))
	case map[string]any:
		return "a table"
	case time.Time:
		return "the date-time " + x.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("a value of type %T", v)
}

// tomlLiteral renders one array element as TOML would write it.
func tomlLiteral(v any) string {
	s := DescribeTOML(v)
	for _, p := range []string{"the integer ", "the float ", "the string ", "the date-time ", "the array "} {
		if r, ok := strings.CutPrefix(s, p); ok {
			return r
		}
	}
	if s == "a table" {
		return "{…}"
	}
	return s
}
