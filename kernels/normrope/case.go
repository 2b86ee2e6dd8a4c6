// Case construction for norm_rope_store: suite parameters → Params and
// seeded input tensors (NewCase), capture tensors → case (FromTensors).

package normrope

import (
	"encoding/json"
	"fmt"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// Philox tensor indices of the generator (docs/running.md: counter = (tensor
// index, block offset)); per-row streams start at block row<<32.
const (
	streamX         = 0 // x, one stream per token row
	streamWeight    = 1
	streamBias      = 2
	streamPositions = 4
	streamOutLoc    = 5
	streamPlan      = 6 // per-case choices of a family (kinds, targets)
)

// gen is one case being generated.
type gen struct {
	family string
	key    uint64
	p      Params
	n      int
	stride int
	maxPos int
	holes  bool
	x      *difftest.Tensor
	w, b   *difftest.Tensor
	pos    *difftest.Tensor
	loc    *difftest.Tensor
	lit    *literal // family literal: the inputs the entry gives
}

// NewCase draws the case spec describes (see Families for the input
// families and their parameters). Suite parameters, all optional:
//
//	preset     "v32" | "v4" | "v4-bf16" | "v4-fp4" (default "v4"), then overrides:
//	norm, rope_offset, rope_style, hadamard, store, scale_fmt, eps, model,
//	intermediate (f32, bf16 or bf16-once: the declared precision between
//	the stages; absent with stages = store),
//	stages (all or store: store only, x already normed and rotated)
//	P          page size, a power of two in [1, MaxPageSize] (default 64)
//	N          tokens, [1, MaxTokens] (default 96)
//	x_stride   row stride of x, [128, MaxXStride] (default 128; padding
//	           holds NaN); N·x_stride·2 ≤ MaxXBytes
//	max_pos    rows of freqs, [1, MaxPositions] (default 4096; family
//	           "positions": the model's full context for v32, 262144 for v4)
//	num_pages  cache pages (default: room for the slots the family needs,
//	           N + max(1, N/8) for most); num_pages·page_bytes ≤ MaxCacheBytes
//	holes      give about 1/8 of the tokens out_loc −1 (default true; the
//	           last token always writes, so tail handling is exercised)
//
// The case's Params.Preset is the preset the final configuration equals
// (MatchPreset), empty when an override leaves every preset. eps is
// checked as given, before its f32 rounding (checkEps).
//
// Unknown parameters, unknown families, values out of range and
// configurations a family cannot honour are errors naming the case and
// the parameter; every size is checked before anything is allocated.
func NewCase(spec difftest.CaseSpec, seed, key uint64) (*difftest.Case, error) {
	g, fam, err := plan(spec)
	if err != nil {
		return nil, err
	}
	g.key = key
	freqs, err := FreqsTable(g.p.Model, g.maxPos)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", spec.ID(), err)
	}
	g.alloc()
	g.defaults()
	fam.fill(g)
	ft := difftest.MustTensor(NameFreqs, difftest.F32, g.maxPos, RopeDim)
	for i, v := range freqs {
		ft.SetF32(i, v)
	}
	c := &difftest.Case{
		ID: spec.ID(), Kernel: KernelName, Family: spec.Family, Seed: seed, Key: key, Params: g.p,
		Inputs:  []*difftest.Tensor{g.x, g.w, g.b, ft, g.pos, g.loc},
		Outputs: outputsOf(g.p),
	}
	if g.lit != nil {
		if err := g.lit.apply(c); err != nil {
			return nil, fmt.Errorf("case %s: %w", spec.ID(), err)
		}
	}
	return c, nil
}

// CheckSpec returns the error NewCase would return for spec, for every
// seed, without drawing or allocating anything (difftest.SpecChecker).
func CheckSpec(spec difftest.CaseSpec) error {
	if spec.Family == FamilyLiteral {
		// A literal entry's inputs are in the entry: NewCase builds them
		// without drawing (small: what one pastes) and validates them.
		_, err := NewCase(spec, 0, 0)
		return err
	}
	_, _, err := plan(spec)
	return err
}

// plan decodes and checks spec's parameters: everything NewCase decides
// before it draws. Sizes are checked in an order that keeps every product
// below 2^40 (P and N first, then the slots the family needs, then the
// cache).
func plan(spec difftest.CaseSpec) (*gen, family, error) {
	fam, ok := families[spec.Family]
	if !ok {
		return nil, family{}, fmt.Errorf("case %s: unknown family %q (want one of %v)", spec.ID(), spec.Family, Families())
	}
	pp := difftest.NewParams(spec.ID(), spec.Params)
	preset := pp.String("preset", PresetV4, PresetV32, PresetV4, PresetV4BF16, PresetV4FP4)
	pageSize := pp.Int("P", 64)
	p, err := Preset(preset, pageSize)
	if err != nil { // pp has recorded the bad name; pp.Err reports it below
		p, _ = Preset(PresetV4, pageSize)
	}
	p.Norm = pp.String("norm", p.Norm, NormRMS, NormLayer)
	p.RopeOffset = pp.Int("rope_offset", p.RopeOffset)
	p.RopeStyle = pp.String("rope_style", p.RopeStyle, StyleNeox, StyleInterleaved)
	p.Hadamard = pp.Bool("hadamard", p.Hadamard)
	p.Store = pp.String("store", p.Store, StoreFP8, StoreBF16, StoreFP4)
	p.ScaleFmt = pp.String("scale_fmt", p.ScaleFmt, ScalePlain, ScaleUE8M0)
	eps := pp.Float("eps", float64(DefaultEps))
	p.Model = pp.String("model", p.Model, ModelV32, ModelV4)
	if v := pp.String("intermediate", IntermediateF32, IntermediateF32, IntermediateBF16, IntermediateBF16Once); v != IntermediateF32 {
		p.Intermediate = v
	}
	if pp.String("stages", StagesAll, StagesAll, StagesStore) == StagesStore {
		p.Stages = StagesStore
	}
	g := &gen{family: spec.Family, p: p}
	g.n = pp.Int("N", 96)
	g.stride = pp.Int("x_stride", Dim)
	g.holes = pp.Bool("holes", true)
	if spec.Family == FamilyLiteral {
		g.lit = readLiteral(pp)
	}
	maxPos, hasMaxPos := 0, spec.Params["max_pos"] != nil
	if hasMaxPos {
		maxPos = pp.Int("max_pos", 0)
	}
	numPages, hasPages := 0, spec.Params["num_pages"] != nil
	if hasPages {
		numPages = pp.Int("num_pages", 0)
	}
	if err := pp.Err(); err != nil {
		return nil, family{}, err
	}
	fail := func(err error) (*gen, family, error) { return nil, family{}, fmt.Errorf("case %s: %w", spec.ID(), err) }
	if err := checkEps(eps); err != nil {
		return fail(err)
	}
	g.p.Eps = float32(eps)
	g.p.Preset = MatchPreset(g.p)
	// P first: the family's slot count multiplies by it.
	g.p.NumPages = 1
	if err := g.p.Check(); err != nil {
		return fail(err)
	}
	if err := checkSizes(g.n, g.stride, "N", "x_stride"); err != nil {
		return fail(err)
	}
	if !hasMaxPos {
		maxPos = fam.maxPos(g.p)
	}
	if err := checkMaxPos(maxPos, "max_pos"); err != nil {
		return fail(err)
	}
	g.maxPos = maxPos
	need := fam.slots(g.n, g.p.PageSize) // ≤ 2^23·2^16: no overflow
	if hasPages {
		if numPages < 1 || numPages > MaxCacheBytes/g.p.PageBytes() {
			g.p.NumPages = numPages
			return fail(g.p.Check())
		}
		if numPages*g.p.PageSize < need {
			return fail(difftest.Inputf("num_pages", nil, "%d pages of P=%d hold %d slots; family %s needs %d for N=%d", numPages, g.p.PageSize, numPages*g.p.PageSize, spec.Family, need, g.n))
		}
		g.p.NumPages = numPages
	} else {
		g.p.NumPages = (need + g.p.PageSize - 1) / g.p.PageSize
		if err := g.p.Check(); err != nil {
			return fail(fmt.Errorf("N = %d needs %d cache slots of P=%d: %w", g.n, need, g.p.PageSize, err))
		}
	}
	if fam.needs != nil {
		if err := fam.needs(g.p); err != nil {
			return fail(fmt.Errorf("family %s: %w", spec.Family, err))
		}
	}
	if g.lit != nil {
		if err := g.lit.decode(g); err != nil {
			return fail(err)
		}
	}
	return g, fam, nil
}

// outputsOf returns the output list of a configuration: the in-out cache.
func outputsOf(p Params) []difftest.OutputSpec {
	return []difftest.OutputSpec{{Name: NameCache, DType: difftest.U8, Shape: []int{p.NumPages, p.PageBytes()}, InOut: true}}
}

func (g *gen) alloc() {
	g.x = difftest.MustTensor(NameX, difftest.BF16, g.n, g.stride)
	g.w = difftest.MustTensor(NameWeight, difftest.F32, Dim)
	g.b = difftest.MustTensor(NameBias, difftest.F32, Dim)
	g.pos = difftest.MustTensor(NamePositions, difftest.I64, g.n)
	g.loc = difftest.MustTensor(NameOutLoc, difftest.I64, g.n)
}

// defaults fills what most families share: weight 1 + 0.25·N(0,1), bias
// 0.1·N(0,1) (f32, rounded once), positions uniform in [0, max_pos),
// out_loc a random permutation of the slots with about 1/8 holes (never the
// last token), and the padding columns of x with NaN.
func (g *gen) defaults() {
	ws, bs := rng.NewStream(g.key, streamWeight, 0), rng.NewStream(g.key, streamBias, 0)
	for i := 0; i < Dim; i++ {
		g.w.SetF32(i, float32(1+0.25*ws.Normal()))
		g.b.SetF32(i, float32(0.1*bs.Normal()))
	}
	ps := rng.NewStream(g.key, streamPositions, 0)
	for t := 0; t < g.n; t++ {
		g.pos.SetI64(t, int64(ps.Intn(g.maxPos)))
	}
	ls := rng.NewStream(g.key, streamOutLoc, 0)
	perm := ls.Perm(g.p.NumSlots())
	for t := 0; t < g.n; t++ {
		v := int64(-1) // only FamilyLiteral may have fewer slots than tokens
		if t < len(perm) {
			v = int64(perm[t])
		}
		g.loc.SetI64(t, v)
	}
	g.punchHoles()
	for t := 0; t < g.n; t++ {
		for i := Dim; i < g.stride; i++ {
			g.x.SetU16(t*g.stride+i, 0x7FC0)
		}
	}
}

// punchHoles sets out_loc −1 on about 1/8 of the tokens before the last.
func (g *gen) punchHoles() {
	if !g.holes {
		return
	}
	hs := rng.NewStream(g.key, streamOutLoc, 1<<32)
	for t := 0; t < g.n-1; t++ {
		if hs.Intn(8) == 0 {
			g.loc.SetI64(t, -1)
		}
	}
}

// rows calls f for every token row with its own stream, in parallel.
func (g *gen) rows(f func(t int, s *rng.Stream)) {
	forTokens(g.n, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			f(t, rng.NewStream(g.key, streamX, uint64(t)<<32))
		}
	})
}

// FromTensors rebuilds a case from a capture file: params is the JSON of
// Params, tensors holds at least the six inputs under their contract names
// (a "cache" tensor, the canary-filled in-out buffer, is ignored; its
// shape follows from params). Missing tensors and bad params are errors,
// and so is an input of the wrong dtype or shape or beyond the size
// limits (checkShapes): that is decided from the dtypes and shapes alone,
// without reading Data, as difftest.ReadCapture needs.
func FromTensors(id string, params json.RawMessage, tensors map[string]*difftest.Tensor) (*difftest.Case, error) {
	p, err := ParseParams(params)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", id, err)
	}
	c := &difftest.Case{ID: id, Kernel: KernelName, Params: p, Outputs: outputsOf(p)}
	if c.Inputs, err = difftest.CaptureInputs(id, InputNames(), tensors); err != nil {
		return nil, err
	}
	if err := checkShapes(c.Inputs); err != nil {
		return nil, err
	}
	return c, nil
}

// checkShapes checks the dtypes and shapes of the six inputs, in contract
// order, as Validate does but without looking at Data: x bf16 [N,
// x_stride] within checkSizes, weight and bias f32 [128], freqs f32
// [max_pos, 64] within checkMaxPos, positions and out_loc i64 [N].
func checkShapes(in []*difftest.Tensor) error {
	x, w, b, freqs, pos, loc := in[0], in[1], in[2], in[3], in[4], in[5]
	if x.DType != difftest.BF16 || len(x.Shape) != 2 {
		return difftest.Inputf(NameX, nil, "must be BF16 [N, x_stride], got %s%v", x.DType, x.Shape)
	}
	if x.Shape[1] < Dim {
		return difftest.Inputf(NameX, nil, "row stride must be ≥ %d, got shape %v", Dim, x.Shape)
	}
	n := x.Shape[0]
	if err := checkSizes(n, x.Shape[1], NameX, NameX); err != nil {
		return err
	}
	for _, t := range []*difftest.Tensor{w, b} {
		if err := t.CheckShape(difftest.F32, Dim); err != nil {
			return err
		}
	}
	if freqs.DType != difftest.F32 || len(freqs.Shape) != 2 || freqs.Shape[1] != RopeDim {
		return difftest.Inputf(NameFreqs, nil, "must be F32 [max_pos, %d], got %s%v", RopeDim, freqs.DType, freqs.Shape)
	}
	if err := checkMaxPos(freqs.Shape[0], NameFreqs); err != nil {
		return err
	}
	for _, t := range []*difftest.Tensor{pos, loc} {
		if err := t.CheckShape(difftest.I64, n); err != nil {
			return err
		}
	}
	return nil
}
