// copy_kernel, the test-only contract the capture and exec tests share.

package fakekernel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// CopyKernel ("copy_kernel") is a test-only kernel contract: input x f32 [rows, cols]
// (every element finite), output y f32 [rows, cols] = x bytewise, and the
// InOut output cache u8 [2·cols] whose bytes [0, cols) become byte(stamp+i)
// and whose other bytes keep their canary. difftest/proc/testdata/execimpl implements
// the same contract as an exec program.
type CopyKernel struct{}

// CopyParams are copy_kernel's parameters.
type CopyParams struct {
	Rows  int `json:"rows"`
	Cols  int `json:"cols"`
	Stamp int `json:"stamp"`
}

func init() { difftest.RegisterKernel(CopyKernel{}) }

// Name returns "copy_kernel".
func (CopyKernel) Name() string { return "copy_kernel" }

// Families returns copy_kernel's one family, "ramp".
func (CopyKernel) Families() []string { return []string{"ramp"} }

func (k CopyKernel) outputs(p CopyParams) []difftest.OutputSpec {
	return []difftest.OutputSpec{
		{Name: "y", DType: difftest.F32, Shape: []int{p.Rows, p.Cols}},
		{Name: "cache", DType: difftest.U8, Shape: []int{2 * p.Cols}, InOut: true},
	}
}

// NewCase fills x with the ramp x[i] = i/4 − 3 + (key mod 5).
func (k CopyKernel) NewCase(spec difftest.CaseSpec, seed, key uint64) (*difftest.Case, error) {
	if spec.Family != "ramp" {
		return nil, fmt.Errorf("case %s: unknown family %q", spec.ID(), spec.Family)
	}
	pr := difftest.NewParams(spec.ID(), spec.Params)
	p := CopyParams{Rows: pr.Int("rows", 2), Cols: pr.Int("cols", 3), Stamp: pr.Int("stamp", 7)}
	if err := pr.Err(); err != nil {
		return nil, err
	}
	x, err := difftest.NewTensor("x", difftest.F32, p.Rows, p.Cols)
	if err != nil {
		return nil, err
	}
	for i := range x.Len() {
		x.SetF32(i, float32(i)/4-3+float32(key%5))
	}
	return &difftest.Case{ID: spec.ID(), Kernel: k.Name(), Family: spec.Family, Seed: seed, Key: key,
		Params: p, Inputs: []*difftest.Tensor{x}, Outputs: k.outputs(p)}, nil
}

// FromTensors rebuilds a captured case: params is CopyParams' JSON
// (difftest.DecodeStrict), tensors must hold x as F32 [rows, cols].
// Errors name the parameter or the tensor and the rule.
func (k CopyKernel) FromTensors(id string, params json.RawMessage, tensors map[string]*difftest.Tensor) (*difftest.Case, error) {
	var p CopyParams
	if err := difftest.DecodeStrict(params, &p); err != nil {
		return nil, fmt.Errorf("params: %w", err)
	}
	x := tensors["x"]
	if x == nil {
		return nil, difftest.Inputf("x", nil, "missing from the capture")
	}
	// Dtype and shape only: ReadCapture passes the tensors before their
	// bytes are read (Kernel.FromTensors).
	if x.DType != difftest.F32 {
		return nil, difftest.Inputf("x", nil, "dtype must be F32, got %s", x.DType)
	}
	if len(x.Shape) != 2 || x.Shape[0] != p.Rows || x.Shape[1] != p.Cols {
		return nil, difftest.Inputf("x", nil, "shape must be [%d %d] (rows, cols), got %v", p.Rows, p.Cols, x.Shape)
	}
	return &difftest.Case{ID: id, Kernel: k.Name(), Params: p, Inputs: []*difftest.Tensor{x.Clone()}, Outputs: k.outputs(p)}, nil
}

// Validate checks that every element of x is finite; the error names the
// first one that is not, as x[row][col].
func (CopyKernel) Validate(c *difftest.Case) error {
	x := c.Input("x")
	cols := c.Params.(CopyParams).Cols
	for i := range x.Len() {
		if v := x.F32(i); math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return difftest.Inputf("x", []int{i / cols, i % cols}, "must be finite, got %v", v)
		}
	}
	return nil
}

// Reference copies x into outs[0] (y) and writes byte(stamp+i) into
// bytes [0, cols) of outs[1] (cache), leaving the rest of it as it is.
func (CopyKernel) Reference(c *difftest.Case, outs []*difftest.Tensor) error {
	copy(outs[0].Data, c.Input("x").Data)
	stamp := c.Params.(CopyParams).Stamp
	for i := range len(outs[1].Data) / 2 {
		outs[1].Data[i] = byte(stamp + i)
	}
	return nil
}

// Written reports all of y and the first half of cache as written.
func (CopyKernel) Written(c *difftest.Case) [][]difftest.Range {
	return [][]difftest.Range{{{Off: 0, Len: c.Outputs[0].Bytes()}}, {{Off: 0, Len: c.Outputs[1].Bytes() / 2}}}
}

// Equivalent reports whether two runs wrote the same bytes into every
// output; the error names the first output that differs.
func (CopyKernel) Equivalent(c *difftest.Case, a, b []*difftest.Tensor) error {
	for i := range a {
		if !bytes.Equal(a[i].Data, b[i].Data) {
			return fmt.Errorf("%s differs between runs", a[i].Name)
		}
	}
	return nil
}

// Check compares y element by element and cache byte by byte, exactly.
func (CopyKernel) Check(c *difftest.Case, got, want []*difftest.Tensor) difftest.Result {
	for i := range got[0].Len() {
		if got[0].U32(i) != want[0].U32(i) {
			return difftest.Result{Class: difftest.Mismatch,
				Message: fmt.Sprintf("y[%d]: got %v, want %v", i, got[0].F32(i), want[0].F32(i)),
				Worst:   []difftest.Element{{Tensor: "y", Index: fmt.Sprintf("[%d]", i), Got: fmt.Sprint(got[0].F32(i)), Want: fmt.Sprint(want[0].F32(i))}}}
		}
	}
	if i := firstDiff(got[1].Data, want[1].Data); i >= 0 {
		return difftest.Result{Class: difftest.Mismatch, Message: fmt.Sprintf("cache[%d]: got 0x%02x, want 0x%02x", i, got[1].Data[i], want[1].Data[i])}
	}
	return difftest.Result{}
}

// Mutants returns none: copy_kernel's tests bring their own faulty
// programs.
func (CopyKernel) Mutants() []difftest.Mutant { return nil }

// CopyCase draws the copy_kernel case of rows × cols (stamp 11, seed
// 42). It panics if the kernel rejects the shape (a broken test).
func CopyCase(rows, cols int) *difftest.Case {
	spec := difftest.CaseSpec{Kernel: "copy_kernel", Family: "ramp", Name: fmt.Sprintf("r%dc%d", rows, cols),
		Params: map[string]any{"rows": int64(rows), "cols": int64(cols), "stamp": int64(11)}}
	c, err := CopyKernel{}.NewCase(spec, 42, 0x9e3779b97f4a7c15)
	if err != nil {
		panic(err)
	}
	return c
}

// Canary is the initial cache state of n bytes: 0xA5 ^ i, so an echo of the
// wrong bytes cannot pass for the canary.
func Canary(n int) *difftest.Tensor {
	t := difftest.MustTensor("cache", difftest.U8, n)
	for i := range t.Data {
		t.Data[i] = 0xA5 ^ byte(i)
	}
	return t
}

// firstDiff returns the first index where a and b differ, -1 if none.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// Buffers allocates the outputs of c (16 bytes of guard): y poisoned with 0xEE, cache
// holding the canary.
func Buffers(c *difftest.Case) []*difftest.Buffer {
	bufs := make([]*difftest.Buffer, len(c.Outputs))
	for i, o := range c.Outputs {
		const guard = 16
		full := bytes.Repeat([]byte{0xEE}, o.Bytes()+2*guard)
		data := full[guard : guard+o.Bytes() : guard+o.Bytes()]
		if o.InOut {
			copy(data, Canary(o.Bytes()).Data)
		}
		bufs[i] = &difftest.Buffer{Tensor: &difftest.Tensor{Name: o.Name, DType: o.DType, Shape: o.Shape, Data: data}, Full: full, Guard: guard}
	}
	return bufs
}
