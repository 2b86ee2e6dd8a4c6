package difftest

import (
	"encoding/json"
	"strings"
	"testing"
)

type decodeP struct {
	K int  `json:"K"`
	R bool `json:"return_raw"`
}

func TestParamsOf(t *testing.T) {
	p, err := ParamsOf[decodeP](&Case{ID: "k/a", Params: decodeP{K: 4}})
	if err != nil || p.K != 4 {
		t.Fatalf("value: %+v, %v", p, err)
	}
	p, err = ParamsOf[decodeP](&Case{ID: "k/b", Params: &decodeP{K: 7, R: true}})
	if err != nil || p != (decodeP{7, true}) {
		t.Fatalf("pointer: %+v, %v", p, err)
	}
	for _, bad := range []any{(*decodeP)(nil), map[string]any{}, nil} {
		_, err := ParamsOf[decodeP](&Case{ID: "k/c", Params: bad})
		if err == nil || !strings.HasPrefix(err.Error(), "case k/c: params are ") || !strings.HasSuffix(err.Error(), ", want difftest.decodeP") {
			t.Errorf("%T: err %v", bad, err)
		}
	}
}

func TestDecodeStrict(t *testing.T) {
	var p decodeP
	if err := DecodeStrict([]byte(`{"K": 512, "return_raw": true}`), &p); err != nil || p != (decodeP{512, true}) {
		t.Fatalf("%+v, %v", p, err)
	}
	if err := DecodeStrict([]byte(`{"K": 512, "Kk": 1}`), &p); err == nil || !strings.Contains(err.Error(), `unknown field "Kk"`) {
		t.Errorf("unknown field: %v", err)
	}
	if err := DecodeStrict([]byte(`{"K": "512"}`), &p); err == nil {
		t.Error("a string K decoded")
	}
	if err := DecodeStrict([]byte(`{"K": 512}`), nil); err == nil {
		t.Error("decoded into nil")
	}
	var m map[string]any
	if err := DecodeStrict([]byte(`{"eps": 1e-6}`), &m); err != nil || m["eps"].(interface{ String() string }).String() != "1e-6" {
		t.Errorf("number kept as written: %#v, %v", m, err)
	}
}

// decodeInner and decodeOuter have the shapes the kernels' Params have:
// an embedded struct (normrope's ParseParams), sized integers, arrays,
// a json.Number and a nested object.
type decodeInner struct {
	K       int         `json:"K"`
	Needles []int       `json:"needles"`
	Margins []float64   `json:"margins"`
	Code    uint8       `json:"code"`
	Off     int32       `json:"off"`
	Clean   bool        `json:"clean"`
	Family  string      `json:"family"`
	Rate    json.Number `json:"rate"`
	Sub     struct {
		A uint16 `json:"a"`
	} `json:"sub"`
}

type decodeOuter struct {
	decodeInner
	Eps json.Number `json:"eps"`
}

// TestDecodeStrictErrors: each kind of bad params gets an error naming the
// JSON key (never a Go type or an embedded struct's name), the rule and
// what was there.
func TestDecodeStrictErrors(t *testing.T) {
	tests := []struct {
		raw, want string
	}{
		{`{"K": "8"}`, `param "K": must be an integer, got a string`},
		{`{"K": 8.5}`, `param "K": must be an integer, got the number 8.5`},
		{`{"K": true}`, `param "K": must be an integer, got a boolean`},
		{`{"K": [8]}`, `param "K": must be an integer, got an array`},
		{`{"K": {}}`, `param "K": must be an integer, got an object`},
		{`{"code": 256}`, `param "code": must be an integer from 0 to 255, got the number 256`},
		{`{"off": -2147483649}`, `param "off": must be an integer from -2147483648 to 2147483647, got the number -2147483649`},
		{`{"clean": 1}`, `param "clean": must be true or false, got a number`},
		{`{"family": 3}`, `param "family": must be a string, got a number`},
		{`{"needles": 3}`, `param "needles": must be an array of integers, got a number`},
		{`{"needles": [1, "x"]}`, `param "needles": element 1 must be an integer, got a string`},
		{`{"needles": [0, 1, 2, 3.5]}`, `param "needles": element 3 must be an integer, got the number 3.5`},
		{`{"margins": [0.5, true]}`, `param "margins": element 1 must be a number, got a boolean`},
		{`{"sub": {"a": 70000}}`, `param "sub.a": must be an integer from 0 to 65535, got the number 70000`},
		{`{"eps": false}`, `param "eps": must be a number, got a boolean`},
		{`{"K": 8, "eps": "tiny"}`, `param "eps": must be a number, got the string "tiny"`},
		{`{"rate": "fast"}`, `param "rate": must be a number, got the string "fast"`},
		{`{"epS": ""}`, `param "epS": must be a number, got the string ""`}, // encoding/json matches keys in any case
		{`[1]`, `params must be a JSON object, got an array`},
		{`"K"`, `params must be a JSON object, got a string`},
		{`{"Kk": 1}`, `unknown field "Kk"`},
		{`{"Kk": 1, "K": "x"}`, `unknown field "Kk"`},
		{`{"K": 8`, `params end inside a JSON value (cut short?)`},
		{``, `params are empty: want a JSON object`},
		{`{"K": 8,}`, `params are not JSON: invalid character '}' looking for beginning of object key string (byte 9)`},
	}
	for _, tc := range tests {
		var p decodeOuter
		err := DecodeStrict([]byte(tc.raw), &p)
		if err == nil || err.Error() != tc.want {
			t.Errorf("DecodeStrict(%s) = %v, want %s", tc.raw, err, tc.want)
		}
	}
	var p decodeOuter
	if err := DecodeStrict([]byte(`{"K": 8, "needles": [1, 2], "code": 255, "off": -2147483648, "sub": {"a": 65535}, "eps": 1e-6}`), &p); err != nil ||
		p.K != 8 || len(p.Needles) != 2 || p.Code != 255 || p.Off != -2147483648 || p.Sub.A != 65535 || p.Eps != "1e-6" {
		t.Errorf("valid params: %+v, %v", p, err)
	}
}

// FuzzDecodeStrict: no params make DecodeStrict panic, and its errors
// never speak Go (a Go type or struct name, encoding/json's "json: "
// prefix, "unmarshal").
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{`{"K": "8"}`, `{"needles": [1, "x"]}`, `{"sub": {"a": 70000}}`, `{"eps": "tiny"}`, `[1]`, `{"K": 8`, ``, `{"Kk": 1}`, `{"margins": [[1]]}`, `{"sub": [1]}`, `{"sub": {"b": 1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var p decodeOuter
		err := DecodeStrict(raw, &p)
		if err == nil {
			return
		}
		for _, goish := range []string{"json: ", "Go struct", "Go value", "unmarshal", "decodeOuter", "decodeInner"} {
			if strings.Contains(err.Error(), goish) {
				t.Errorf("DecodeStrict(%q): %v (speaks Go: %q)", raw, err, goish)
			}
		}
	})
}
