//go:build kd_kernels

package main

import (
	"encoding/json"
	"fmt"

	"github.com/kerneldiff/kerneldiff/difftest"
	_ "github.com/kerneldiff/kerneldiff/kernels/all"
)

// registryOutputs rebuilds the case with the registered kernel's
// FromTensors and runs its Go reference. InOut outputs start from the
// bytes that arrived in in.safetensors. It also returns the offset of the
// first byte of outs[0] that the contract says is written (Kernel.Written).
func registryOutputs(kernel, id string, params json.RawMessage, tensors map[string]*difftest.Tensor) ([]*difftest.Tensor, int, error) {
	k, ok := difftest.LookupKernel(kernel)
	if !ok {
		return nil, 0, fmt.Errorf("kernel %q is not registered", kernel)
	}
	c, err := k.FromTensors(id, params, tensors)
	if err != nil {
		return nil, 0, err
	}
	if err := k.Validate(c); err != nil {
		return nil, 0, err
	}
	outs := make([]*difftest.Tensor, len(c.Outputs))
	for i, o := range c.Outputs {
		t, err := difftest.NewTensor(o.Name, o.DType, o.Shape...)
		if err != nil {
			return nil, 0, err
		}
		if o.InOut {
			in := tensors[o.Name]
			if in == nil || len(in.Data) != len(t.Data) {
				return nil, 0, fmt.Errorf("in.safetensors lacks InOut output %s of %d bytes", o.Name, len(t.Data))
			}
			copy(t.Data, in.Data)
		}
		outs[i] = t
	}
	if err := k.Reference(c, outs); err != nil {
		return nil, 0, err
	}
	for _, r := range k.Written(c)[0] {
		if r.Len > 0 {
			return outs, r.Off, nil
		}
	}
	return outs, 0, nil
}
