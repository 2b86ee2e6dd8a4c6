// Input families of norm_rope_store (docs/contracts/norm_rope_store.md, "Input families"). Each
// draws x (and, where the family needs it, weight, positions or out_loc)
// from Philox streams keyed by the case key, one stream per token row.

package normrope

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// family is one input family.
type family struct {
	doc string
	// dontCareOK marks the families whose point is don't-care tokens
	// (NaN/inf inputs, overflowing sums): a case of theirs may have every
	// written token don't care and still checks the canaries (Validate's
	// coverage rule, Check's warning).
	dontCareOK bool
	maxPos     func(Params) int   // default max_pos
	slots      func(n, p int) int // cache slots the family needs for n tokens at page size p
	needs      func(Params) error // configuration the family requires, or nil
	fill       func(g *gen)       // draws the family's inputs over the defaults
}

func defaultMaxPos(Params) int { return 4096 }

// defaultSlots leaves max(1, N/8) slots unused so canaries sit between
// written slots.
func defaultSlots(n, _ int) int { return n + max(1, n/8) }

var families = map[string]family{
	FamilyLiteral: {dontCareOK: true, slots: literalSlots, doc: "the inputs written out in the entry (difftest shrink writes these): x as bf16 bits, weight, bias and freqs as f32 bits, positions and out_loc as integers", fill: fillLiteral},
	"gaussian":    {doc: "x ~ N(0, σ²), σ = 2^k per token, k uniform in [−4, 4]", fill: fillGaussian},
	"zero":        {doc: "every x is +0 (rms: z = 0, the scale floor decides)", fill: func(g *gen) {}},
	"constant": {doc: "each token one value c ≠ 0 repeated, |c| = 2^k·N(0,1), k in [−20, 20] (layer: variance 0, y = bias)", fill: func(g *gen) {
		g.rows(func(t int, s *rng.Stream) {
			c := math.Ldexp(s.Normal(), s.Intn(41)-20)
			if numeric.BF16ToF64(numeric.BF16FromF64(c)) == 0 {
				c = 1
			}
			for i := 0; i < Dim; i++ {
				g.setX(t, i, c)
			}
		})
	}},
	"outlier": {doc: "N(0,1) with one dim at ±2^k, k in [12, 20]: the norm and amax follow one value", fill: func(g *gen) {
		g.rows(func(t int, s *rng.Stream) {
			for i := 0; i < Dim; i++ {
				g.setX(t, i, s.Normal())
			}
			big := math.Ldexp(1, 12+s.Intn(9))
			if s.Intn(2) == 1 {
				big = -big
			}
			g.setX(t, s.Intn(Dim), big)
		})
	}},
	"bf16-max": {dontCareOK: true, doc: "tokens by t mod 4: all ±bf16 max (f32 Σx² overflows: don't care), N(0,1) with one ±bf16 max (don't care), N(0,1)·2^56 (large, Σx² fits), N(0,1)", fill: func(g *gen) {
		maxBF16 := numeric.BF16ToF64(0x7F7F)
		g.rows(func(t int, s *rng.Stream) {
			for i := 0; i < Dim; i++ {
				switch t % 4 {
				case 0:
					v := maxBF16
					if s.Intn(2) == 1 {
						v = -v
					}
					g.setX(t, i, v)
				case 2:
					g.setX(t, i, math.Ldexp(s.Normal(), 56))
				default:
					g.setX(t, i, s.Normal())
				}
			}
			if t%4 == 1 {
				g.setX(t, s.Intn(Dim), -maxBF16)
			}
		})
	}},
	"nonfinite": {dontCareOK: true, doc: "N(0,1); about 1 token in 4 gets 1–3 of ±inf, ±qNaN, ±sNaN (don't care); the rest are checked", fill: func(g *gen) {
		sp := nonFiniteBF16()
		g.rows(func(t int, s *rng.Stream) {
			for i := 0; i < Dim; i++ {
				g.setX(t, i, s.Normal())
			}
			if s.Intn(4) == 0 {
				for k := 1 + s.Intn(3); k > 0; k-- {
					g.x.SetU16(t*g.stride+s.Intn(Dim), sp[s.Intn(len(sp))])
				}
			}
		})
	}},
	"e4m3-midpoint": {
		doc: "rms, no Hadamard, FP8 plain, position 0: one dim ±448 sets the scale to r, so z/scale = x·w exactly; the other dims hold e4m3 midpoints " +
			"(weight 1: ties both neighbours may take after the norm's rounding) or midpoints·(1 ± 2^-12) (weights 1 ± 2^-12: decided, and within f16's half ULP, so f32→f16→e4m3 rounds the other way)",
		needs: needsPlainDirect(false),
		fill: func(g *gen) {
			for i := 0; i < Dim; i++ {
				w := 1.0
				switch {
				case i >= 96:
					w = 1 - 0x1p-12
				case i >= 64:
					w = 1 + 0x1p-12
				}
				g.w.SetF32(i, float32(w))
				g.b.SetF32(i, 0)
			}
			g.zeroPositions()
			g.rows(func(t int, s *rng.Stream) {
				for i := 0; i < Dim; i++ {
					c := uint8(s.Intn(0x7E)) // c and c+1 finite: c ≤ 0x7D
					mid := (float64(numeric.E4M3ToF32(c)) + float64(numeric.E4M3ToF32(c+1))) / 2
					if s.Intn(2) == 1 {
						mid = -mid
					}
					g.setX(t, i, mid)
				}
				v := 448.0
				if s.Intn(2) == 1 {
					v = -v
				}
				g.setX(t, s.Intn(64), v)
			})
		},
	},
	"e4m3-max": {
		doc: "rms, no Hadamard, FP8 (plain or ue8m0), position 0: token t's largest value, dim t mod 128, is tuned by its weight to amax = 448·2^k·(1+δ), " +
			"k per case in [−8, 3], δ by t mod 4 in {0, 2^-9, −2^-9, 2^-6}: plain scales put it exactly on 448, ue8m0 scales sit on, just above or just below a power of two",
		needs: needsPlainDirect(true),
		fill: func(g *gen) {
			plan := rng.NewStream(g.key, streamPlan, 0)
			k := plan.Intn(12) - 8
			for i := 0; i < Dim; i++ {
				// Untuned dims (N < 128) get half a typical tuned weight,
				// r ≈ 1/sqrt(64²/128 + 0.25), so they never hold the amax.
				g.w.SetF32(i, float32(numeric.E4M3Max*math.Ldexp(0.5, k)/(64*0.176)))
				g.b.SetF32(i, 0)
			}
			g.zeroPositions()
			// Rows repeat with period 128 so that each dim's weight serves
			// tokens with identical rows.
			var rows [Dim][Dim]float64
			for r := 0; r < Dim && r < g.n; r++ {
				s := rng.NewStream(g.key, streamX, uint64(r)<<32)
				for i := range rows[r] {
					rows[r][i] = numeric.BF16ToF64(numeric.BF16FromF64(0.5 * s.Normal()))
				}
				big := 64.0
				if s.Intn(2) == 1 {
					big = -big
				}
				rows[r][r] = big
				var ss float64
				for _, v := range rows[r] {
					ss += float64(v * v)
				}
				rr := 1 / math.Sqrt(ss/Dim+float64(g.p.Eps))
				delta := []float64{0, 0x1p-9, -0x1p-9, 0x1p-6}[r%4]
				target := numeric.E4M3Max * math.Ldexp(1+delta, k)
				g.w.SetF32(r, float32(target/(64*rr)))
			}
			for t := 0; t < g.n; t++ {
				for i := 0; i < Dim; i++ {
					g.setX(t, i, rows[t%Dim][i])
				}
			}
		},
	},
	"large-mean": {
		doc: "|mean| ≫ std, LayerNorm's hard case: each token a bf16 centre |c| in [2^8, 2^15) with a few dims one bf16 step (ulp) off, " +
			"|mean|/std about 2^7 to 2^11: a one-pass variance E[x²] − mean² in f32 cancels away, a two-pass one does not",
		fill: fillLargeMean,
	},
	"positions": {
		doc:    "N(0,1); positions cycle 0, max_pos−1, uniform: the table's first and last rows with real YaRN tables",
		maxPos: func(p Params) int { return map[string]int{ModelV32: 163840, ModelV4: 262144}[p.Model] },
		fill: func(g *gen) {
			fillGaussian(g)
			for t := 0; t < g.n; t++ {
				switch t % 3 {
				case 0:
					g.pos.SetI64(t, 0)
				case 1:
					g.pos.SetI64(t, int64(g.maxPos-1))
				}
			}
		},
	},
	"slots": {
		doc:   "N(0,1); token pairs straddle adjacent pages: offset P−1 of page 2i and offset 0 of page 2i+1, pairs in random order, with −1 holes",
		slots: func(n, p int) int { return (2*((n+1)/2) + 1) * p },
		fill: func(g *gen) {
			fillGaussian(g)
			pairs := (g.n + 1) / 2
			perm := rng.NewStream(g.key, streamPlan, 0).Perm(pairs)
			P := g.p.PageSize
			for t := 0; t < g.n; t++ {
				page := 2 * perm[t/2]
				slot := page*P + P - 1
				if t%2 == 1 {
					slot = (page + 1) * P
				}
				g.loc.SetI64(t, int64(slot))
			}
			g.punchHoles()
		},
	},
}

func init() {
	for name, f := range families {
		if f.maxPos == nil {
			f.maxPos = defaultMaxPos
		}
		if f.slots == nil {
			f.slots = defaultSlots
		}
		families[name] = f
	}
}

// fillGaussian draws x ~ N(0, σ²) with σ = 2^k per token, k uniform in
// [−4, 4], so tokens span several binades.
func fillGaussian(g *gen) {
	g.rows(func(t int, s *rng.Stream) {
		sigma := math.Ldexp(1, s.Intn(9)-4)
		for i := 0; i < Dim; i++ {
			g.setX(t, i, sigma*s.Normal())
		}
	})
}

// fillLargeMean draws the "large-mean" family: per token a bf16 centre
// c = ±2^e·(1 + m/128), e uniform in [8, 14], m in [0, 126], and 128
// values c + k_i·ulp, ulp = 2^(e−7) the bf16 spacing at c, with k_i = ±1
// with probability 2^-q (q per token uniform in [1, 6]) and 0 otherwise;
// one dim chosen at random always gets ±1, so the variance is never 0.
// The standard deviation is then about ulp·2^(−q/2), |mean|/std about 2^7
// to 2^11. A LayerNorm whose variance is E[x²] − mean² in f32 loses the
// variance to the rounding of mean² (and, for e ≥ 11, of Σx²): its error
// grows as (|mean|/std)², the derived bound only as |mean|/std.
func fillLargeMean(g *gen) {
	g.rows(func(t int, s *rng.Stream) {
		e := 8 + s.Intn(7)
		c := math.Ldexp(1+float64(s.Intn(127))/128, e)
		if s.Intn(2) == 1 {
			c = -c
		}
		ulp := math.Ldexp(1, e-7)
		q := 1 + s.Intn(6)
		for i := 0; i < Dim; i++ {
			v := c
			if s.Intn(1<<q) == 0 {
				v += ulp * float64(2*s.Intn(2)-1)
			}
			g.setX(t, i, v)
		}
		g.setX(t, s.Intn(Dim), c+ulp*float64(2*s.Intn(2)-1))
	})
}

// Families returns the input family names, sorted: bf16-max, constant,
// e4m3-max, e4m3-midpoint, gaussian, large-mean, nonfinite, outlier,
// positions, slots, zero. FamilyDoc describes each.
func Families() []string { return slices.Sorted(maps.Keys(families)) }

// FamilyDoc returns a one-line description of an input family, or "" for
// an unknown name.
func FamilyDoc(name string) string { return families[name].doc }

// setX stores bf16_rne(v) at x[t][i].
func (g *gen) setX(t, i int, v float64) { g.x.SetU16(t*g.stride+i, numeric.BF16FromF64(v)) }

func (g *gen) zeroPositions() {
	for t := 0; t < g.n; t++ {
		g.pos.SetI64(t, 0)
	}
}

// needsPlainDirect returns the requirement of the constructed FP8 families:
// RMSNorm (no bias, no mean), no Hadamard (z = y), the FP8 store, and the
// plain scale unless ue8m0 is allowed.
func needsPlainDirect(ue8m0OK bool) func(Params) error {
	return func(p Params) error {
		if err := needsDirect(p, StoreFP8); err != nil {
			return err
		}
		if !ue8m0OK && p.ScaleFmt != ScalePlain {
			return errors.New(`needs scale_fmt = "plain" (the scale must equal amax/448 for z/scale to land on midpoints)`)
		}
		return nil
	}
}

// needsDirect is the requirement of a constructed family that places its
// values in the cache directly: RMSNorm, no Hadamard (z = y), and store.
func needsDirect(p Params, store string) error {
	switch {
	case p.Norm != NormRMS:
		return errors.New(`needs norm = "rms"`)
	case p.Hadamard:
		return errors.New("needs hadamard = false (its values are placed through the identity RoPE of position 0 without a transform)")
	case p.Store != store:
		return fmt.Errorf("needs store = %q", store)
	}
	return nil
}

// nonFiniteBF16 returns the non-finite patterns of rng.SpecialsBF16, in
// its order: ±inf (0x7F80, 0xFF80), ±quiet NaN (0x7FC0, 0xFFC0), ±signalling
// NaN (0x7FA0, 0xFFA0).
func nonFiniteBF16() []uint16 { return rng.SpecialsBF16()[10:16] }
