package difftest

import (
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
	var m map[string]any
	if err := DecodeStrict([]byte(`{"eps": 1e-6}`), &m); err != nil || m["eps"].(interface{ String() string }).String() != "1e-6" {
		t.Errorf("number kept as written: %#v, %v", m, err)
	}
}
