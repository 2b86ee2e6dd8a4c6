// Suite matrices: one [[case]] table that stands for the cartesian
// product of lists of parameter values, its case names built from a
// template (fixtures/suites/README.md "Matrix cases").
//
//	[[case]]
//	kernel = "topk_transform"
//	family = "needle"
//	name   = "needle-l{lengths}-k{K}"
//	[case.params]
//	P = 64
//	[case.matrix]
//	K       = [512, 1024]
//	lengths = [[1000], [4500]]
//
// is the four cases needle-l1000-k512, needle-l4500-k512,
// needle-l1000-k1024 and needle-l4500-k1024, in that order: the axes nest
// like for-loops in the order they are written, the first outermost.

package suite

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// MaxMatrixCases bounds the number of cases one [[case]] table may expand
// into: the product of its matrix list lengths is checked against it
// before any case is built, so a hostile file of a few lines cannot ask
// for 100^10 cases.
const MaxMatrixCases = 10000

// MaxSuiteCases bounds the number of cases one suite file expands into,
// its matrices and written-out cases together, checked before each
// [[case]] is expanded: with MaxMatrixCases alone, a file of a thousand
// small matrix tables could still ask for ten million cases.
const MaxSuiteCases = 100000

// ErrMatrix is the sentinel every matrix or name-template error of a
// suite file wraps (errors.Is(err, ErrMatrix)); the *SuiteError around it
// names the file and the case as written (its name template).
var ErrMatrix = errors.New("matrix")

// matrixKeyLabel is the key of a table entry of a matrix list that labels
// the entry in the case name; every other key of the entry is a setting.
const matrixKeyLabel = "name"

// suiteEntry is one [[case]] table as written: a CaseSpec whose name may
// be a template, and its optional [case.matrix].
type suiteEntry struct {
	Kernel string         `toml:"kernel"`
	Family string         `toml:"family"`
	Name   string         `toml:"name"`
	Params map[string]any `toml:"params"`
	Matrix map[string]any `toml:"matrix"`
}

// expandedCase is one case of an expanded entry and the combination it
// came from ("" for an entry without a matrix), for error messages.
type expandedCase struct {
	spec  difftest.CaseSpec
	combo string
}

// matrixAxis is one key of [case.matrix]: the settings of each of its
// values, and their labels when the values are tables.
type matrixAxis struct {
	key      string
	tables   bool             // the values are tables of settings
	settings []map[string]any // per value: setting key → value
	labels   []string         // per value, tables only: the entry's name, or ""
	named    bool             // tables whose entries have names: {key} in the name template is the entry's name
	keys     []string         // every setting key the axis sets, in first-seen order
}

// matrixErrorf returns an error wrapping ErrMatrix.
func matrixErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMatrix, fmt.Sprintf(format, args...))
}

// matrixOrders returns, for each [[case]] entry of a decoded file, the
// keys of its [case.matrix] in the order the file writes them. A decoded
// map has no order, so it is read off md.Keys(), which lists every key in
// file order: each entry's matrix keys are the next len(Matrix) keys at
// depth case.matrix.KEY. The result is checked against each entry's
// keys; an error means the file uses a form whose order cannot be told
// this way.
func matrixOrders(md toml.MetaData, entries []suiteEntry) ([][]string, error) {
	var seq []string
	for _, k := range md.Keys() {
		if len(k) == 3 && k[0] == "case" && k[1] == "matrix" {
			seq = append(seq, k[2])
		}
	}
	orders := make([][]string, len(entries))
	for i, e := range entries {
		n := len(e.Matrix)
		if n > len(seq) {
			return nil, matrixErrorf("case #%d: cannot tell the order of the [case.matrix] keys; write them as a [case.matrix] table", i+1)
		}
		order := seq[:n]
		seq = seq[n:]
		for _, k := range order {
			if _, ok := e.Matrix[k]; !ok {
				return nil, matrixErrorf("case #%d: cannot tell the order of the [case.matrix] keys; write them as a [case.matrix] table", i+1)
			}
		}
		orders[i] = order
	}
	return orders, nil
}

// reservedMatrixKeys are the [[case]] keys that are not settings.
var reservedMatrixKeys = map[string]bool{"kernel": true, "name": true, "params": true, "matrix": true}

// expandEntry returns the cases of one [[case]] entry: one case when it
// has no matrix, else one per combination of the matrix lists, first axis
// outermost. A setting is a parameter, or "family". The name is rendered
// from its template for each case (renderName). Errors (each wrapping
// ErrMatrix) say what the file wrote and the rule it breaks:
//   - a matrix key that is kernel, name, params or matrix, or is also
//     given in [case.params] (or, for family, as the case's family);
//   - a matrix value that is not a non-empty list, a list mixing tables
//     and plain values, a table entry with a key of the case itself, or
//     a name that is not a non-empty string;
//   - two axes setting one key;
//   - a list of tables where some entries have a name and some do not,
//     or whose entries have names while the name template has no {KEY};
//   - more than MaxMatrixCases combinations, or more cases than budget,
//     what is left of the file's MaxSuiteCases;
//   - a name template error (renderName).
func expandEntry(e suiteEntry, order []string, budget int) ([]expandedCase, error) {
	if len(e.Matrix) == 0 {
		if e.Matrix != nil {
			return nil, matrixErrorf("[case.matrix] is empty: give at least one key with a list of values, or leave the table out")
		}
		if budget < 1 {
			return nil, matrixErrorf("the file has more than %d cases (MaxSuiteCases); split it", MaxSuiteCases)
		}
		name, err := renderName(e.Name, e.Family, e.Params, nil)
		if err != nil {
			return nil, err
		}
		return []expandedCase{{spec: difftest.CaseSpec{Kernel: e.Kernel, Family: e.Family, Name: name, Params: e.Params}}}, nil
	}
	axes := make([]matrixAxis, 0, len(order))
	setBy := map[string]string{} // setting key → the axis that sets it
	total := 1
	for _, key := range order {
		ax, err := readAxis(key, e.Matrix[key])
		if err != nil {
			return nil, err
		}
		for _, k := range ax.keys {
			if reservedMatrixKeys[k] {
				if ax.tables {
					return nil, matrixErrorf("%s: %q in a matrix entry is a key of the case itself, not a parameter", key, k)
				}
				return nil, matrixErrorf("%s: %q is a key of the case itself, not a parameter; only parameters and family take a list", key, k)
			}
			if _, dup := e.Params[k]; dup {
				return nil, matrixErrorf("%s: %s is also given in [case.params]; give each parameter in one place", key, settingName(k))
			}
			if k == "family" && e.Family != "" {
				return nil, matrixErrorf("%s: family is also given as the case's family %q; give it in one place", key, e.Family)
			}
			if prev, dup := setBy[k]; dup {
				return nil, matrixErrorf("%s: %s is also set by matrix key %s; each setting comes from one key", key, settingName(k), prev)
			}
			setBy[k] = key
		}
		axes = append(axes, ax)
		if n := len(ax.settings); total > MaxMatrixCases/n {
			return nil, matrixErrorf("more than %d combinations (MaxMatrixCases); split the case", MaxMatrixCases)
		}
		total *= len(ax.settings)
	}
	if total > budget {
		return nil, matrixErrorf("the file expands into more than %d cases (MaxSuiteCases); this [[case]] alone gives %d", MaxSuiteCases, total)
	}
	used, err := templateKeys(e.Name)
	if err != nil {
		return nil, err
	}
	for a := range axes {
		ax := &axes[a]
		named := 0
		for _, l := range ax.labels {
			if l != "" {
				named++
			}
		}
		if named == 0 {
			continue
		}
		for i, l := range ax.labels {
			if l == "" {
				return nil, matrixErrorf("%s: entry %d has no name; name every entry of the list or none", ax.key, i+1)
			}
		}
		if !used[ax.key] {
			return nil, matrixErrorf("%s: its entries have names, but the case name has no {%s}", ax.key, ax.key)
		}
		ax.named = true
	}
	out := make([]expandedCase, 0, total)
	idx := make([]int, len(axes))
	for {
		params := make(map[string]any, len(e.Params)+len(setBy))
		for k, v := range e.Params {
			params[k] = v
		}
		family := e.Family
		labels := map[string]string{}
		var combo []string
		for a, ax := range axes {
			for k, v := range ax.settings[idx[a]] {
				if k == "family" {
					family, _ = v.(string)
					continue
				}
				params[k] = v
			}
			if ax.named {
				labels[ax.key] = ax.labels[idx[a]]
			}
			switch {
			case ax.named:
				combo = append(combo, fmt.Sprintf("%s %q", ax.key, ax.labels[idx[a]]))
			case ax.tables:
				combo = append(combo, fmt.Sprintf("%s entry %d", ax.key, idx[a]+1))
			default:
				combo = append(combo, fmt.Sprintf("%s = %s", ax.key, tomlString(ax.settings[idx[a]][ax.key])))
			}
		}
		if len(params) == 0 {
			params = nil // as a written-out case without [case.params]
		}
		name, err := renderName(e.Name, family, params, labels)
		if err != nil {
			return nil, err
		}
		out = append(out, expandedCase{spec: difftest.CaseSpec{Kernel: e.Kernel, Family: family, Name: name, Params: params}, combo: strings.Join(combo, ", ")})
		// Next combination: the last axis moves fastest.
		a := len(axes) - 1
		for ; a >= 0; a-- {
			if idx[a]++; idx[a] < len(axes[a].settings) {
				break
			}
			idx[a] = 0
		}
		if a < 0 {
			return out, nil
		}
	}
}

// settingName is k as the messages name it: "param K", or "family".
func settingName(k string) string {
	if k == "family" {
		return "family"
	}
	return "param " + k
}

// readAxis reads the matrix key key: a non-empty list of plain values
// (each sets key) or of tables (each sets its own keys, except name,
// which labels it).
func readAxis(key string, v any) (matrixAxis, error) {
	ax := matrixAxis{key: key}
	list, ok := v.([]any)
	if !ok {
		if _, isMap := v.(map[string]any); isMap {
			return ax, matrixErrorf("%s: want a list of values, got a table (write %s = [value, …] or %s = [{…}, …])", key, key, key)
		}
		return ax, matrixErrorf("%s: want a list of values, got %s (write %s = [%s] for one value)", key, tomlString(v), key, tomlString(v))
	}
	if len(list) == 0 {
		return ax, matrixErrorf("%s: the list is empty; give at least one value", key)
	}
	_, ax.tables = list[0].(map[string]any)
	seen := map[string]bool{}
	for i, x := range list {
		t, isTable := x.(map[string]any)
		if isTable != ax.tables {
			return ax, matrixErrorf("%s: value %d is %s, value 1 %s; a list holds plain values or tables, not both", key, i+1, kindOf(isTable), kindOf(ax.tables))
		}
		if !ax.tables {
			ax.settings = append(ax.settings, map[string]any{key: x})
			if !seen[key] {
				seen[key] = true
				ax.keys = append(ax.keys, key)
			}
			continue
		}
		if len(t) == 0 {
			return ax, matrixErrorf("%s: entry %d is an empty table; an entry sets at least one parameter", key, i+1)
		}
		settings := make(map[string]any, len(t))
		label := ""
		for _, k := range sortedKeys(t) {
			if k == matrixKeyLabel {
				s, ok := t[k].(string)
				if !ok || s == "" {
					return ax, matrixErrorf("%s: entry %d: name must be a non-empty string, got %s", key, i+1, tomlString(t[k]))
				}
				label = s
				continue
			}
			settings[k] = t[k]
			if !seen[k] {
				seen[k] = true
				ax.keys = append(ax.keys, k)
			}
		}
		if len(settings) == 0 {
			return ax, matrixErrorf("%s: entry %d has only a name; an entry sets at least one parameter", key, i+1)
		}
		if f, ok := settings["family"]; ok {
			if _, isString := f.(string); !isString {
				return ax, matrixErrorf("%s: entry %d: family must be a string, got %s", key, i+1, tomlString(f))
			}
		}
		ax.settings = append(ax.settings, settings)
		ax.labels = append(ax.labels, label)
	}
	if key == "family" && !ax.tables {
		for i, s := range ax.settings {
			if _, ok := s["family"].(string); !ok {
				return ax, matrixErrorf("family: value %d must be a string, got %s", i+1, tomlString(s["family"]))
			}
		}
	}
	return ax, nil
}

func kindOf(table bool) string {
	if table {
		return "a table"
	}
	return "a plain value"
}

// templateKeys returns the keys a name template uses, or an error for a
// malformed template: a "{" without its "}", a "}" without its "{", or an
// empty "{}".
func templateKeys(tmpl string) (map[string]bool, error) {
	keys := map[string]bool{}
	rest := tmpl
	for {
		open, close := strings.IndexByte(rest, '{'), strings.IndexByte(rest, '}')
		switch {
		case open < 0 && close < 0:
			return keys, nil
		case close >= 0 && (open < 0 || close < open):
			return nil, matrixErrorf("name %q: a \"}\" without its \"{\" (braces in a name are template keys, e.g. {K})", tmpl)
		}
		end := strings.IndexByte(rest[open+1:], '}')
		if end < 0 {
			return nil, matrixErrorf("name %q: a \"{\" without its \"}\" (braces in a name are template keys, e.g. {K})", tmpl)
		}
		key := rest[open+1 : open+1+end]
		if key == "" || strings.ContainsRune(key, '{') {
			return nil, matrixErrorf("name %q: %q is not a template key (write {KEY}, KEY a parameter, family, or a matrix key of tables)", tmpl, "{"+key+"}")
		}
		keys[key] = true
		rest = rest[open+1+end+1:]
	}
}

// renderName replaces every {KEY} of the name template tmpl: a matrix key
// whose tables have names by the name of the chosen entry (labels; this
// wins over a parameter of the same name), family by the
// case's family, any other key by the value of that parameter, written as
// in the suite file but without quotes: a string as it is, an integer in
// decimal, a float in Go's shortest form, a boolean as true or false, a
// list as its elements joined by "," (so lengths = [4500] gives 4500).
// An unknown key, or a value that cannot be written into a name (a table,
// a nested list, a date), is an error listing the keys there are.
func renderName(tmpl, family string, params map[string]any, labels map[string]string) (string, error) {
	keys, err := templateKeys(tmpl)
	if err != nil || len(keys) == 0 {
		return tmpl, err
	}
	var b strings.Builder
	rest := tmpl
	for {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		end := open + 1 + strings.IndexByte(rest[open+1:], '}')
		key := rest[open+1 : end]
		b.WriteString(rest[:open])
		var s string
		if l, ok := labels[key]; ok {
			s = l
		} else if key == "family" {
			s = family
		} else if v, ok := params[key]; ok {
			var ok2 bool
			if s, ok2 = nameValue(v, true); !ok2 {
				return "", matrixErrorf("name %q: {%s} is %s, which cannot be written into a name", tmpl, key, tomlString(v))
			}
		} else {
			avail := []string{"family"}
			avail = append(avail, sortedKeys(params)...)
			for _, k := range sortedKeys(labels) {
				avail = append(avail, k)
			}
			return "", matrixErrorf("name %q: unknown template key {%s} (keys: %s)", tmpl, key, strings.Join(avail, ", "))
		}
		b.WriteString(s)
		rest = rest[end+1:]
	}
}

// nameValue writes a parameter value into a name; a list only at the top
// level (list true).
func nameValue(v any, list bool) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	case []any:
		if !list {
			return "", false
		}
		parts := make([]string, len(x))
		for i, e := range x {
			s, ok := nameValue(e, false)
			if !ok {
				return "", false
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), true
	}
	return "", false
}

// tomlString writes v roughly as TOML would, for messages.
func tomlString(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEnN") {
			s += ".0"
		}
		return s
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = tomlString(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		parts := make([]string, 0, len(x))
		for _, k := range sortedKeys(x) {
			parts = append(parts, k+" = "+tomlString(x[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case nil:
		return "nothing"
	}
	return fmt.Sprint(v)
}

// sortedKeys returns the keys of m in increasing order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
