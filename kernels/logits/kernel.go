// The indexer_logits contract as a difftest.Kernel, registered at init.

package logits

import (
	"encoding/json"
	"fmt"

	"github.com/kerneldiff/kerneldiff/difftest"
)

func init() { difftest.RegisterKernel(Kernel{}) }

var (
	_ difftest.SpecChecker     = Kernel{}
	_ difftest.FamilyDescriber = Kernel{}
	_ difftest.Unspecifier     = Kernel{}
)

// Kernel implements difftest.Kernel for indexer_logits (docs/contracts/indexer_logits.md):
// inputs q [B, (next_n,) H, 128] (u8 e4m3fn codes, or bf16) or [B,
// (next_n,) H, 68] (FP4), weights f32 [B·next_n, H], cache u8 [num_pages,
// page_stride], seq_lens i32 [B] or [B, next_n], page_table i32 [B,
// max_pages]; output logits f32 or bf16 [B·next_n, stride]. Case.Params
// is a Params.
// The zero value is ready to use.
type Kernel struct{}

// Name returns "indexer_logits".
func (Kernel) Name() string { return KernelName }

// Families lists the input families (families.go).
func (Kernel) Families() []string { return Families() }

// NewCase draws a case; see NewCase.
func (Kernel) NewCase(spec difftest.CaseSpec, seed, key uint64) (*difftest.Case, error) {
	return NewCase(spec, seed, key)
}

// FromTensors rebuilds a captured case; see FromTensors.
func (Kernel) FromTensors(id string, params json.RawMessage, tensors map[string]*difftest.Tensor) (*difftest.Case, error) {
	return FromTensors(id, params, tensors)
}

// Validate checks the contract's preconditions; see Validate.
func (Kernel) Validate(c *difftest.Case) error { return Validate(c) }

// Reference writes the exact result into outs[0]; see Compute.
func (Kernel) Reference(c *difftest.Case, outs []*difftest.Tensor) error {
	if len(outs) != 1 {
		return fmt.Errorf("%s: want 1 output (%s), got %d", KernelName, NameLogits, len(outs))
	}
	return Compute(c, outs[0])
}

// rowRanges returns per row the byte range of positions [lo(L_b), hi(L_b))
// of the logits, skipping empty ones; nil for an invalid case.
func rowRanges(c *difftest.Case, part func(p Params, L int) (lo, hi int)) [][]difftest.Range {
	p, err := paramsOf(c)
	if err != nil || p.Check() != nil {
		return nil
	}
	lens := c.Input(NameSeqLens)
	if lens == nil || lens.Len() != p.Rows() {
		return nil
	}
	var rs []difftest.Range
	eb := p.elemBytes()
	for b := 0; b < p.Rows(); b++ {
		L := min(max(int(lens.I32(b)), 0), p.Stride)
		lo, hi := part(p, L)
		if hi > lo {
			rs = append(rs, difftest.Range{Off: eb * (b*p.Stride + lo), Len: eb * (hi - lo)})
		}
	}
	return [][]difftest.Range{rs}
}

// Written returns, for the single output, the bytes the contract says are
// written: with clean every row's [0, stride) (scores, then −inf), without
// it every row's [0, L_b). Nil for an invalid case.
func (Kernel) Written(c *difftest.Case) [][]difftest.Range {
	return rowRanges(c, func(p Params, L int) (int, int) {
		if p.Clean {
			return 0, p.Stride
		}
		return 0, L
	})
}

// Unspecified returns, without clean, every row's positions [L_b, stride):
// an implementation may leave or write them (difftest.Unspecifier). With
// clean there are none.
func (Kernel) Unspecified(c *difftest.Case) [][]difftest.Range {
	return rowRanges(c, func(p Params, L int) (int, int) {
		if p.Clean {
			return 0, 0
		}
		return L, p.Stride
	})
}

// Equivalent reports whether two runs wrote the same bits over Written;
// positions that are don't care (a NaN key code or value, a non-finite
// scale) may differ. The error names the first differing row and position.
func (Kernel) Equivalent(c *difftest.Case, a, b []*difftest.Tensor) error {
	in, err := load(c)
	if err != nil {
		return err
	}
	if len(a) != 1 || len(b) != 1 || len(a[0].Data) != len(b[0].Data) || checkLogits(in.p, a[0]) != nil {
		return fmt.Errorf("%s: outputs differ in count or size", KernelName)
	}
	var k [Dim]float64
	for row := 0; row < in.p.Rows(); row++ {
		L := int(in.lens.I32(row))
		hi := in.p.Stride
		if !in.p.Clean {
			hi = L
		}
		for s := 0; s < hi; s++ {
			i := row*in.p.Stride + s
			_, x := getLogit(in.p, a[0], i)
			if _, y := getLogit(in.p, b[0], i); x != y {
				if s < L {
					if _, dc := in.key(in.slot(row, s), &k); dc != "" {
						continue
					}
				}
				return fmt.Errorf("%s[%d][%d]: 0x%0*x vs 0x%0*x", NameLogits, row, s, 2*in.p.elemBytes(), x, 2*in.p.elemBytes(), y)
			}
		}
	}
	return nil
}

// Check compares got with want; see Check.
func (Kernel) Check(c *difftest.Case, got, want []*difftest.Tensor) difftest.Result {
	return Check(c, got, want)
}

// Mutants returns the 13 mutants the default suite must catch; see Mutants.
func (Kernel) Mutants() []difftest.Mutant { return Mutants() }

// CheckSpec returns the error NewCase would return for spec, without
// drawing (difftest.SpecChecker); see CheckSpec.
func (Kernel) CheckSpec(spec difftest.CaseSpec) error { return CheckSpec(spec) }
