package difftest

import "testing"

func TestCaptureInputs(t *testing.T) {
	a := MustTensor("a", F32, 2)
	b := MustTensor("renamed", I32, 3)
	ins, err := CaptureInputs("k/c", []string{"b", "a"}, map[string]*Tensor{"a": a, "b": b, "extra": a})
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 2 || ins[0].Name != "b" || ins[0].DType != I32 || ins[1].Name != "a" || ins[1] == a {
		t.Fatalf("inputs %+v", ins)
	}
	if b.Name != "renamed" {
		t.Fatal("the caller's tensor was renamed")
	}
	if _, err := CaptureInputs("k/c", []string{"a", "q"}, map[string]*Tensor{"a": a, "q": nil}); err == nil || err.Error() != `case k/c: capture has no tensor "q"` {
		t.Fatalf("missing: %v", err)
	}
}
