// Checks of a suite file around the TOML parser: its bounds, by a cheap
// pre-scan before the parser sees it, and the schema's types in the
// suite's own words when the decoder rejects one.
//
// The bounds: The parser (github.com/BurntSushi/toml) costs time and
// memory quadratic in the length of a key path: a 40 KB file of inline
// tables nested 10,000 deep, or one dotted key of 10,000 parts, takes
// gigabytes. A suite needs a key path of three parts (case.params.K) and
// one level of arrays, so the bounds are far above any real suite and far
// below what hurts.

package suite

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// MaxSuiteBytes bounds the size of one suite file: 1 MiB. The default
// suite's largest file is about 26 KB.
const MaxSuiteBytes = 1 << 20

// MaxSuiteDepth bounds nesting in a suite file: the parts of any key path
// (a [table.header] or [[array.of.tables]], the keys of the inline tables
// around a key, and the key's own dotted parts: case.params.K has 3), and
// the arrays and inline tables open at any point, each at most 8.
const MaxSuiteDepth = 8

// suiteFrame is an open array ('[') or inline table ('{'); base is the
// key-path depth its elements or keys start from.
type suiteFrame struct {
	kind byte
	base int
}

// checkSuiteBounds checks data, a suite file, against MaxSuiteBytes and
// MaxSuiteDepth without parsing it: it follows strings (all four TOML
// kinds), comments, table headers, keys and brackets, and nothing else.
// It only reports bounds; malformed TOML is left to the parser, and
// whatever the scan makes of it, the depth it measures never undercounts
// the parser's beyond the same bounds (both read strings and comments the
// same way). The error says the line, what was found and the limit.
func checkSuiteBounds(data []byte) error {
	if len(data) > MaxSuiteBytes {
		return fmt.Errorf("file is %d bytes, above the limit of %d bytes for a suite file (MaxSuiteBytes)", len(data), MaxSuiteBytes)
	}
	const (
		lineStart = iota // at the start of a top-level line: a header or a key
		key              // a key is next (inside an inline table)
		value            // anything else
	)
	var (
		stack []suiteFrame
		table int // key parts of the current [header]
		cur   int // key-path depth of the value being read
		mode  = lineStart
		line  = 1
	)
	deep := func(what string, n int) error {
		return fmt.Errorf("line %d: %s %d deep, above the limit of %d for a suite file (MaxSuiteDepth; case.params.KEY is 3)", line, what, n, MaxSuiteDepth)
	}
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == '\n':
			line++
			i++
			if len(stack) == 0 {
				mode = lineStart
			}
			continue
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case c == '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			continue
		}
		switch {
		case mode == lineStart && c == '[':
			i++
			if i < len(data) && data[i] == '[' {
				i++
			}
			var parts int
			parts, i, line = suiteKeyParts(data, i, line, "]\n")
			if parts > MaxSuiteDepth {
				return deep("table header key path", parts)
			}
			table, mode = parts, value
			for i < len(data) && data[i] == ']' {
				i++
			}
		case mode == lineStart || mode == key:
			if c == '}' && mode == key {
				mode = value // {} or a trailing comma: the closing brace is a value's
				continue
			}
			base := table
			if len(stack) > 0 {
				base = stack[len(stack)-1].base
			}
			var parts int
			parts, i, line = suiteKeyParts(data, i, line, "=\n{}[],#")
			if base+parts > MaxSuiteDepth {
				return deep("key path", base+parts)
			}
			cur, mode = base+parts, value
			if i < len(data) && data[i] == '=' {
				i++
			}
		default: // value
			switch c {
			case '"', '\'':
				i, line = suiteSkipString(data, i, line)
				continue
			case '[', '{':
				stack = append(stack, suiteFrame{kind: c, base: cur})
				if len(stack) > MaxSuiteDepth {
					return deep("arrays and inline tables nested", len(stack))
				}
				if c == '{' {
					mode = key
				}
			case ']', '}':
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
				if len(stack) > 0 {
					cur = stack[len(stack)-1].base
				}
			case ',':
				if len(stack) > 0 {
					top := stack[len(stack)-1]
					cur = top.base
					if top.kind == '{' {
						mode = key
					}
				}
			}
			i++
		}
	}
	return nil
}

// suiteKeyParts counts the dotted parts of the key path that starts at
// data[i] (a table header's or a key's), quoted parts skipped whole, up to
// the first byte of stop outside quotes; it returns the count, the index
// of that byte (len(data) when there is none) and the line there.
func suiteKeyParts(data []byte, i, line int, stop string) (parts, end, endLine int) {
	parts = 1
	for i < len(data) && strings.IndexByte(stop, data[i]) < 0 {
		switch data[i] {
		case '"', '\'':
			i, line = suiteSkipString(data, i, line)
			continue
		case '.':
			parts++
		}
		i++
	}
	return parts, i, line
}

// suiteSkipString returns the index just past the TOML string that starts
// at data[i] (a quote) and the line number after it. A one-quote string
// ends at its closing quote or at the end of the line (unterminated: the
// parser reports it); a multi-line string (three quotes) ends at the next
// three quotes of its kind plus up to two more, which belong to the
// string. In basic strings (double quotes) a backslash escapes the next
// byte.
func suiteSkipString(data []byte, i, line int) (int, int) {
	q := data[i]
	if bytes.HasPrefix(data[i:], []byte{q, q, q}) {
		i += 3
		for i < len(data) {
			switch {
			case data[i] == '\\' && q == '"':
				if i+1 < len(data) && data[i+1] == '\n' {
					line++
				}
				i += 2
				continue
			case data[i] == '\n':
				line++
			case bytes.HasPrefix(data[i:], []byte{q, q, q}):
				i += 3
				for extra := 0; extra < 2 && i < len(data) && data[i] == q; extra++ {
					i++
				}
				return i, line
			}
			i++
		}
		return i, line
	}
	for i++; i < len(data) && data[i] != '\n'; i++ {
		switch data[i] {
		case '\\':
			if q == '"' {
				i++
				if i < len(data) && data[i] == '\n' {
					return i, line // unterminated; the newline is the caller's
				}
			}
		case q:
			return i + 1, line
		}
	}
	return i, line
}

// suiteSchemaError decodes data, a suite file, without a schema and
// returns the first value whose type the suite schema does not allow, in
// the suite's terms (what the file holds, what it must hold): case not an
// array of tables, kernel, family or name not a string, params not a
// table. The schema decoder reports the first three in Go's terms
// ("TOML value has type map[string]interface {}; destination has type
// slice") and silently drops the last (params = 3 decodes as no params).
// It returns nil when every value has its type, or when data does not
// decode (the caller reports the syntax error).
func suiteSchemaError(data []byte) error {
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return nil
	}
	var entries []any
	switch v := raw["case"].(type) {
	case nil:
		return nil
	case map[string]any:
		return errors.New("[case] is one table; write each case as [[case]] (double brackets: an array of tables, one entry per case)")
	case []map[string]any:
		for _, m := range v {
			entries = append(entries, m)
		}
	case []any:
		entries = v
	default:
		return fmt.Errorf("case = %s: write each case as an [[case]] table", difftest.DescribeTOML(v))
	}
	for i, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			return fmt.Errorf("case #%d is %s: write each case as an [[case]] table", i+1, difftest.DescribeTOML(e))
		}
		for _, k := range []string{"kernel", "family", "name"} {
			if v, ok := m[k]; ok {
				if _, ok := v.(string); !ok {
					return fmt.Errorf("case #%d: %s = %s: must be a string, in quotes", i+1, k, difftest.DescribeTOML(v))
				}
			}
		}
		if v, ok := m["params"]; ok {
			if _, ok := v.(map[string]any); !ok {
				return fmt.Errorf("case #%d: params = %s: must be a table, [case.params] after the case's keys", i+1, difftest.DescribeTOML(v))
			}
		}
		if v, ok := m["matrix"]; ok {
			if _, ok := v.(map[string]any); !ok {
				return fmt.Errorf("case #%d: matrix = %s: must be a table, [case.matrix] after the case's keys", i+1, difftest.DescribeTOML(v))
			}
		}
	}
	return nil
}
