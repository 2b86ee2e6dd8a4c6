package difftest

import "fmt"

// CaptureInputs returns a captured case's inputs in contract order: for
// each of names, a clone of tensors[name] (metadata, and Data where the
// caller read it) under that name, as a kernel's FromTensors builds its
// Case.Inputs. A missing tensor is the error "case ID: capture has no
// tensor NAME".
func CaptureInputs(id string, names []string, tensors map[string]*Tensor) ([]*Tensor, error) {
	ins := make([]*Tensor, 0, len(names))
	for _, name := range names {
		t, ok := tensors[name]
		if !ok || t == nil {
			return nil, fmt.Errorf("case %s: capture has no tensor %q", id, name)
		}
		t = t.Clone()
		t.Name = name
		ins = append(ins, t)
	}
	return ins, nil
}
