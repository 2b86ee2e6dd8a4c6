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
// Tensor (an input or an output) in every valid case. A negative Axis
// counts from the last axis (−1 the last), for a tensor whose rank a param
// changes (indexer_logits' q is [B, H, 128] or [B, next_n, H, 128]).
type SizeInfo struct {
	Param  string `json:"param"`
	Tensor string `json:"tensor"`
	Axis   int    `json:"axis"`
}

// Of returns the size of axis Axis of shape (a negative Axis from the
// end), and false when shape has no such axis.
func (sz SizeInfo) Of(shape []int) (int, bool) {
	i := sz.Axis
	if i < 0 {
		i += len(shape)
	}
	if i < 0 || i >= len(shape) {
		return 0, false
	}
	return shape[i], true
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
// DTypeBy names a string param that picks the dtype through DTypeOf (a
// value not listed is an error); the param absent, the dtype is DType.
type OutputInfo struct {
	Name    string           `json:"name"`
	DType   DType            `json:"dtype"`
	DTypeBy string           `json:"dtype_by,omitempty"`
	DTypeOf map[string]DType `json:"dtype_of,omitempty"`
	Shape   []Dim            `json:"shape,omitempty"`
	InOut   bool             `json:"inout,omitempty"`
	When    string           `json:"when,omitempty"`
}

// Dim is one output dimension: the integer param Param, or axis Axis of
// input Input, or the constant Value (exactly one of the three forms);
// with Times, multiplied by that integer param, 1 when it is absent
// (indexer_logits' rows are batch · next_n).
type Dim struct {
	Times string `json:"times,omitempty"`
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
		dt := o.DType
		if v, ok := params[o.DTypeBy]; ok && o.DTypeBy != "" {
			name, isStr := v.(string)
			if dt, ok = o.DTypeOf[name]; !isStr || !ok {
				return nil, fmt.Errorf("%s: output %s: params %q must be one of %v, got %v", ci.Name, o.Name, o.DTypeBy, o.DTypeOf, v)
			}
		}
		outs = append(outs, OutputSpec{Name: o.Name, DType: dt, Shape: shape})
	}
	return outs, nil
}

// dim evaluates one Dim.
func (ci ContractInfo) dim(d Dim, params map[string]any, shapes map[string][]int) (int, error) {
	n, err := ci.dim1(d, params, shapes)
	if err != nil || d.Times == "" {
		return n, err
	}
	if _, given := params[d.Times]; !given {
		return n, nil
	}
	m, err := ci.dim1(Dim{Param: d.Times}, params, shapes)
	if err != nil {
		return 0, err
	}
	if m != 0 && n > math.MaxInt32/m {
		return 0, fmt.Errorf("params %q · %q overflows", d.Param, d.Times)
	}
	return n * m, nil
}

// dim1 evaluates one Dim without its Times factor.
func (ci ContractInfo) dim1(d Dim, params map[string]any, shapes map[string][]int) (int, error) {
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
