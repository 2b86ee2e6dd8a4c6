package difftest

import (
	"fmt"
	"math"
)

// ContractDescriber is an optional interface of a Kernel: Contract
// describes the contract's tensors and params as data, so that tools
// outside Go (the Python package's exec mode and capture checks) derive
// them from the one registration instead of keeping a copy.
// `difftest list contracts --json` prints every registered kernel's
// description; python/src/kerneldiff/contracts.json is that output
// (docs/adding-a-kernel.md). A chain kernel, whose implementation runs its
// stage kernels, need not describe itself.
type ContractDescriber interface {
	Contract() ContractInfo
}

// ContractInfo describes one kernel contract: its input tensors in
// contract order, the outputs a case declares as a function of its params
// and input shapes, the params keys a capture must give (Required) or may
// give (Optional; any other key is an error, the params decode is strict),
// and the integer params that equal a dimension of one of the case's
// tensors (Sizes), which a capture tool may derive from the tensors.
type ContractInfo struct {
	Name     string       `json:"name"`
	Inputs   []TensorInfo `json:"inputs"`
	Outputs  []OutputInfo `json:"outputs"`
	Required []string     `json:"required_params"`
	Optional []string     `json:"optional_params"`
	Sizes    []SizeInfo   `json:"sizes,omitempty"`
}

// SizeInfo says that the integer param Param equals axis Axis of tensor
// Tensor (an input or an output) in every valid case.
type SizeInfo struct {
	Param  string `json:"param"`
	Tensor string `json:"tensor"`
	Axis   int    `json:"axis"`
}

// TensorInfo is one input tensor: its contract name and the dtypes it may
// have (more than one where a param picks it, e.g. indexer_logits' q is U8
// e4m3fn codes or BF16 by store). InOut marks the tensor that is also an
// output (the paged cache).
type TensorInfo struct {
	Name   string  `json:"name"`
	DTypes []DType `json:"dtypes"`
	InOut  bool    `json:"inout,omitempty"`
}

// OutputInfo is one output tensor. An InOut output has the shape of the
// input of the same name (Shape empty); any other has Shape, one Dim per
// axis. When names a boolean param: the output exists only when it is true.
type OutputInfo struct {
	Name  string `json:"name"`
	DType DType  `json:"dtype"`
	Shape []Dim  `json:"shape,omitempty"`
	InOut bool   `json:"inout,omitempty"`
	When  string `json:"when,omitempty"`
}

// Dim is one output dimension: the integer param Param, or axis Axis of
// input Input, or the constant Value (exactly one of the three forms).
type Dim struct {
	Param string `json:"param,omitempty"`
	Input string `json:"input,omitempty"`
	Axis  int    `json:"axis,omitempty"`
	Value int    `json:"value,omitempty"`
}

// Input returns the TensorInfo of an input that may have any of dtypes.
func Input(name string, dtypes ...DType) TensorInfo { return TensorInfo{Name: name, DTypes: dtypes} }

// ParamDim returns the Dim that is the integer param name.
func ParamDim(name string) Dim { return Dim{Param: name} }

// InputDim returns the Dim that is axis axis of input name.
func InputDim(name string, axis int) Dim { return Dim{Input: name, Axis: axis} }

// OutputSpecs evaluates the output declarations of ci for one case: params as
// JSON decodes it (numbers float64) and the input shapes by name. Errors
// name the param or tensor that is missing, mistyped or out of range.
func (ci ContractInfo) OutputSpecs(params map[string]any, shapes map[string][]int) ([]OutputSpec, error) {
	var outs []OutputSpec
	for _, o := range ci.Outputs {
		if o.When != "" {
			on, ok := params[o.When]
			if ok {
				b, isBool := on.(bool)
				if !isBool {
					return nil, fmt.Errorf("%s: params %q must be a boolean, got %v", ci.Name, o.When, on)
				}
				ok = b
			}
			if !ok {
				continue
			}
		}
		if o.InOut {
			s, ok := shapes[o.Name]
			if !ok {
				return nil, fmt.Errorf("%s: the in/out tensor %q is missing from the inputs", ci.Name, o.Name)
			}
			outs = append(outs, OutputSpec{Name: o.Name, DType: o.DType, Shape: append([]int(nil), s...), InOut: true})
			continue
		}
		shape := make([]int, len(o.Shape))
		for i, d := range o.Shape {
			n, err := ci.dim(d, params, shapes)
			if err != nil {
				return nil, fmt.Errorf("%s: output %s axis %d: %w", ci.Name, o.Name, i, err)
			}
			shape[i] = n
		}
		outs = append(outs, OutputSpec{Name: o.Name, DType: o.DType, Shape: shape})
	}
	return outs, nil
}

// dim evaluates one Dim.
func (ci ContractInfo) dim(d Dim, params map[string]any, shapes map[string][]int) (int, error) {
	switch {
	case d.Param != "":
		v, ok := params[d.Param]
		f, isNum := v.(float64)
		if !ok || !isNum || f != math.Trunc(f) || f < 0 || f > 1<<53 {
			return 0, fmt.Errorf("params %q must be a non-negative integer, got %v", d.Param, v)
		}
		return int(f), nil
	case d.Input != "":
		s, ok := shapes[d.Input]
		if !ok || d.Axis < 0 || d.Axis >= len(s) {
			return 0, fmt.Errorf("input %s must have an axis %d, got shape %v", d.Input, d.Axis, s)
		}
		return s[d.Axis], nil
	}
	return d.Value, nil
}

// Contracts returns the description of every registered kernel that
// implements ContractDescriber, sorted by name.
func Contracts() []ContractInfo {
	var cs []ContractInfo
	for _, k := range Kernels() {
		if d, ok := k.(ContractDescriber); ok {
			cs = append(cs, d.Contract())
		}
	}
	return cs
}
