// The pipeline as a difftest.Kernel and difftest.Chain, registered at init.

package pipeline

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/kernels/logits"
	"github.com/kerneldiff/kerneldiff/kernels/normrope"
	"github.com/kerneldiff/kerneldiff/kernels/topk"
)

func init() { difftest.RegisterKernel(Kernel{}) }

var (
	_ difftest.Chain           = Kernel{}
	_ difftest.SpecChecker     = Kernel{}
	_ difftest.KeyMetricer     = Kernel{}
	_ difftest.FamilyDescriber = Kernel{}
)

// Kernel is the pipeline of docs/pipeline.md as a difftest.Kernel whose cases
// run as chains (difftest.Chain: RunChain). Its Reference, Check and
// Equivalent describe the whole chain on the reference (the top-k of the
// reference's logits of the reference's keys); a chained run does not use
// them. It has no mutants of its own: the stages' kernels carry the
// catalog, and a mutant implementation (mutant:NAME) runs its fault in
// its stage. The zero value is ready to use.
type Kernel struct{}

// Name returns "pipeline".
func (Kernel) Name() string { return KernelName }

// Families returns ["needle"].
func (Kernel) Families() []string { return []string{"needle"} }

// NewCase draws a case; see NewCase.
func (Kernel) NewCase(spec difftest.CaseSpec, seed, key uint64) (*difftest.Case, error) {
	return NewCase(spec, seed, key)
}

// CheckSpec returns NewCase's error for spec without drawing.
func (Kernel) CheckSpec(spec difftest.CaseSpec) error { return CheckSpec(spec) }

// FromTensors rebuilds a captured case from its Params JSON and its
// twelve inputs (InputNames).
func (Kernel) FromTensors(id string, params json.RawMessage, tensors map[string]*difftest.Tensor) (*difftest.Case, error) {
	p, err := ParseParams(params)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", id, err)
	}
	c := &difftest.Case{ID: id, Kernel: KernelName, Family: p.Family, Params: p, Outputs: outputsOf(p)}
	if c.Inputs, err = difftest.CaptureInputs(id, InputNames(), tensors); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate checks the case: its params, its twelve inputs in order, and
// each stage's contract on the inputs it takes from the case (stage 1's
// in full; stages 2 and 3 with a zero cache and zero scores of their
// shapes), so a case that would break a stage is rejected before it runs.
// q_exact and weights_exact must be f32 [B, H, 128] and [B, H], finite.
func (Kernel) Validate(c *difftest.Case) error {
	p, err := paramsOf(c)
	if err != nil {
		return err
	}
	if err := p.Check(); err != nil {
		return err
	}
	names := InputNames()
	if len(c.Inputs) != len(names) {
		return difftest.Inputf("inputs", nil, "want %d tensors %v, got %d", len(names), names, len(c.Inputs))
	}
	for i, n := range names {
		if c.Inputs[i] == nil || c.Inputs[i].Name != n {
			return difftest.Inputf("inputs", []int{i}, "must be %q", n)
		}
	}
	for _, e := range []struct {
		name  string
		shape []int
	}{{NameQExact, []int{p.Batch, p.Heads, normrope.Dim}}, {NameWeightsExact, []int{p.Batch, p.Heads}}} {
		t := c.Input(e.name)
		if err := t.CheckLayout(difftest.F32, len(e.shape)); err != nil {
			return err
		}
		for i, d := range e.shape {
			if t.Shape[i] != d {
				return difftest.Inputf(e.name, nil, "shape must be %v, got %v", e.shape, t.Shape)
			}
		}
		for i := 0; i < t.Len(); i++ {
			if v := t.F32(i); v != v || v-v != 0 {
				return difftest.Inputf(e.name, []int{i}, "must be finite, got %g", v)
			}
		}
	}
	s1, err := stage1(c)
	if err != nil {
		return err
	}
	if err := normrope.Validate(s1); err != nil {
		return fmt.Errorf("stage 1 %s: %w", normrope.KernelName, err)
	}
	o := s1.Outputs[0]
	s2, err := stage2(c, difftest.MustTensor(logits.NameCache, o.DType, o.Shape...))
	if err != nil {
		return err
	}
	if err := logits.Validate(s2); err != nil {
		return fmt.Errorf("stage 2 %s: %w", logits.KernelName, err)
	}
	s3, err := stage3(c, difftest.MustTensor(logits.NameLogits, difftest.F32, p.Batch, p.Stride))
	if err != nil {
		return err
	}
	if err := topk.Validate(s3); err != nil {
		return fmt.Errorf("stage 3 %s: %w", topk.KernelName, err)
	}
	return nil
}

// reference runs the chain on the reference and returns stage 3's case
// (on the reference's logits).
func reference(c *difftest.Case) (*difftest.Case, error) {
	s1, err := stage1(c)
	if err != nil {
		return nil, err
	}
	o := s1.Outputs[0]
	cache := difftest.MustTensor(o.Name, o.DType, o.Shape...)
	for i := range cache.Data {
		cache.Data[i] = byte(difftest.PoisonA)
	}
	if err := normrope.Compute(s1, cache); err != nil {
		return nil, err
	}
	s2, err := stage2(c, cache)
	if err != nil {
		return nil, err
	}
	lg := difftest.MustTensor(logits.NameLogits, difftest.F32, s2.Outputs[0].Shape...)
	if err := logits.Compute(s2, lg); err != nil {
		return nil, err
	}
	return stage3(c, lg)
}

// Reference writes the top-k of the reference chain (page_indices,
// raw_indices).
func (Kernel) Reference(c *difftest.Case, outs []*difftest.Tensor) error {
	s3, err := reference(c)
	if err != nil {
		return err
	}
	return topk.Reference(s3, outs)
}

// Written reports every byte of both outputs as written.
func (Kernel) Written(c *difftest.Case) [][]difftest.Range {
	w := make([][]difftest.Range, len(c.Outputs))
	for i, o := range c.Outputs {
		w[i] = []difftest.Range{{Off: 0, Len: o.Bytes()}}
	}
	return w
}

// Equivalent compares two selections as sets (topk_transform's rule).
func (Kernel) Equivalent(c *difftest.Case, a, b []*difftest.Tensor) error {
	s3, err := reference(c)
	if err != nil {
		return err
	}
	return topk.Kernel{}.Equivalent(s3, a, b)
}

// Check applies topk_transform's rule to a selection of the whole chain
// against the reference chain's scores.
func (Kernel) Check(c *difftest.Case, got, want []*difftest.Tensor) difftest.Result {
	s3, err := reference(c)
	if err != nil {
		return difftest.Result{Class: difftest.InvalidCase, Message: err.Error()}
	}
	return topk.Check(s3, got, want)
}

// Mutants returns none: the stages' kernels hold the catalog.
func (Kernel) Mutants() []difftest.Mutant { return nil }

// KeyMetric shows "recall=R needles=S/N" for a pipeline that ran through,
// and for one that did not the failing stage and its key metric
// ("stage=2 mismatches=1120").
func (Kernel) KeyMetric(rec *difftest.Record) string {
	if st, ok := rec.Metrics["failed_stage"]; ok {
		if m, _ := rec.Metrics["failed_stage_metric"].(string); m != "" {
			return fmt.Sprintf("stage=%v %s", st, m)
		}
		return fmt.Sprintf("stage=%v", st)
	}
	r, ok := rec.Metrics["recall"].(float64)
	if !ok {
		return ""
	}
	s := "recall=" + strconv.FormatFloat(r, 'g', 4, 64)
	if n, ok := rec.Metrics["needles"]; ok {
		s += fmt.Sprintf(" needles=%v/%v", rec.Metrics["needles_selected"], n)
	}
	return s
}

// DescribeFamilies documents the one family and its params.
func (Kernel) DescribeFamilies() []difftest.FamilyInfo {
	return []difftest.FamilyInfo{{
		Name: "needle",
		Doc:  "norm_rope_store → indexer_logits → topk_transform on the implementation, each stage checked on its input; a needle planted at S/3 of each row, end-to-end recall against the exact pipeline",
		Params: []difftest.ParamInfo{
			{Name: "lengths", Required: true, Doc: fmt.Sprintf("[]int, required: row lengths, each in [1, %d]", MaxSeqLen)},
			{Name: "batch", Doc: "int, default the number of lengths: rows"},
			{Name: "preset", Doc: `string, default "v4": v4 (FP8 keys), v4-bf16 (BF16 keys) or v4-fp4 (FP4 keys: v4 without the Hadamard, queries H·q in FP4)`},
			{Name: "K", Doc: "int, default 512: top-k of stage 3"},
			{Name: "H", Doc: "int, default 16: heads, in [1, 64]"},
			{Name: "P", Doc: "int, default 64: page size, a power of two in [1, 1024]"},
			{Name: "needle", Doc: "bool, default true: plant a needle at S/3 of each row"},
			{Name: "margin", Doc: "float, default 3: the needle's exact logit above the K-th largest other, in the row's standard deviations"},
			{Name: "exact_margin", Doc: "bool, default false: turn a row's own token away from the query when it already scores above the margin (false: keep it)"},
			{Name: "keys", Doc: `string, default "gaussian": token distribution, gaussian or outlier (outlier channels in dims [0, 64), the same in every token)`},
			{Name: "outliers", Doc: "int, default 4: outlier channels (keys = outlier), in [1, 64]"},
			{Name: "outlier_scale", Doc: "float, default 30: outlier magnitude in units of the other channels' N(0,1) (keys = outlier), in [1, 1000]"},
		},
	}}
}
