// A small kernel contract for testing the harness on its own: "fake_scatter"
// copies x into y and scatters x[i] into a paged-cache-like InOut buffer
// at slot out_loc[i] (−1 = no write). It has the shape of the real
// contracts (a fully written output, an InOut output with owned and
// untouched bytes, input validation) in a few lines, and three mutants.
//
// Package fakekernel registers it (importing the package is enough); the
// tests of difftest and of the packages beside it share it.
package fakekernel

import (
	"encoding/json"
	"fmt"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// Params are fake_scatter's parameters: n elements of x, slots 4-byte
// slots of the cache.
type Params struct {
	N     int `json:"n"`
	Slots int `json:"slots"`
}

// Kernel is the fake_scatter contract; its methods are difftest.Kernel's.
type Kernel struct{}

// Name is the kernel's registered name.
const Name = "fake_scatter"

func init() { difftest.RegisterKernel(Kernel{}) }

// Name returns Name, "fake_scatter".
func (Kernel) Name() string { return Name }

// Families returns fake_scatter's families: "ramp" (x[i] = i+1 to slot i,
// the last token −1) and "random" (random values to a random permutation
// of the slots, about one token in four −1).
func (Kernel) Families() []string { return []string{"ramp", "random"} }

// Outputs returns the output specs of a case: y i32[n], cache u8[4·slots] (InOut).
func Outputs(p Params) []difftest.OutputSpec {
	return []difftest.OutputSpec{
		{Name: "y", DType: difftest.I32, Shape: []int{p.N}},
		{Name: "cache", DType: difftest.U8, Shape: []int{4 * p.Slots}, InOut: true},
	}
}

// NewCase builds a case from explicit values (tests of single rules).
func NewCase(name string, x []int32, loc []int64, slots int) *difftest.Case {
	p := Params{N: len(x), Slots: slots}
	xt := difftest.MustTensor("x", difftest.I32, len(x))
	lt := difftest.MustTensor("out_loc", difftest.I64, len(loc))
	for i := range x {
		xt.SetI32(i, x[i])
	}
	for i := range loc {
		lt.SetI64(i, loc[i])
	}
	return &difftest.Case{ID: Name + "/" + name, Kernel: Name, Family: "ramp", Params: p, Inputs: []*difftest.Tensor{xt, lt}, Outputs: Outputs(p)}
}

// NewCase draws a case of spec's family with the params n (default 8),
// slots (default n) and invalid (an out_loc past the cache, to test
// rejection); n and slots must lie in [0, 2^20].
func (Kernel) NewCase(spec difftest.CaseSpec, seed, key uint64) (*difftest.Case, error) {
	pr := difftest.NewParams(spec.ID(), spec.Params)
	n := pr.Int("n", 8)
	slots := pr.Int("slots", n)
	invalid := pr.Bool("invalid", false) // draws an out_loc past the cache, to test rejection
	if err := pr.Err(); err != nil {
		return nil, err
	}
	if n < 0 || n > 1<<20 || slots < 0 || slots > 1<<20 {
		return nil, fmt.Errorf("case %s: n %d and slots %d must be in [0, 2^20]", spec.ID(), n, slots)
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
	c := NewCase(spec.Name, x, loc, slots)
	c.Family, c.Seed, c.Key = spec.Family, seed, key
	return c, nil
}

// FromTensors rebuilds a captured case: params is Params' JSON
// (difftest.DecodeStrict), ts must hold x I32 [n] and out_loc I64 [n].
// Errors name the parameter or the tensor and the rule.
func (Kernel) FromTensors(id string, params json.RawMessage, ts map[string]*difftest.Tensor) (*difftest.Case, error) {
	var p Params
	if err := difftest.DecodeStrict(params, &p); err != nil {
		return nil, fmt.Errorf("params: %w", err)
	}
	for _, name := range []string{"x", "out_loc"} {
		if ts[name] == nil {
			return nil, &difftest.InputError{Tensor: name, Rule: "missing"}
		}
	}
	// Dtype and shape only (Kernel.FromTensors): Data is not read yet.
	if err := ts["x"].CheckShape(difftest.I32, p.N); err != nil {
		return nil, err
	}
	if err := ts["out_loc"].CheckShape(difftest.I64, p.N); err != nil {
		return nil, err
	}
	return &difftest.Case{ID: id, Kernel: Name, Params: p, Inputs: []*difftest.Tensor{ts["x"], ts["out_loc"]}, Outputs: Outputs(p)}, nil
}

// Validate checks that every out_loc is −1 or a slot in [0, slots), and
// that no slot is named twice; the error names the first bad index.
func (Kernel) Validate(c *difftest.Case) error {
	p := c.Params.(Params)
	x, loc := c.Input("x"), c.Input("out_loc")
	if x.Len() != p.N || loc.Len() != p.N {
		return difftest.Inputf("out_loc", nil, "must have n=%d elements, got %d", p.N, loc.Len())
	}
	seen := map[int64]int{}
	for i := 0; i < p.N; i++ {
		v := loc.I64(i)
		if v < -1 || v >= int64(p.Slots) {
			return difftest.Inputf("out_loc", []int{i}, "must be −1 or in [0, %d), got %d", p.Slots, v)
		}
		if j, dup := seen[v]; dup && v >= 0 {
			return difftest.Inputf("out_loc", []int{i}, "duplicates out_loc[%d] = %d", j, v)
		}
		seen[v] = i
	}
	return nil
}

// Run computes the outputs of c into outs, with the named mutant's fault
// ("" for the reference).
func Run(c *difftest.Case, outs []*difftest.Tensor, fault string) error {
	p := c.Params.(Params)
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

// Reference is Run without a fault.
func (Kernel) Reference(c *difftest.Case, outs []*difftest.Tensor) error { return Run(c, outs, "") }

// Written reports all of y, and in cache the 4 bytes of every slot an
// out_loc ≥ 0 names.
func (Kernel) Written(c *difftest.Case) [][]difftest.Range {
	p := c.Params.(Params)
	loc := c.Input("out_loc")
	var cache []difftest.Range
	for i := 0; i < p.N; i++ {
		if s := loc.I64(i); s >= 0 {
			cache = append(cache, difftest.Range{Off: 4 * int(s), Len: 4})
		}
	}
	return [][]difftest.Range{{{Off: 0, Len: 4 * p.N}}, cache}
}

// Equivalent reports whether two runs wrote the same written bytes
// (Written); the error names the first byte that differs.
func (k Kernel) Equivalent(c *difftest.Case, a, b []*difftest.Tensor) error {
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

// Check compares the written 4-byte words exactly. A mismatch names the
// first differing word; metrics mismatches and mismatch_fraction count
// them over every written word.
func (k Kernel) Check(c *difftest.Case, got, want []*difftest.Tensor) difftest.Result {
	var res difftest.Result
	bad, total := 0, 0
	for o, rs := range k.Written(c) {
		for _, r := range rs {
			for i := r.Off; i < r.Off+r.Len; i += 4 {
				total++
				g, w := got[o].I32(i/4), want[o].I32(i/4)
				if g != w {
					if bad == 0 {
						res.Class = difftest.Mismatch
						res.Message = fmt.Sprintf("%s[%d]: got %d, want %d", got[o].Name, i/4, g, w)
						res.Worst = append(res.Worst, difftest.Element{Tensor: got[o].Name, Index: fmt.Sprintf("[%d]", i/4), Got: fmt.Sprint(g), Want: fmt.Sprint(w)}) // compared exactly: no ratio
					}
					bad++
				}
			}
		}
	}
	res.Metrics = map[string]any{"mismatches": bad, "mismatch_fraction": float64(bad) / float64(max(total, 1))}
	return res
}

// Mutants returns the three faults of Run as fake-off-by-one,
// fake-skip-last and fake-write-negative.
func (Kernel) Mutants() []difftest.Mutant {
	m := func(name, fault string) difftest.Mutant {
		return difftest.Mutant{Name: "fake-" + name, Fault: fault, Run: func(c *difftest.Case, outs []*difftest.Tensor) error { return Run(c, outs, name) }}
	}
	return []difftest.Mutant{
		m("off-by-one", "the last element is one too large"),
		m("skip-last", "the last element of y is never written"),
		m("write-negative", "a token with out_loc −1 is written to the last slot"),
	}
}

// SuiteTOML is a suite file of two fake_scatter cases: ramp-8 (n = 8) and
// random-64 (n = 64, 80 slots).
const SuiteTOML = `
[[case]]
kernel = "fake_scatter"
family = "ramp"
name = "ramp-8"
[case.params]
n = 8

[[case]]
kernel = "fake_scatter"
family = "random"
name = "random-64"
[case.params]
n = 64
slots = 80
`

// Suite returns the cases of SuiteTOML and a third, random-5 (n = 5), as
// the loaded suite "fake.toml" (what suite.ParseSuite makes of that file)
// that the harness's tests run.
func Suite() *difftest.Suite {
	c := func(family, name string, params map[string]any) difftest.SuiteCase {
		return difftest.SuiteCase{Spec: difftest.CaseSpec{Kernel: Name, Family: family, Name: name, Params: params}, File: "fake.toml"}
	}
	return &difftest.Suite{Name: "fake.toml", Cases: []difftest.SuiteCase{
		c("ramp", "ramp-8", map[string]any{"n": int64(8)}),
		c("random", "random-64", map[string]any{"n": int64(64), "slots": int64(80)}),
		c("random", "random-5", map[string]any{"n": int64(5)}),
	}}
}

// MinBytes makes the fake kernel a bench.TrafficModel: x (4 B) and out_loc
// (8 B) read and y (4 B) written per element, and 4 B per written slot.
func (k Kernel) MinBytes(c *difftest.Case) int64 {
	n := int64(c.Params.(Params).N)
	var slots int64
	for _, r := range k.Written(c)[1] {
		slots += int64(r.Len)
	}
	return 16*n + slots
}
