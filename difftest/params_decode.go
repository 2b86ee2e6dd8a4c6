package difftest

import (
	"bytes"
	"encoding/json"
	"fmt"
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
// v, as every kernel reads them: an unknown field is an error (a misspelt
// key must not read as its default), numbers decoded into an interface
// value stay json.Number. Only the first JSON value of raw is read. Errors
// are encoding/json's; callers wrap them with the kernel's name.
func DecodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	return dec.Decode(v)
}
