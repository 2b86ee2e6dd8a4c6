package normrope

import (
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// handCase builds a case from explicit values. x rows are rounded to bf16
// (tests pass exactly representable values); nil weight means all ones,
// nil bias all zeros; freqs rows are (cos, sin) pairs.
func handCase(p Params, x [][]float64, w, b []float32, freqs [][]float32, pos, loc []int64) *difftest.Case {
	n := len(x)
	xt := difftest.MustTensor(NameX, difftest.BF16, n, Dim)
	for t, row := range x {
		for i := 0; i < Dim; i++ {
			v := 0.0
			if i < len(row) {
				v = row[i]
			}
			xt.SetU16(t*Dim+i, numeric.BF16FromF64(v))
		}
	}
	wt := difftest.MustTensor(NameWeight, difftest.F32, Dim)
	bt := difftest.MustTensor(NameBias, difftest.F32, Dim)
	for i := 0; i < Dim; i++ {
		wt.SetF32(i, 1)
		if w != nil {
			wt.SetF32(i, w[i])
		}
		if b != nil {
			bt.SetF32(i, b[i])
		}
	}
	ft := difftest.MustTensor(NameFreqs, difftest.F32, len(freqs), RopeDim)
	for r, row := range freqs {
		for k, v := range row {
			ft.SetF32(r*RopeDim+k, v)
		}
	}
	pt := difftest.MustTensor(NamePositions, difftest.I64, n)
	lt := difftest.MustTensor(NameOutLoc, difftest.I64, n)
	for t := 0; t < n; t++ {
		pt.SetI64(t, pos[t])
		lt.SetI64(t, loc[t])
	}
	return &difftest.Case{ID: "norm_rope_store/hand", Kernel: KernelName, Params: p,
		Inputs:  []*difftest.Tensor{xt, wt, bt, ft, pt, lt},
		Outputs: outputsOf(p)}
}

// rotRow returns a freqs row with every pair at (c, s).
func rotRow(c, s float32) []float32 {
	row := make([]float32, RopeDim)
	for j := 0; j < RopeDim/2; j++ {
		row[2*j], row[2*j+1] = c, s
	}
	return row
}

// config returns a configuration for hand-worked cases.
func config(norm, style string, off int, had bool, store, scale string, P, pages int) Params {
	return Params{Norm: norm, RopeOffset: off, RopeStyle: style, Hadamard: had, Store: store, ScaleFmt: scale,
		PageSize: P, NumPages: pages, Eps: DefaultEps, Model: ModelV4}
}

// withParam returns spec with suite param name set to value, the spec's
// own params otherwise (a value the spec gives for name wins, as the
// declared-precision tests want: they add a param no suite entry sets).
func withParam(spec difftest.CaseSpec, name string, value any) difftest.CaseSpec {
	ps := map[string]any{name: value}
	for k, v := range spec.Params {
		ps[k] = v
	}
	spec.Params = ps
	return spec
}

// verdicts judges implementations' runs on one case against one reference
// (outcome) and remembers each verdict by the bytes judged: the canary
// check and Check are functions of the case, the output bytes and the
// reference alone, so a run that writes bytes already judged has their
// verdict, and is not judged again. The catalog tests, whose kernel
// variants and mutants often write the same cache, judge each distinct
// cache once.
type verdicts struct {
	c    *difftest.Case
	want *difftest.Tensor
	seen map[string]verdict
}

// verdict is one outcome: failed and why.
type verdict struct {
	failed bool
	why    string
}

// newVerdicts returns an empty memo of verdicts on c against want.
func newVerdicts(c *difftest.Case, want *difftest.Tensor) *verdicts {
	return &verdicts{c: c, want: want, seen: map[string]verdict{}}
}

// of runs run on a fresh canary-filled cache (kerneltest.Run) and returns
// the outcome of the bytes it wrote, judging them only when they are new.
func (v *verdicts) of(t *testing.T, run func([]*difftest.Tensor) error) (failed bool, why string) {
	t.Helper()
	got := kerneltest.Run(t, v.c, run)[0].Data
	if r, ok := v.seen[string(got)]; ok {
		return r.failed, r.why
	}
	failed, why = outcome(t, v.c, v.want, func(o []*difftest.Tensor) error {
		copy(o[0].Data, got)
		return nil
	})
	v.seen[string(got)] = verdict{failed, why}
	return failed, why
}
