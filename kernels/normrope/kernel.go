// The norm_rope_store contract as a difftest.Kernel, registered at init.

package normrope

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// KernelName is the contract name of docs/contracts/norm_rope_store.md.
const KernelName = "norm_rope_store"

func init() { difftest.RegisterKernel(Kernel{}) }

// Kernel implements difftest.Kernel for norm_rope_store: inputs x bf16
// [N, x_stride], weight f32 [128], bias f32 [128], freqs f32 [max_pos, 64],
// positions i64 [N], out_loc i64 [N]; output cache u8 [num_pages,
// page_bytes], in-out. Case.Params is a Params.
type Kernel struct{}

// Name returns "norm_rope_store".
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
		return fmt.Errorf("norm_rope_store: want 1 output (%s), got %d", NameCache, len(outs))
	}
	return Compute(c, outs[0])
}

// Written returns, for the single output, the byte ranges of every slot a
// token with out_loc ≥ 0 owns, sorted by offset: FP8, its 128 code bytes
// and its 4 scale bytes; BF16, its 256 bytes; FP4, its 64 code bytes and
// its 4 scale bytes. Nil for an invalid case.
func (Kernel) Written(c *difftest.Case) [][]difftest.Range {
	rs, err := written(c)
	if err != nil {
		return nil
	}
	return [][]difftest.Range{rs}
}

func written(c *difftest.Case) ([]difftest.Range, error) {
	p, err := paramsOf(c)
	if err != nil {
		return nil, err
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	loc := c.Input(NameOutLoc)
	if loc == nil {
		return nil, fmt.Errorf("case %s: no %s input", c.ID, NameOutLoc)
	}
	var rs []difftest.Range
	for t := 0; t < loc.Len(); t++ {
		slot := loc.I64(t)
		if slot < 0 || slot >= int64(p.NumSlots()) {
			continue
		}
		at, scaleAt := slotBytes(p, int(slot))
		switch p.Store {
		case StoreBF16:
			rs = append(rs, difftest.Range{Off: at, Len: 2 * Dim})
		case StoreFP4:
			rs = append(rs, difftest.Range{Off: at, Len: Dim / 2}, difftest.Range{Off: scaleAt, Len: fp4Blocks})
		default:
			rs = append(rs, difftest.Range{Off: at, Len: Dim}, difftest.Range{Off: scaleAt, Len: 4})
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Off < rs[j].Off })
	return rs, nil
}

// Equivalent reports whether two runs wrote the same bytes over Written;
// the error names the first differing token slot and byte.
func (Kernel) Equivalent(c *difftest.Case, a, b []*difftest.Tensor) error {
	rs, err := written(c)
	if err != nil {
		return err
	}
	if len(a) != 1 || len(b) != 1 || len(a[0].Data) != len(b[0].Data) {
		return fmt.Errorf("norm_rope_store: outputs differ in count or size")
	}
	for _, r := range rs {
		for i := r.Off; i < r.Off+r.Len; i++ {
			if a[0].Data[i] != b[0].Data[i] {
				return fmt.Errorf("%s byte %d (written range [%d, %d)): 0x%02x vs 0x%02x", NameCache, i, r.Off, r.Off+r.Len, a[0].Data[i], b[0].Data[i])
			}
		}
	}
	return nil
}

// Check compares got with want; see Check.
func (Kernel) Check(c *difftest.Case, got, want []*difftest.Tensor) difftest.Result {
	return Check(c, got, want)
}

// Mutants returns the 16 store mutants; see Mutants.
func (Kernel) Mutants() []difftest.Mutant { return Mutants() }

// CheckSpec returns the error NewCase would return for spec, without
// drawing (difftest.SpecChecker); see CheckSpec.
func (Kernel) CheckSpec(spec difftest.CaseSpec) error { return CheckSpec(spec) }
