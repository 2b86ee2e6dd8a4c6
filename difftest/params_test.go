// Tests of Params: no value is coerced into a type the suite did not
// write (issue 9 item 10).

package difftest

import (
	"testing"
	"time"
)

func TestParamsNoCoercion(t *testing.T) {
	for _, tc := range []struct {
		reason string
		value  any
		read   func(p *Params)
		want   string
	}{
		{"a float is not an integer", 512.0, func(p *Params) { p.Int("v", 0) },
			`case k/c: param "v": must be an integer, got the float 512.0 (TOML reads 512.0 and 1e3 as floats; write 512)`},
		{"an integer is not an array", int64(5), func(p *Params) { p.Ints("v", nil) },
			`case k/c: param "v": must be an array of integers, got the integer 5 (write [5])`},
		{"a table is not an array", map[string]any{"a": int64(1)}, func(p *Params) { p.Ints("v", nil) },
			`case k/c: param "v": must be an array of integers, got a table`},
		{"an integer a float cannot hold", int64(1<<53 + 1), func(p *Params) { p.Float("v", 0) },
			`case k/c: param "v": the integer 9007199254740993 is not exactly a float (|n| ≤ 2^53); write it as a float, e.g. 9.007199254740992e+15`},
		{"a date is not a number", time.Date(1979, 5, 27, 7, 32, 0, 0, time.UTC), func(p *Params) { p.Float("v", 0) },
			`case k/c: param "v": must be a number, got the date-time 1979-05-27T07:32:00Z`},
		{"an integer is not a boolean", int64(1), func(p *Params) { p.Bool("v", false) },
			`case k/c: param "v": must be true or false, got the integer 1`},
		{"a nested array element", []any{int64(1), []any{int64(2)}}, func(p *Params) { p.Ints("v", nil) },
			`case k/c: param "v": element 1 must be an integer, got the array [2]`},
	} {
		p := NewParams("k/c", map[string]any{"v": tc.value})
		tc.read(p)
		if err := p.Err(); err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n\tgot  %v\n\twant %s", tc.reason, err, tc.want)
		}
	}
	// What is exact passes: an integer as a float (2^53 exactly), ints.
	p := NewParams("k/c", map[string]any{"f": int64(1 << 53), "i": int64(7), "a": []any{int64(1), 2}})
	if f, i, a := p.Float("f", 0), p.Int("i", 0), p.Ints("a", nil); p.Err() != nil || f != 1<<53 || i != 7 || len(a) != 2 || a[1] != 2 {
		t.Errorf("got %v %v %v, %v", f, i, a, p.Err())
	}
}
