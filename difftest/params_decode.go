package difftest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// ParamsOf returns a case's params as the kernel's parameter struct P: a
// case holds a P or a non-nil *P (returned as a copy). Any other value is
// an error naming the case, the type it holds and P, e.g. "case
// topk_transform/x: params are map[string]interface {}, want topk.Params".
func ParamsOf[P any](c *Case) (P, error) {
	var zero P
	switch p := c.Params.(type) {
	case P:
		return p, nil
	case *P:
		if p != nil {
			return *p, nil
		}
	}
	return zero, fmt.Errorf("case %s: params are %T, want %T", c.ID, c.Params, zero)
}

// DecodeStrict decodes the JSON params of a capture or an exec request into
// v (a pointer to a kernel's parameter struct), as every kernel reads them:
// an unknown field is an error (a misspelt key must not read as its
// default), numbers decoded into an interface value stay json.Number. Only
// the first JSON value of raw is read. Errors name the parameter by its
// JSON key, the rule and what the params hold, in the words of the suite
// file's parameter errors (Params): `param "K": must be an integer, got
// the number 8.5`, `param "needles": element 1 must be an integer, got a
// string`, `unknown field "Kk"`, `params are not JSON: invalid character
// '}' … (byte 9)`. Callers wrap them with the kernel's or the case's name.
func DecodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return paramsJSONError(raw, reflect.TypeOf(v), err)
	}
	return nil
}

// paramsJSONError restates an encoding/json error from decoding raw into
// a value of type into (a pointer) in DecodeStrict's words. An error it
// does not know keeps encoding/json's text without its "json: " prefix.
func paramsJSONError(raw []byte, into reflect.Type, err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		if te.Field == "" {
			return fmt.Errorf("params must be a JSON object, got %s", jsonGot(te.Value))
		}
		key, field := jsonPath(into, te.Field)
		if field != nil && field != te.Type && elemOf(field) == te.Type {
			if i, ok := badElement(raw, key, te.Type); ok {
				return fmt.Errorf("param %q: element %d must be %s, got %s", key, i, jsonWant(te.Type), jsonGot(te.Value))
			}
			return fmt.Errorf("param %q: every element must be %s, got %s", key, jsonWant(te.Type), jsonGot(te.Value))
		}
		return fmt.Errorf("param %q: must be %s, got %s", key, jsonWant(te.Type), jsonGot(te.Value))
	case errors.As(err, &se):
		return fmt.Errorf("params are not JSON: %s (byte %d)", strings.TrimPrefix(se.Error(), "json: "), se.Offset)
	case errors.Is(err, io.EOF):
		return errors.New("params are empty: want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("params end inside a JSON value (cut short?)")
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if strings.HasPrefix(msg, "unknown field ") {
		return errors.New(msg)
	}
	if key, got, ok := badNumber(raw, into); ok {
		return fmt.Errorf("param %q: must be %s, got %s", key, jsonWant(jsonNumberType), got)
	}
	return errors.New(msg)
}

// badNumber finds what encoding/json reports without a field: a
// json.Number field holding a string that is not a number. It returns the
// first top-level key of raw whose field is a json.Number and whose value
// does not decode into it, with the value as written (at most 40 bytes).
func badNumber(raw []byte, into reflect.Type) (key, got string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", "", false
	}
	for dec.More() {
		t, err := dec.Token()
		k, isKey := t.(string)
		var v json.RawMessage
		if err != nil || !isKey || dec.Decode(&v) != nil {
			return "", "", false
		}
		path, ft := jsonPath(into, k)
		if ft != jsonNumberType || json.Unmarshal(v, new(json.Number)) == nil {
			continue
		}
		got = string(v)
		if len(got) > 40 {
			got = got[:40] + "…"
		}
		if strings.HasPrefix(got, `"`) {
			got = "the string " + got
		}
		return path, got, true
	}
	return "", "", false
}

// jsonPath turns encoding/json's dotted field path (JSON keys, with the Go
// names of embedded structs among them) into the path of JSON keys alone,
// and returns the type of the field it ends at (nil where a step is not
// found, e.g. inside a map).
func jsonPath(into reflect.Type, path string) (string, reflect.Type) {
	t := into
	var keys []string
	for _, step := range strings.Split(path, ".") {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			t = t.Elem()
		}
		next, embedded := fieldOf(t, step)
		if !embedded {
			keys = append(keys, step)
		}
		t = next
	}
	return strings.Join(keys, "."), t
}

// fieldOf returns the type of the field of struct type t that
// encoding/json names step (its JSON key, or the Go name of an embedded
// struct, which embedded reports), looking through embedded structs and
// matching keys as encoding/json does (an exact match first, then one
// that differs only in case); nil when there is none.
func fieldOf(t reflect.Type, step string) (ft reflect.Type, embedded bool) {
	for _, same := range []func(a, b string) bool{func(a, b string) bool { return a == b }, strings.EqualFold} {
		if ft, embedded := fieldMatching(t, step, same); ft != nil {
			return ft, embedded
		}
	}
	return nil, false
}

// fieldMatching is fieldOf with keys compared by same.
func fieldMatching(t reflect.Type, step string, same func(a, b string) bool) (ft reflect.Type, embedded bool) {
	if t == nil || t.Kind() != reflect.Struct {
		return nil, false
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Name == step {
			return f.Type, true
		}
		if name == "" && !f.Anonymous {
			name = f.Name
		}
		if name != "" && same(name, step) {
			return f.Type, false
		}
	}
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.Anonymous && f.Type.Kind() == reflect.Struct {
			if ft, _ := fieldMatching(f.Type, step, same); ft != nil {
				return ft, false
			}
		}
	}
	return nil, false
}

// badElement returns the index of the first element of the array at the
// top-level key of raw that does not decode into elem; false where key is
// a nested path or no element fails.
func badElement(raw []byte, key string, elem reflect.Type) (int, bool) {
	var top map[string]json.RawMessage
	var arr []json.RawMessage
	if strings.Contains(key, ".") || json.Unmarshal(raw, &top) != nil || json.Unmarshal(top[key], &arr) != nil {
		return 0, false
	}
	for i, e := range arr {
		if json.Unmarshal(e, reflect.New(elem).Interface()) != nil {
			return i, true
		}
	}
	return 0, false
}

// elemOf is the element type of a slice or array type, else nil.
func elemOf(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		return t.Elem()
	}
	return nil
}

var jsonNumberType = reflect.TypeFor[json.Number]()

// jsonWant says what a JSON value must be to decode into t: "an integer
// from 0 to 255" (uint8), "a number", "an array of integers", ….
func jsonWant(t reflect.Type) string {
	one, _ := jsonNoun(t)
	return one
}

// jsonNoun returns the phrase for one value of type t and for several.
func jsonNoun(t reflect.Type) (one, many string) {
	if t == jsonNumberType {
		return "a number", "numbers"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false", "booleans"
	case reflect.Int, reflect.Int64:
		return "an integer", "integers"
	case reflect.Int8, reflect.Int16, reflect.Int32:
		lo, hi := -int64(1)<<(t.Bits()-1), int64(1)<<(t.Bits()-1)-1
		r := fmt.Sprintf(" from %d to %d", lo, hi)
		return "an integer" + r, "integers" + r
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		r := fmt.Sprintf(" from 0 to %d", ^uint64(0)>>(64-t.Bits()))
		return "an integer" + r, "integers" + r
	case reflect.Float32, reflect.Float64:
		return "a number", "numbers"
	case reflect.String:
		return "a string", "strings"
	case reflect.Slice, reflect.Array:
		_, many := jsonNoun(t.Elem())
		return "an array of " + many, "arrays of " + many
	case reflect.Pointer:
		return jsonNoun(t.Elem())
	}
	return "an object", "objects"
}

// jsonGot describes the JSON value encoding/json reports as value
// ("string", "number 8.5", "bool", "array", "object").
func jsonGot(value string) string {
	switch {
	case value == "bool":
		return "a boolean"
	case value == "array", value == "object":
		return "an " + value
	case strings.HasPrefix(value, "number "):
		return "the " + value
	}
	return "a " + value
}
