// Case generation for the pipeline (docs/pipeline.md): the tokens, norm
// weights and RoPE table of stage 1, the page table, the queries and
// weights, and a planted needle per row.

package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/kernels/logits"
	"github.com/kerneldiff/kerneldiff/kernels/normrope"
)

// Philox tensor indices of the generator. Nothing here depends on the
// preset (the store), so an FP8 and a BF16 case drawn with the same key
// have identical tokens, queries, weights and page tables: only the
// stores differ (the needle study relies on it).
const (
	streamTokens  = 0
	streamWeight  = 1
	streamQuery   = 2
	streamWeights = 3
	streamTable   = 4
	streamOutlier = 5 // keys = "outlier": the channels, their signs and per-token factors
)

// Key distributions of the tokens (param keys).
const (
	KeysGaussian = "gaussian"
	KeysOutlier  = "outlier"
)

// Defaults of the outlier key distribution: DefaultOutliers channels at
// DefaultOutlierScale times the other channels' N(0,1).
const (
	DefaultOutliers     = 4
	DefaultOutlierScale = 30.0
)

// poolSize is the number of Gaussian vectors the tokens are drawn from.
const poolSize = 4096

// NewCase draws the case of spec from the Philox streams of key. Suite
// parameters:
//
//	lengths  []int, required: row lengths S_b, each in [1, MaxSeqLen]
//	batch    int, default len(lengths): rows (lengths cycle)
//	preset   string, default "v4": v4 (FP8 keys), v4-bf16 (BF16 keys) or
//	         v4-fp4 (FP4 keys, v4 without the Hadamard transform)
//	K        int, default 512: top-k of stage 3 (the CUDA kernel: 512, 1024, 2048)
//	H        int, default 16: heads, in [1, 64]
//	P        int, default 64: page size, a power of two in [1, 1024]
//	needle   bool, default true: plant a needle at position S_b/3 of each row
//	margin   float, default 3: the needle's exact logit above the K-th largest
//	         other exact logit of its row, in standard deviations of the
//	         row's exact logits (in [−10, 50])
//	exact_margin bool, default false: when the row's own token already
//	         scores above the margin, turn it away from the weighted query
//	         until it sits at the margin (false: the token is kept)
//	keys     string, default "gaussian": the token distribution, gaussian
//	         or outlier (below)
//	outliers int, default 4: outlier channels, in [1, 64] (keys = outlier)
//	outlier_scale float, default 30: their magnitude in units of the other
//	         channels' N(0,1), in [1, 1000] (keys = outlier)
//
// Tokens: 128 bf16 values per position, each a vector of a pool of 4096
// N(0,1) vectors with a random sign per dim; RoPE position = the token's
// position in its row; norm weights 1 + 0.25·N(0,1) (RMSNorm, no bias);
// every row its own pages, shuffled. keys = "outlier" then overwrites, in
// every token, `outliers` channels drawn once per case (stream 5, among
// dims [0, 64), which the v4 layout does not rotate) with s_c·M·(1 + 0.05·g): M = outlier_scale, s_c a sign fixed
// per channel, g ~ N(0,1) per token, as real activations carry a few
// channels tens of times larger than the rest (the other channels and
// every other draw are those of the Gaussian case). Queries N(0,1) (q_exact), weights
// N(0,1)/√H with about 1 in 8 zero (weights_exact); the stage-2 q is
// their e4m3fn quantisation per head with the scale folded into the
// weight (FP8), their bf16 rounding (BF16), or the FP4 quantisation
// of H·q_h (FP4; H the orthonormal Hadamard transform, the weights as
// drawn): the v4-fp4 keys are the v4 keys without the Hadamard, and H·q
// scores them exactly as q scores the v4 keys, so the three stores share
// the exact logits, the needle and the exact top-K. The needle: the row's
// token at S_b/3 is replaced by one whose exact key moves from its own
// direction towards Σ_h max(w_h, 0)·q_h, as little as gives the margin
// (found by bisection on the exact key of the bf16 token; Params.Margins
// records the margin reached, below the one asked when even the full
// turn cannot reach it, above it when the row's own token already
// scores higher: that token is kept unless exact_margin turns it away,
// α < 0). With outlier keys the needle keeps its token's outlier
// channels and the norm of the others: only their direction turns, and
// v is the gradient of the exact logit at the own key, Σ_h w_h·[q_h·z >
// 0]·q_h (the outlier channels decide which heads' ReLU passes).
func NewCase(spec difftest.CaseSpec, seed, key uint64) (*difftest.Case, error) {
	g, err := plan(spec)
	if err != nil {
		return nil, err
	}
	c, err := g.draw(spec.ID(), key)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", spec.ID(), err)
	}
	c.Seed, c.Key, c.Family = seed, key, spec.Family
	return c, nil
}

// CheckSpec returns the error NewCase would return for spec, without
// drawing (difftest.SpecChecker).
func CheckSpec(spec difftest.CaseSpec) error {
	_, err := plan(spec)
	return err
}

type gen struct {
	Params
	lengths []int
	needle  bool
	margin  float64
	exact   bool
	keys    string
	nOut    int
	outMag  float64
}

func plan(spec difftest.CaseSpec) (*gen, error) {
	if spec.Kernel != KernelName {
		return nil, fmt.Errorf("case %s: kernel %q is not %s", spec.ID(), spec.Kernel, KernelName)
	}
	if spec.Family != "needle" {
		return nil, fmt.Errorf("case %s: unknown family %q (known: [needle])", spec.ID(), spec.Family)
	}
	pr := difftest.NewParams(spec.ID(), spec.Params)
	g := &gen{}
	g.Family = spec.Family
	lengths := pr.Ints("lengths", nil)
	batch := pr.Int("batch", len(lengths))
	g.Preset = pr.String("preset", normrope.PresetV4, normrope.PresetV4, normrope.PresetV4BF16, normrope.PresetV4FP4)
	g.K = pr.Int("K", 512)
	g.Heads = pr.Int("H", 16)
	g.PageSize = pr.Int("P", 64)
	g.needle = pr.Bool("needle", true)
	g.margin = pr.Float("margin", 3)
	g.exact = pr.Bool("exact_margin", false)
	g.keys = pr.String("keys", KeysGaussian, KeysGaussian, KeysOutlier)
	g.nOut = pr.Int("outliers", DefaultOutliers)
	g.outMag = pr.Float("outlier_scale", DefaultOutlierScale)
	if err := pr.Err(); err != nil {
		return nil, err
	}
	bad := func(key, format string, args ...any) (*gen, error) {
		return nil, fmt.Errorf("case %s: param %q: %s", spec.ID(), key, fmt.Sprintf(format, args...))
	}
	if len(lengths) == 0 {
		return bad("lengths", "required, at least one length")
	}
	if batch < 1 {
		return bad("batch", "must be ≥ 1, got %d", batch)
	}
	g.Batch = batch
	g.Stride = 1
	for i, L := range lengths {
		if L < 1 || L > MaxSeqLen {
			return bad("lengths", "element %d must be in [1, %d], got %d", i, MaxSeqLen, L)
		}
		g.Stride = max(g.Stride, L)
	}
	if math.IsNaN(g.margin) || g.margin < -10 || g.margin > 50 {
		return bad("margin", "must be in [−10, 50] standard deviations, got %g", g.margin)
	}
	if g.nOut < 1 || g.nOut > 64 {
		return bad("outliers", "must be in [1, 64] channels, got %d", g.nOut)
	}
	if math.IsNaN(g.outMag) || g.outMag < 1 || g.outMag > 1000 {
		return bad("outlier_scale", "must be in [1, 1000] (times the other channels' N(0,1)), got %g", g.outMag)
	}
	// Checked before anything is sized from batch (a batch of 2^40 must
	// be refused, not allocated).
	if err := g.Params.Check(); err != nil {
		var ie *difftest.InputError
		if errors.As(err, &ie) {
			return bad(ie.Tensor, "%s", ie.Rule)
		}
		return nil, err
	}
	g.lengths = make([]int, batch)
	for b := range g.lengths {
		g.lengths[b] = lengths[b%len(lengths)]
	}
	tokens := 0
	for _, L := range g.lengths {
		tokens += L
		g.NumPages += (L + g.PageSize - 1) / g.PageSize
	}
	if tokens > MaxTokens {
		return bad("lengths", "the rows hold %d tokens, more than %d", tokens, MaxTokens)
	}
	g.MaxPages = (g.Stride + g.PageSize - 1) / g.PageSize
	return g, nil
}

// draw generates the tensors.
func (g *gen) draw(id string, key uint64) (*difftest.Case, error) {
	p := &g.Params
	H, P := p.Heads, p.PageSize
	N := 0
	for _, L := range g.lengths {
		N += L
	}
	x := difftest.MustTensor(normrope.NameX, difftest.BF16, N, normrope.Dim)
	w := difftest.MustTensor(normrope.NameWeight, difftest.F32, normrope.Dim)
	bias := difftest.MustTensor(normrope.NameBias, difftest.F32, normrope.Dim)
	pos := difftest.MustTensor(normrope.NamePositions, difftest.I64, N)
	loc := difftest.MustTensor(normrope.NameOutLoc, difftest.I64, N)
	lens := difftest.MustTensor("seq_lens", difftest.I32, p.Batch)
	table := difftest.MustTensor("page_table", difftest.I32, p.Batch, p.MaxPages)
	qExact := difftest.MustTensor(NameQExact, difftest.F32, p.Batch, H, normrope.Dim)
	wExact := difftest.MustTensor(NameWeightsExact, difftest.F32, p.Batch, H)
	freqs, err := normrope.FreqsTable(normrope.ModelV4, p.Stride)
	if err != nil {
		return nil, err
	}
	ft := difftest.MustTensor(normrope.NameFreqs, difftest.F32, p.Stride, normrope.RopeDim)
	for i, v := range freqs {
		ft.SetF32(i, v)
	}
	ws := rng.NewStream(key, streamWeight, 0)
	for i := 0; i < normrope.Dim; i++ {
		w.SetF32(i, float32(1+0.25*ws.Normal()))
	}
	// Page table: every row its own pages, one shuffle over all of them.
	perm := rng.NewStream(key, streamTable, 0).Perm(p.NumPages)
	u := 0
	for b, L := range g.lengths {
		lens.SetI32(b, int32(L))
		for j := 0; j < p.MaxPages; j++ {
			id := int32(-1)
			if j < (L+P-1)/P {
				id = int32(perm[u])
				u++
			}
			table.SetI32(b*p.MaxPages+j, id)
		}
	}
	// Tokens from a pool of Gaussian vectors with random signs.
	pool := make([][normrope.Dim]uint16, min(poolSize, N))
	for i := range pool {
		st := rng.NewStream(key, streamTokens, uint64(i)<<32|1<<63)
		for d := range pool[i] {
			pool[i][d] = numeric.BF16FromF64(st.Normal())
		}
	}
	t := 0
	for b, L := range g.lengths {
		st := rng.NewStream(key, streamTokens, uint64(b)<<32)
		for s := 0; s < L; s++ {
			v := &pool[st.Intn(len(pool))]
			for k := 0; k < normrope.Dim/32; k++ {
				signs := st.Uint32()
				for i := 0; i < 32; i++ {
					x.SetU16(t*normrope.Dim+32*k+i, v[32*k+i]^uint16(signs>>i&1)<<15)
				}
			}
			pos.SetI64(t, int64(s))
			id := int64(table.I32(b*p.MaxPages + s/P))
			loc.SetI64(t, id*int64(P)+int64(s%P))
			t++
		}
	}
	if g.keys == KeysOutlier {
		g.outliers(key, x)
	}
	// Queries and weights, exact and as stage 2 takes them.
	for b := 0; b < p.Batch; b++ {
		qs := rng.NewStream(key, streamQuery, uint64(b)<<32)
		wst := rng.NewStream(key, streamWeights, uint64(b)<<32)
		for h := 0; h < H; h++ {
			for d := 0; d < normrope.Dim; d++ {
				qExact.SetF32((b*H+h)*normrope.Dim+d, float32(qs.Normal()))
			}
			wt := float32(wst.Normal() / math.Sqrt(float64(H)))
			if wst.Intn(8) == 0 {
				wt = 0
			}
			wExact.SetF32(b*H+h, wt)
		}
	}
	c := &difftest.Case{ID: id, Kernel: KernelName, Params: *p,
		Inputs: []*difftest.Tensor{x, w, bias, ft, pos, loc, nil, nil, lens, table, qExact, wExact}}
	c.Inputs[6], c.Inputs[7] = quantise(p, qExact, wExact)
	if g.needle {
		if err := g.plant(c, key); err != nil {
			return nil, err
		}
	}
	c.Params = *p
	c.Outputs = outputsOf(*p)
	return c, nil
}

// quantise returns stage 2's q and weights: FP8, per (row, head) e4m3fn
// codes of q/s with s = amax/448 and the weight times s (f32); BF16, the
// bf16 rounding of q and the weights as they are; FP4, per (row, head)
// the 68-byte FP4 query of H·q (logits.PackFP4: e2m1 codes under one
// ue8m0 scale per 32 values) and the weights as they are.
func quantise(p *Params, qExact, wExact *difftest.Tensor) (q, w *difftest.Tensor) {
	H := p.Heads
	w = difftest.MustTensor("weights", difftest.F32, p.Batch, H)
	if p.Store() == "fp4" {
		q = difftest.MustTensor("q", difftest.U8, p.Batch, H, logits.FP4TokenBytes)
		for bh := 0; bh < p.Batch*H; bh++ {
			var v [normrope.Dim]float64
			for d := range v {
				v[d] = float64(qExact.F32(bh*normrope.Dim + d))
			}
			hadamard(&v)
			logits.PackFP4(&v, q.Data[bh*logits.FP4TokenBytes:(bh+1)*logits.FP4TokenBytes])
		}
		copy(w.Data, wExact.Data)
		return q, w
	}
	if p.Store() == "bf16" {
		q = difftest.MustTensor("q", difftest.BF16, p.Batch, H, normrope.Dim)
		for i := 0; i < q.Len(); i++ {
			q.SetU16(i, numeric.BF16FromF32(qExact.F32(i)))
		}
		copy(w.Data, wExact.Data)
		return q, w
	}
	q = difftest.MustTensor("q", difftest.U8, p.Batch, H, normrope.Dim)
	for bh := 0; bh < p.Batch*H; bh++ {
		amax := 0.0
		for d := 0; d < normrope.Dim; d++ {
			amax = math.Max(amax, math.Abs(float64(qExact.F32(bh*normrope.Dim+d))))
		}
		s := amax / numeric.E4M3Max
		if s == 0 {
			s = 1
		}
		for d := 0; d < normrope.Dim; d++ {
			q.Data[bh*normrope.Dim+d] = numeric.E4M3FromF64(float64(qExact.F32(bh*normrope.Dim+d)) / s)
		}
		w.SetF32(bh, float32(float64(wExact.F32(bh))*s))
	}
	return q, w
}

// outputsOf declares the pipeline's outputs: stage 3's page_indices and
// raw_indices, i32 [B, K] (what Kernel.Reference computes; a chained run
// reports the stages instead).
func outputsOf(p Params) []difftest.OutputSpec {
	return []difftest.OutputSpec{
		{Name: "page_indices", DType: difftest.I32, Shape: []int{p.Batch, p.K}},
		{Name: "raw_indices", DType: difftest.I32, Shape: []int{p.Batch, p.K}},
	}
}

// exactLogits returns, per position s < L_b of row b, the exact logit
// Σ_h w_h·max(q_h·z, 0) of the f64 key z, from q_exact and weights_exact.
func exactLogits(c *difftest.Case, z [][normrope.Dim]float64) [][]float64 {
	p, _ := paramsOf(c)
	q, w, lens := c.Input(NameQExact), c.Input(NameWeightsExact), c.Input("seq_lens")
	H := p.Heads
	out := make([][]float64, p.Batch)
	t := 0
	for b := 0; b < p.Batch; b++ {
		L := int(lens.I32(b))
		qs := make([][normrope.Dim]float64, H)
		for h := range qs {
			for d := range qs[h] {
				qs[h][d] = float64(q.F32((b*H+h)*normrope.Dim + d))
			}
		}
		out[b] = make([]float64, L)
		for s := 0; s < L; s++ {
			out[b][s] = logitOf(qs, w, b, H, &z[t])
			t++
		}
	}
	return out
}

func logitOf(qs [][normrope.Dim]float64, w *difftest.Tensor, b, H int, z *[normrope.Dim]float64) float64 {
	var S float64
	for h := range qs {
		var d float64
		for i, v := range z {
			d += float64(qs[h][i] * v)
		}
		S += float64(float64(w.F32(b*H+h)) * math.Max(d, 0))
	}
	return S
}

// plant replaces the token at S_b/3 of each row by a needle (see NewCase)
// and records the needles and the margins reached.
func (g *gen) plant(c *difftest.Case, key uint64) error {
	p := &g.Params
	var chans []int
	if g.keys == KeysOutlier {
		chans, _ = g.outlierChannels(key)
	}
	z, err := exactKeys(c)
	if err != nil {
		return err
	}
	exact := exactLogits(c, z)
	x, w, freqs, qe, we := c.Input(normrope.NameX), c.Input(normrope.NameWeight), c.Input(normrope.NameFreqs), c.Input(NameQExact), c.Input(NameWeightsExact)
	H := p.Heads
	p.Needles = make([]int, p.Batch)
	p.Margins = make([]float64, p.Batch)
	t0 := 0
	for b, L := range g.lengths {
		ns := L / 3
		p.Needles[b] = ns
		others := append(append([]float64(nil), exact[b][:ns]...), exact[b][ns+1:]...)
		thr, sigma := threshold(others, p.K)
		target := thr + g.margin*sigma
		qs := make([][normrope.Dim]float64, H)
		var v [normrope.Dim]float64
		for h := range qs {
			for d := range qs[h] {
				qs[h][d] = float64(qe.F32((b*H+h)*normrope.Dim + d))
				v[d] += math.Max(float64(we.F32(b*H+h)), 0) * qs[h][d]
			}
		}
		zo := z[t0+ns]
		if len(chans) > 0 {
			// Outlier keys: the outlier channels decide which heads'
			// ReLU passes, so v is the gradient of the exact logit at
			// the row's best-scoring key z*, Σ_h w_h·[q_h·z* > 0]·q_h.
			best := 0
			for s := range exact[b] {
				if s != ns && (best == ns || exact[b][s] > exact[b][best]) {
					best = s
				}
			}
			zb := z[t0+best]
			v = [normrope.Dim]float64{}
			for h := range qs {
				var dot float64
				for d := range qs[h] {
					dot += qs[h][d] * zb[d]
				}
				if dot > 0 {
					for d := range qs[h] {
						v[d] += float64(we.F32(b*H+h)) * qs[h][d]
					}
				}
			}
		}
		cs := make([]float32, normrope.RopeDim)
		for k := range cs {
			cs[k] = freqs.F32(ns*normrope.RopeDim + k)
		}
		var orig [normrope.Dim]uint16
		for d := range orig {
			orig[d] = x.U16((t0+ns)*normrope.Dim + d)
		}
		try := func(alpha float64) ([normrope.Dim]uint16, float64, error) {
			tok := needleToken(&zo, &v, alpha, w, cs, &orig, chans)
			zk, err := keyOf(tok, w, cs, p.PageSize, p.KeyPreset())
			if err != nil {
				return tok, 0, err
			}
			return tok, logitOf(qs, we, b, H, &zk), nil
		}
		lo, hi := 0.0, 1.0
		tok, f, err := try(hi)
		if err != nil {
			return err
		}
		if g.exact && f > target {
			// The own token may already score above the margin: then
			// bisect on [−1, 0], turning it away from v.
			t0k, f0, err := try(0)
			if err != nil {
				return err
			}
			if f0 > target {
				lo, hi, tok, f = -1, 0, t0k, f0
				if _, fl, err := try(lo); err != nil {
					return err
				} else if fl >= target {
					lo = hi // even the turn away stays above: keep the token
				}
			}
		}
		if f > target && lo < hi {
			for it := 0; it < 32; it++ { // α to 2^-32
				mid := (lo + hi) / 2
				tm, fm, err := try(mid)
				if err != nil {
					return err
				}
				if fm >= target {
					hi, tok, f = mid, tm, fm
				} else {
					lo = mid
				}
			}
		}
		for d, bits := range tok {
			x.SetU16((t0+ns)*normrope.Dim+d, bits)
		}
		p.Margins[b] = 0
		if sigma > 0 {
			p.Margins[b] = (f - thr) / sigma
		}
		t0 += L
	}
	return nil
}

// threshold returns the K-th largest of vs (the largest when there are
// fewer than K) and the standard deviation of vs.
func threshold(vs []float64, K int) (thr, sigma float64) {
	if len(vs) == 0 {
		return 0, 0
	}
	s := append([]float64(nil), vs...)
	sort.Sort(sort.Reverse(sort.Float64Slice(s)))
	thr = s[0]
	if len(s) >= K {
		thr = s[K-1]
	}
	var mean float64
	for _, v := range s {
		mean += v
	}
	mean /= float64(len(s))
	for _, v := range s {
		sigma += (v - mean) * (v - mean)
	}
	return thr, math.Sqrt(sigma / float64(len(s)))
}

// needleToken returns the bf16 token whose key points along (1 − α)·ẑ +
// α·v̂ (unit vectors of the original key and of v): the key direction
// mapped back through the Hadamard transform (its own inverse), the
// inverse RoPE rotation of the v4 layout (interleaved pairs on dims
// [64, 128)) and the norm weights; RMSNorm makes the token's scale free.
// With outlier channels (chans), the token keeps orig's values there and
// the other channels are scaled to orig's norm over them: only their
// direction turns.
func needleToken(zo, v *[normrope.Dim]float64, alpha float64, w *difftest.Tensor, cs []float32, orig *[normrope.Dim]uint16, chans []int) [normrope.Dim]uint16 {
	nz, nv := norm(zo), norm(v)
	var y [normrope.Dim]float64
	for i := range y {
		y[i] = (1-alpha)*zo[i]/nz + alpha*v[i]/nv
	}
	hadamard(&y)
	for j := 0; j < normrope.RopeDim/2; j++ {
		ia, ib := 64+2*j, 64+2*j+1
		c, s := float64(cs[2*j]), float64(cs[2*j+1])
		a, b := y[ia], y[ib]
		y[ia], y[ib] = a*c+b*s, -a*s+b*c
	}
	var tv [normrope.Dim]float64
	for i := range y {
		wi := float64(w.F32(i))
		if math.Abs(wi) < 1e-3 {
			wi = math.Copysign(1e-3, wi)
		}
		tv[i] = y[i] / wi
	}
	if len(chans) > 0 {
		out := map[int]bool{}
		for _, c := range chans {
			out[c] = true
		}
		var nNew, nOld float64
		for i := range tv {
			if !out[i] {
				o := numeric.BF16ToF64(orig[i])
				nNew, nOld = nNew+tv[i]*tv[i], nOld+o*o
			}
		}
		f := 0.0
		if nNew > 0 {
			f = math.Sqrt(nOld / nNew)
		}
		for i := range tv {
			tv[i] *= f
		}
		for _, c := range chans {
			tv[c] = numeric.BF16ToF64(orig[c])
		}
	}
	var tok [normrope.Dim]uint16
	for i := range tv {
		tok[i] = numeric.BF16FromF64(tv[i])
	}
	return tok
}

func norm(v *[normrope.Dim]float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	if s == 0 {
		return 1
	}
	return math.Sqrt(s)
}

// hadamard is the orthonormal 128-point Walsh–Hadamard transform in
// natural order (its own inverse), as norm_rope_store applies it.
func hadamard(y *[normrope.Dim]float64) {
	for h := 1; h < normrope.Dim; h *= 2 {
		for i := 0; i < normrope.Dim; i += 2 * h {
			for j := i; j < i+h; j++ {
				y[j], y[j+h] = y[j]+y[j+h], y[j]-y[j+h]
			}
		}
	}
	for i := range y {
		y[i] /= math.Sqrt(normrope.Dim)
	}
}

// keyOf returns the exact key norm_rope_store's reference gives one token
// at the RoPE row cs, through a one-token case.
func keyOf(tok [normrope.Dim]uint16, w *difftest.Tensor, cs []float32, P int, preset string) ([normrope.Dim]float64, error) {
	x := difftest.MustTensor(normrope.NameX, difftest.BF16, 1, normrope.Dim)
	for d, b := range tok {
		x.SetU16(d, b)
	}
	f := difftest.MustTensor(normrope.NameFreqs, difftest.F32, 1, normrope.RopeDim)
	for k, v := range cs {
		f.SetF32(k, v)
	}
	np, _ := normrope.Preset(preset, P)
	raw, _ := json.Marshal(np)
	c, err := normrope.FromTensors("needle", raw, map[string]*difftest.Tensor{
		normrope.NameX: x, normrope.NameWeight: w, normrope.NameBias: difftest.MustTensor(normrope.NameBias, difftest.F32, normrope.Dim),
		normrope.NameFreqs: f, normrope.NamePositions: difftest.MustTensor(normrope.NamePositions, difftest.I64, 1),
		normrope.NameOutLoc: difftest.MustTensor(normrope.NameOutLoc, difftest.I64, 1),
	})
	if err != nil {
		return [normrope.Dim]float64{}, err
	}
	z, err := normrope.ExactKeys(c)
	if err != nil {
		return [normrope.Dim]float64{}, err
	}
	return z[0], nil
}

// outlierChannels returns the case's outlier channels (sorted) and their
// signs (±1), drawn once per case from stream streamOutlier.
func (g *gen) outlierChannels(key uint64) ([]int, []float64) {
	st := rng.NewStream(key, streamOutlier, 0)
	ch := st.Perm(normrope.Dim - normrope.RopeDim)[:g.nOut] // dims [0, 64): the v4 layout rotates [64, 128)
	sort.Ints(ch)
	sg := make([]float64, len(ch))
	for i := range sg {
		sg[i] = 1
		if st.Uint32()&1 == 1 {
			sg[i] = -1
		}
	}
	return ch, sg
}

// outliers overwrites the outlier channels of every token of x with
// s_c·M·(1 + 0.05·g) (see NewCase), g drawn per token from stream
// streamOutlier, block 1 + row.
func (g *gen) outliers(key uint64, x *difftest.Tensor) {
	ch, sg := g.outlierChannels(key)
	t := 0
	for b, L := range g.lengths {
		st := rng.NewStream(key, streamOutlier, uint64(b+1)<<32)
		for s := 0; s < L; s++ {
			for i, c := range ch {
				x.SetU16(t*normrope.Dim+c, numeric.BF16FromF64(sg[i]*g.outMag*(1+0.05*st.Normal())))
			}
			t++
		}
	}
}
