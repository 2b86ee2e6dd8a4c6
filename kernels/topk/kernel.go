// The difftest.Kernel implementation of topk_transform (docs/contracts/topk_transform.md),
// registered with the harness at init.

package topk

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/kerneldiff/kerneldiff/difftest"
)

func init() { difftest.RegisterKernel(Kernel{}) }

var _ difftest.KeyMetricer = Kernel{}

// Kernel is the topk_transform contract as a difftest.Kernel: NewCase
// draws one of Families, Validate and Reference are the package functions
// of the same names, Check is the tie-aware rule of docs/contracts/topk_transform.md and
// Mutants the top-k part of the catalog of docs/mutants.md. The zero value is ready to use.
type Kernel struct{}

// Name returns "topk_transform".
func (Kernel) Name() string { return KernelName }

// Families returns the input family names NewCase accepts (Families).
func (Kernel) Families() []string { return Families() }

// NewCase draws the inputs of spec; see NewCase.
func (Kernel) NewCase(spec difftest.CaseSpec, seed, key uint64) (*difftest.Case, error) {
	return NewCase(spec, seed, key)
}

// FromTensors rebuilds a captured case; see FromTensors.
func (Kernel) FromTensors(id string, params json.RawMessage, tensors map[string]*difftest.Tensor) (*difftest.Case, error) {
	return FromTensors(id, params, tensors)
}

// Validate checks the preconditions; see Validate.
func (Kernel) Validate(c *difftest.Case) error { return Validate(c) }

// Reference computes the exact outputs; see Reference.
func (Kernel) Reference(c *difftest.Case, outs []*difftest.Tensor) error { return Reference(c, outs) }

// Written reports every byte of every output as written: the contract
// fills page_indices (and raw_indices) completely, −1 in the tail.
func (Kernel) Written(c *difftest.Case) [][]difftest.Range {
	w := make([][]difftest.Range, len(c.Outputs))
	for i, o := range c.Outputs {
		w[i] = []difftest.Range{{Off: 0, Len: o.Bytes()}}
	}
	return w
}

// Check applies the validity rule; see Check.
func (Kernel) Check(c *difftest.Case, got, want []*difftest.Tensor) difftest.Result {
	return Check(c, got, want)
}

// KeyMetric chooses the metric the human table shows (difftest.KeyMetricer):
// for a case that failed Check, the counter of the rule that failed first,
// e.g. "wrong_slots=3" or "missing=1"; otherwise "" (the harness default:
// recall for a pass, or the failure class's own choice when Check never
// ran).
func (Kernel) KeyMetric(rec *difftest.Record) string {
	if !rec.Failed() {
		return ""
	}
	rule, ok := rec.Metrics["failed_rule"].(string)
	if !ok {
		return ""
	}
	if n, ok := rec.Metrics[rule]; ok {
		return fmt.Sprintf("%s=%v", rule, n)
	}
	return ""
}

// Mutants returns the fourteen top-k mutants; see Mutants.
func (Kernel) Mutants() []difftest.Mutant { return Mutants() }

// Equivalent reports whether two runs of one implementation produced the
// same result: per row and per output, the same set of entries (order is
// unspecified for L > K) with −1 at the same places. Short rows are compared
// the same way; their order is Check's business. The error names the first
// differing row and output.
func (Kernel) Equivalent(c *difftest.Case, a, b []*difftest.Tensor) error {
	p, err := paramsOf(c)
	if err != nil {
		return err
	}
	if len(a) != len(b) {
		return fmt.Errorf("runs returned %d and %d outputs", len(a), len(b))
	}
	K := p.K
	var x, y []int32
	for t := range a {
		if len(a[t].Data) != len(b[t].Data) || len(a[t].Data) != 4*p.Batch*K {
			return fmt.Errorf("%s: runs returned %d and %d bytes, want %d", a[t].Name, len(a[t].Data), len(b[t].Data), 4*p.Batch*K)
		}
		for r := 0; r < p.Batch; r++ {
			x, y = x[:0], y[:0]
			for j := 0; j < K; j++ {
				u, v := a[t].I32(r*K+j), b[t].I32(r*K+j)
				if (u == -1) != (v == -1) {
					return fmt.Errorf("row %d: %s[%d][%d] is %d in one run and %d in the other", r, a[t].Name, r, j, u, v)
				}
				x, y = append(x, u), append(y, v)
			}
			slices.Sort(x)
			slices.Sort(y)
			if i := firstDiff(x, y); i >= 0 {
				return fmt.Errorf("row %d: %s differ as sets between runs (sorted entry %d: %d vs %d)", r, a[t].Name, i, x[i], y[i])
			}
		}
	}
	return nil
}

// firstDiff returns the first index where x and y (equal length) differ,
// or −1.
func firstDiff(x, y []int32) int {
	for i := range x {
		if x[i] != y[i] {
			return i
		}
	}
	return -1
}
