// Parameters and tensor layout of the topk_transform contract (docs/contracts/topk_transform.md).

package topk

import (
	"encoding/json"
	"fmt"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// KernelName is the contract name under which the kernel registers.
const KernelName = "topk_transform"

// Contract names of the tensors, in contract order.
const (
	TensorScores      = "scores"       // in: f32, bf16 or f16 [Batch, Stride] (Params.ScoreDType)
	TensorSeqLens     = "seq_lens"     // in: i32 [Batch]
	TensorPageTable   = "page_table"   // in: i32 [Batch, MaxPages]
	TensorPageIndices = "page_indices" // out: i32 [Batch, K]
	TensorRawIndices  = "raw_indices"  // out: i32 [Batch, K], only when ReturnRaw
)

// EntryPointKs are the K values the CUDA kernel instantiates at compile
// time (kd_topk_transform_512, _1024, _2048): V4-Flash, V4-Pro, V3.2.
// The Go reference and the mutants accept any K ≥ 1; see CheckEntryPointK.
var EntryPointKs = [...]int{512, 1024, 2048}

// Params are the parameters of one topk_transform case. They travel as
// JSON in exec-protocol metadata and capture files, so every field is
// exported and tagged.
//
// K and P are contract parameters; Batch, Stride and MaxPages are the shape
// facts of the generated tensors (scores f32 [Batch, Stride], seq_lens i32
// [Batch], page_table i32 [Batch, MaxPages]); Needles records, for the
// needle family, the position of the planted maximum of each row (−1 for
// none) so the checker can report needle_found.
type Params struct {
	K         int    `json:"K"`
	P         int    `json:"P"`
	ReturnRaw bool   `json:"return_raw"`
	Batch     int    `json:"batch"`
	Stride    int    `json:"stride"`
	MaxPages  int    `json:"max_pages"`
	Family    string `json:"family,omitempty"`
	Pages     string `json:"pages,omitempty"` // page-table kind the generator used (informational)
	Needles   []int  `json:"needles,omitempty"`
	// ScoreDType is the dtype of scores: "" or "f32" (key32 order), "bf16"
	// or "f16" (Key16 order, scores16.go). Empty for f32 so the params of
	// every f32 case read as before.
	ScoreDType string `json:"score_dtype,omitempty"`
}

// Outputs returns the output specs of a case with these parameters:
// page_indices i32 [Batch, K], then raw_indices i32 [Batch, K] when
// ReturnRaw.
func (p Params) Outputs() []difftest.OutputSpec {
	outs := []difftest.OutputSpec{{Name: TensorPageIndices, DType: difftest.I32, Shape: []int{p.Batch, p.K}}}
	if p.ReturnRaw {
		outs = append(outs, difftest.OutputSpec{Name: TensorRawIndices, DType: difftest.I32, Shape: []int{p.Batch, p.K}})
	}
	return outs
}

// log2P returns log2 of the page size; P must already be validated.
func (p Params) log2P() uint {
	s := uint(0)
	for 1<<s < p.P {
		s++
	}
	return s
}

// paramsOf returns the *Params of a case built by this package, or an
// error when the case belongs to another kernel.
func paramsOf(c *difftest.Case) (*Params, error) {
	p, err := difftest.ParamsOf[Params](c)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// FromTensors rebuilds a case from a capture file: params is the JSON of
// a Params value (unknown fields are an error) and tensors must hold
// scores, seq_lens and page_table under their contract names. The shape
// facts are taken from the tensors; when the JSON states them too they
// must agree; score_dtype ("", "f32", "bf16" or "f16") names the dtype
// scores must have. K, P and the shapes are checked against the size limits
// (checkLimits: K ≤ MaxK, batch·K ≤ MaxOutputEntries, …) before the
// outputs are declared, so a capture asking for K = 2^40 is an error, not
// an allocation. The dtypes and shapes of all three inputs are checked
// (scores f32, BF16 or F16 per score_dtype [batch, stride], seq_lens i32 [batch], page_table i32
// [batch, max_pages]) without reading Data, so difftest.ReadCapture reads
// only bytes bounded by the limits; the values are not validated here
// (call Validate). Errors name the missing tensor, the disagreeing field
// or the parameter and its limit.
func FromTensors(id string, params json.RawMessage, tensors map[string]*difftest.Tensor) (*difftest.Case, error) {
	var p Params
	if err := difftest.DecodeStrict(params, &p); err != nil {
		return nil, fmt.Errorf("case %s: params: %w", id, err)
	}
	var in []*difftest.Tensor
	for _, name := range []string{TensorScores, TensorSeqLens, TensorPageTable} {
		t, ok := tensors[name]
		if !ok || t == nil {
			return nil, &difftest.InputError{Tensor: name, Rule: "missing from the capture"}
		}
		t = t.Clone()
		t.Name = name
		in = append(in, t)
	}
	scores, lens, table := in[0], in[1], in[2]
	if p.ScoreDType == "" {
		// A capture that leaves score_dtype out states it by the scores
		// tensor's dtype (an unknown dtype is refused below, by name).
		switch scores.DType {
		case difftest.BF16:
			p.ScoreDType = ScoreBF16
		case difftest.F16:
			p.ScoreDType = ScoreF16
		}
	}
	if err := checkScoreDType(p.ScoreDType); err != nil {
		return nil, fmt.Errorf("case %s: params: %w", id, err)
	}
	for i, dt := range []difftest.DType{p.scoresDType(), difftest.I32, difftest.I32} {
		if in[i].DType != dt {
			return nil, difftest.Inputf(in[i].Name, nil, "dtype must be %s, got %s", dt, in[i].DType)
		}
	}
	if len(scores.Shape) != 2 {
		return nil, difftest.Inputf(TensorScores, nil, "rank must be 2 ([batch, stride]), got shape %v", scores.Shape)
	}
	if len(table.Shape) != 2 {
		return nil, difftest.Inputf(TensorPageTable, nil, "rank must be 2 ([batch, max_pages]), got shape %v", table.Shape)
	}
	facts := []struct {
		name      string
		json, got int
	}{
		{"batch", p.Batch, scores.Shape[0]},
		{"stride", p.Stride, scores.Shape[1]},
		{"max_pages", p.MaxPages, table.Shape[1]},
	}
	for _, f := range facts {
		if f.json != 0 && f.json != f.got {
			return nil, fmt.Errorf("case %s: params %s = %d but the tensors say %d", id, f.name, f.json, f.got)
		}
	}
	p.Batch, p.Stride, p.MaxPages = scores.Shape[0], scores.Shape[1], table.Shape[1]
	if err := checkLimits(&p); err != nil {
		return nil, err
	}
	// Every shape is now bounded; a capture's bytes are read after this.
	if err := checkShape(lens, p.Batch); err != nil {
		return nil, err
	}
	if err := checkShape(table, p.Batch, p.MaxPages); err != nil {
		return nil, err
	}
	return &difftest.Case{
		ID:      id,
		Kernel:  KernelName,
		Family:  p.Family,
		Params:  &p,
		Inputs:  in,
		Outputs: p.Outputs(),
	}, nil
}
