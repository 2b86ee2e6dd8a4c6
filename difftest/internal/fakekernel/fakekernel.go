// A small kernel contract for testing the harness on its own: "fake_scatter"
// copies x into y and scatters x[i] into a paged-cache-like InOut buffer
// at slot out_loc[i] (−1 = no write). It has the shape of the real
// contracts (a fully written output, an InOut output with owned and
// untouched bytes, input validation) in a few lines, and three mutants.
package difftest

import (
	"encoding/json"
	"fmt"

	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

type fakeParams struct {
	N     int `json:"n"`
	Slots int `json:"slots"`
}

type fakeKernel struct{}

const fakeName = "fake_scatter"

func init() { RegisterKernel(fakeKernel{}) }

func (fakeKernel) Name() string       { return fakeName }
func (fakeKernel) Families() []string { return []string{"ramp", "random"} }

func fakeOutputs(p fakeParams) []OutputSpec {
	return []OutputSpec{
		{Name: "y", DType: I32, Shape: []int{p.N}},
		{Name: "cache", DType: U8, Shape: []int{4 * p.Slots}, InOut: true},
	}
}

// newFakeCase builds a case from explicit values (tests of single rules).
func newFakeCase(name string, x []int32, loc []int64, slots int) *Case {
	p := fakeParams{N: len(x), Slots: slots}
	xt := MustTensor("x", I32, len(x))
	lt := MustTensor("out_loc", I64, len(loc))
	for i := range x {
		xt.SetI32(i, x[i])
	}
	for i := range loc {
		lt.SetI64(i, loc[i])
	}
	return &Case{ID: fakeName + "/" + name, Kernel: fakeName, Family: "ramp", Params: p, Inputs: []*Tensor{xt, lt}, Outputs: fakeOutputs(p)}
}

func (fakeKernel) NewCase(spec CaseSpec, seed, key uint64) (*Case, error) {
	pr := NewParams(spec.ID(), spec.Params)
	n := pr.Int("n", 8)
	slots := pr.Int("slots", n)
	invalid := pr.Bool("invalid", false) // draws an out_loc past the cache, to test rejection
	if err := pr.Err(); err != nil {
		return nil, err
	}
	x := make([]int32, n)
	loc := make([]int64, n)
	s := rng.NewStream(key, 0, 0)
	perm := s.Perm(slots)
	for i := range x {
		switch spec.Family {
		case "ramp":
			x[i] = int32(i + 1)
			loc[i] = int64(i)
			if i == n-1 {
				loc[i] = -1
			}
		case "random":
			x[i] = int32(s.Uint32())
			loc[i] = int64(perm[i%slots])
			if i >= slots || s.Intn(4) == 0 {
				loc[i] = -1
			}
		default:
			return nil, fmt.Errorf("unknown family %q", spec.Family)
		}
	}
	if invalid {
		loc[0] = int64(slots)
	}
	c := newFakeCase(spec.Name, x, loc, slots)
	c.Family, c.Seed, c.Key = spec.Family, seed, key
	return c, nil
}

func (fakeKernel) FromTensors(id string, params json.RawMessage, ts map[string]*Tensor) (*Case, error) {
	var p fakeParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	for _, name := range []string{"x", "out_loc"} {
		if ts[name] == nil {
			return nil, &InputError{Tensor: name, Rule: "missing"}
		}
	}
	// Dtype and shape only (Kernel.FromTensors): Data is not read yet.
	if err := ts["x"].CheckShape(I32, p.N); err != nil {
		return nil, err
	}
	if err := ts["out_loc"].CheckShape(I64, p.N); err != nil {
		return nil, err
	}
	return &Case{ID: id, Kernel: fakeName, Params: p, Inputs: []*Tensor{ts["x"], ts["out_loc"]}, Outputs: fakeOutputs(p)}, nil
}

func (fakeKernel) Validate(c *Case) error {
	p := c.Params.(fakeParams)
	x, loc := c.Input("x"), c.Input("out_loc")
	if x.Len() != p.N || loc.Len() != p.N {
		return Inputf("out_loc", nil, "must have n=%d elements, got %d", p.N, loc.Len())
	}
	seen := map[int64]int{}
	for i := 0; i < p.N; i++ {
		v := loc.I64(i)
		if v < -1 || v >= int64(p.Slots) {
			return Inputf("out_loc", []int{i}, "must be −1 or in [0, %d), got %d", p.Slots, v)
		}
		if j, dup := seen[v]; dup && v >= 0 {
			return Inputf("out_loc", []int{i}, "duplicates out_loc[%d] = %d", j, v)
		}
		seen[v] = i
	}
	return nil
}

func fakeRun(c *Case, outs []*Tensor, fault string) error {
	p := c.Params.(fakeParams)
	x, loc := c.Input("x"), c.Input("out_loc")
	y, cache := outs[0], outs[1]
	for i := 0; i < p.N; i++ {
		if fault == "skip-last" && i == p.N-1 {
			continue
		}
		v := x.I32(i)
		if fault == "off-by-one" && i == p.N-1 {
			v++
		}
		y.SetI32(i, v)
		slot := loc.I64(i)
		if slot < 0 {
			if fault != "write-negative" {
				continue
			}
			slot = int64(p.Slots - 1) // where a −1 lands when read as unsigned and masked
		}
		cache.SetI32(int(slot), v)
	}
	return nil
}

func (fakeKernel) Reference(c *Case, outs []*Tensor) error { return fakeRun(c, outs, "") }

func (fakeKernel) Written(c *Case) [][]Range {
	p := c.Params.(fakeParams)
	loc := c.Input("out_loc")
	var cache []Range
	for i := 0; i < p.N; i++ {
		if s := loc.I64(i); s >= 0 {
			cache = append(cache, Range{Off: 4 * int(s), Len: 4})
		}
	}
	return [][]Range{{{Off: 0, Len: 4 * p.N}}, cache}
}

func (k fakeKernel) Equivalent(c *Case, a, b []*Tensor) error {
	for o, rs := range k.Written(c) {
		for _, r := range rs {
			for i := r.Off; i < r.Off+r.Len; i++ {
				if a[o].Data[i] != b[o].Data[i] {
					return fmt.Errorf("%s byte %d: 0x%02x vs 0x%02x", a[o].Name, i, a[o].Data[i], b[o].Data[i])
				}
			}
		}
	}
	return nil
}

func (k fakeKernel) Check(c *Case, got, want []*Tensor) Result {
	var res Result
	bad, total := 0, 0
	for o, rs := range k.Written(c) {
		for _, r := range rs {
			for i := r.Off; i < r.Off+r.Len; i += 4 {
				total++
				g, w := got[o].I32(i/4), want[o].I32(i/4)
				if g != w {
					if bad == 0 {
						res.Class = Mismatch
						res.Message = fmt.Sprintf("%s[%d]: got %d, want %d", got[o].Name, i/4, g, w)
						res.Worst = append(res.Worst, Element{Tensor: got[o].Name, Index: fmt.Sprintf("[%d]", i/4), Got: fmt.Sprint(g), Want: fmt.Sprint(w), Ratio: RatioOf(1)})
					}
					bad++
				}
			}
		}
	}
	res.Metrics = map[string]any{"mismatches": bad, "mismatch_fraction": float64(bad) / float64(max(total, 1))}
	return res
}

func (fakeKernel) Mutants() []Mutant {
	m := func(name, fault string) Mutant {
		return Mutant{Name: "fake-" + name, Fault: fault, Run: func(c *Case, outs []*Tensor) error { return fakeRun(c, outs, name) }}
	}
	return []Mutant{
		m("off-by-one", "the last element is one too large"),
		m("skip-last", "the last element of y is never written"),
		m("write-negative", "a token with out_loc −1 is written to the last slot"),
	}
}
