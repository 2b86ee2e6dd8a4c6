// The input families of topk_transform (docs/contracts/topk_transform.md "Input families"),
// each with the bug or edge class it guards. Every family draws row b from
// its own Philox stream (rng.NewStream(key, 0, b<<32)); values are built
// from bit patterns or single f32 roundings of f64 draws, so they do not
// depend on how Go was built.

package topk

import (
	"math"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// families is the catalog. Names are short and stable: they appear in
// case ids and suite files.
var families = []family{
	// gaussian: N(0, 1) scores rounded once to f32. The baseline; with the
	// lengths sweep (0, 1, K−1, K, K+1, 2K, P±1, 8191–8193, …, 262144
	// mixed in one launch) it guards short-row handling, off-by-one
	// lengths and reads past L.
	{name: "gaussian", row: rowGaussian},
	// needle: Gaussian noise with one planted maximum (max + 1) at
	// position L/3. Guards the long-context recall loss of docs/architecture.md:
	// the top-k must keep the needle at every length.
	{name: "needle", needle: true, row: rowNeedle},
	// equal: every score of a row is the same value (drawn per row). Any K
	// positions are valid; guards tie holes and duplicates on a plateau.
	{name: "equal", row: rowEqual},
	// straddle: `above` distinct values above 1.0, `tied` values exactly
	// 1.0, the rest below, at random positions; with the defaults the K-th
	// value sits inside the tie band. Defaults, per row of length L: above
	// = min(3K/4, L), tied = min(K/2, L − above). Explicit values must be
	// ≥ 0 with above + tied ≤ every row's length. Guards tie-hole and
	// dup-on-plateau kernels and "every pick ≥ the K-th" checkers.
	{name: "straddle", params: paramsStraddle, check: checkStraddle, row: rowStraddle},
	// relu: `positives` values > 0 at random positions, the rest exact
	// +0.0, like ReLU-ed indexer logits (e.g. L = 8320, K = 2048): the
	// threshold bin holds almost the whole row. Default min(100, L) per
	// row; an explicit value must be in [0, every row's length].
	{name: "relu", params: paramsReLU, check: checkReLU, row: rowReLU},
	// lowcontrast: L distinct values, evenly spaced bit patterns in random
	// order, within one narrow band (span): "coarse" [1.0, 1.25) (one fp16
	// coarse bin), "high" ≥ 65520 (fp16 +inf), "tiny" [0, 1.5e-5) (fp16
	// subnormals). Guards fixed candidate buffers that overflow and
	// selection on fp16-rounded keys.
	// Every row length must be at most the band's number of f32 values.
	{name: "lowcontrast", params: paramsLowContrast, check: checkLowContrast, row: rowLowContrast},
	// masked: only `finite` Gaussian values, the rest −inf, as causal or
	// padding masks leave them. The −inf positions are valid picks; guards
	// −FLT_MAX padding sentinels and −inf emitted as −1. Default min(K/2,
	// L) per row; an explicit value must be in [0, every row's length].
	{name: "masked", params: paramsMasked, check: checkMasked, row: rowMasked},
	// specials: Gaussian values with a quarter of the positions replaced by
	// rng.SpecialsF32 (±0, subnormals, ±FLT_MAX, ±inf, quiet and
	// signalling NaN of both signs). Guards key32 order (−0 < +0, NaN sign)
	// and NaN-dependent index garbage.
	{name: "specials", row: rowSpecials},
	// pseudotie: `above` values above the band at random positions, every
	// other position a value of the `band`, a set of values that a float
	// comparison (or a flush-to-zero or NaN-canonicalizing load) treats as
	// ties but key32 ranks apart, so the K-th value falls inside the band
	// when above < K < L (rowPseudoTie). Bands and the kernel bug each
	// guards:
	//   zeros       −0 and +0 interleaved (coin flip each); above values
	//               0.5 + |z|. Guards selection by `>`/`<` on floats
	//               (−0 == +0, ties by position), which key32 orders
	//               −0 < +0.
	//   subnormals  +0, −0, +subnormal, −subnormal (a quarter each, random
	//               mantissas); above values 0.5 + |z|. Guards
	//               flush-to-zero loads (−ftz, denormals-are-zero), which
	//               tie a subnormal with the zero of its sign.
	//   nans        +NaN and −NaN with random payloads (quiet and
	//               signalling); above values N(0, 1). Guards
	//               NaN-canonicalizing loads (any arithmetic on a NaN
	//               returns the canonical NaN on NVIDIA GPUs), which tie
	//               NaNs of one sign that key32 orders by payload.
	// With the default above = min(K/2, L): for zeros the K-th is −0 when
	// K < L < 1.5K and +0 beyond; for subnormals it moves from the
	// −subnormals (L ≈ K) through −0, +0 to the +subnormals (L ≥ 2.5K);
	// for nans it lies among the −NaNs for L < 1.5K and among the +NaNs
	// for L ≥ 2.5K. An explicit above must be in [0, every row's length].
	{name: "pseudotie", params: paramsPseudoTie, check: checkPseudoTie, row: rowPseudoTie},
	// literal: the inputs themselves, written in the suite entry (a case
	// `difftest shrink` reduced, which no generator draws); see
	// literal.go.
	{name: FamilyLiteral, params: paramsLiteral, check: checkLiteral, row: rowLiteral, literal: applyLiteral},
}

// f32 rounds an f64 draw once to f32 and returns its bits.
func f32(x float64) uint32 { return math.Float32bits(float32(x)) }

func rowGaussian(_ *genConfig, st *rng.Stream, dst []uint32) int {
	for i := range dst {
		dst[i] = f32(st.Normal())
	}
	return -1
}

func rowNeedle(g *genConfig, st *rng.Stream, dst []uint32) int {
	if len(dst) == 0 {
		return -1
	}
	rowGaussian(g, st, dst)
	top := float32(math.Inf(-1))
	for _, b := range dst {
		top = max(top, math.Float32frombits(b))
	}
	at := len(dst) / 3
	dst[at] = math.Float32bits(top + 1) // |top| ≤ 6.66, so top + 1 > top
	return at
}

func rowEqual(_ *genConfig, st *rng.Stream, dst []uint32) int {
	v := f32(st.Normal())
	for i := range dst {
		dst[i] = v
	}
	return -1
}

func paramsStraddle(pr *difftest.Params, g *genConfig) {
	g.above = pr.Int("above", unset)
	g.tied = pr.Int("tied", unset)
}

// straddleCounts returns the above and tied counts of a row of length L.
func (g *genConfig) straddleCounts(L int) (above, tied int) {
	above, tied = g.above, g.tied
	if above == unset {
		above = min(3*g.K/4, L)
	}
	if tied == unset {
		tied = min(g.K/2, L-above)
	}
	return above, tied
}

func checkStraddle(g *genConfig) error {
	if err := g.checkCount("above", g.above, wholeRow, "above values must fit in every row"); err != nil {
		return err
	}
	return g.checkCount("tied", g.tied, func(L int) int {
		above, _ := g.straddleCounts(L)
		return L - above
	}, "above + tied values must fit in every row")
}

// rowStraddle: above values 2 + |z| (> 1), tied values exactly 1.0, the
// rest 0.1·z (|0.1·z| ≤ 0.67 < 1), placed by a random permutation.
func rowStraddle(g *genConfig, st *rng.Stream, dst []uint32) int {
	L := len(dst)
	above, tied := g.straddleCounts(L)
	for r, i := range st.Perm(L) {
		switch {
		case r < above:
			dst[i] = f32(2 + math.Abs(st.Normal()))
		case r < above+tied:
			dst[i] = 0x3F800000 // 1.0
		default:
			dst[i] = f32(0.1 * st.Normal())
		}
	}
	return -1
}

func paramsReLU(pr *difftest.Params, g *genConfig) { g.positives = pr.Int("positives", unset) }

func checkReLU(g *genConfig) error {
	return g.checkCount("positives", g.positives, wholeRow, "positives must fit in every row")
}

// rowReLU: positives values 0.5 + |z| (> 0), the rest +0.0.
func rowReLU(g *genConfig, st *rng.Stream, dst []uint32) int {
	n := g.positives
	if n == unset {
		n = min(100, len(dst))
	}
	scatter(st, dst, n, 0, func() uint32 { return f32(0.5 + math.Abs(st.Normal())) })
	return -1
}

// Low-contrast bands as [first bit pattern, bit-pattern span).
var lowContrastBands = map[string][2]uint32{
	"coarse": {0x3F800000, 0x3FA00000 - 0x3F800000}, // [1.0, 1.25)
	"high":   {0x477FF000, 1 << 24},                 // [65520, ≈262080)
	"tiny":   {0x00000000, 0x377BA882},              // [0, 1.5e-5)
}

func paramsLowContrast(pr *difftest.Params, g *genConfig) {
	g.span = pr.String("span", "coarse", "coarse", "high", "tiny")
}

func checkLowContrast(g *genConfig) error {
	span := int(lowContrastBands[g.span][1])
	for b, L := range g.rowLengths() {
		if L > span {
			return badParam("lengths", "span %q holds %d distinct f32 values; row %d has seq_len %d", g.span, span, b, L)
		}
	}
	return nil
}

// rowLowContrast: value r of the band is first + r·(span/L) as a bit
// pattern (distinct, increasing with r), placed at a random position.
func rowLowContrast(g *genConfig, st *rng.Stream, dst []uint32) int {
	band := lowContrastBands[g.span]
	step := band[1] / uint32(max(len(dst), 1))
	for r, i := range st.Perm(len(dst)) {
		dst[i] = band[0] + uint32(r)*step
	}
	return -1
}

func paramsMasked(pr *difftest.Params, g *genConfig) { g.finite = pr.Int("finite", unset) }

func checkMasked(g *genConfig) error {
	return g.checkCount("finite", g.finite, wholeRow, "finite values must fit in every row")
}

// rowMasked: finite Gaussian values at random positions, −inf elsewhere.
func rowMasked(g *genConfig, st *rng.Stream, dst []uint32) int {
	n := g.finite
	if n == unset {
		n = min(g.K/2, len(dst))
	}
	scatter(st, dst, n, negInfBits, func() uint32 { return f32(st.Normal()) })
	return -1
}

// scatter fills a row of a few values in a uniform background: the
// first n positions of a random permutation of dst's (st.Perm), in that
// order, get a value drawn by val, every other position fill.
func scatter(st *rng.Stream, dst []uint32, n int, fill uint32, val func() uint32) {
	for r, i := range st.Perm(len(dst)) {
		dst[i] = fill
		if r < n {
			dst[i] = val()
		}
	}
}

// rowSpecials: per position one word picks special (w < 2^30, a quarter)
// or Gaussian; a special is then chosen uniformly from rng.SpecialsF32.
func rowSpecials(_ *genConfig, st *rng.Stream, dst []uint32) int {
	sp := rng.SpecialsF32()
	for i := range dst {
		if st.Uint32() < 1<<30 {
			dst[i] = sp[st.Intn(len(sp))]
		} else {
			dst[i] = f32(st.Normal())
		}
	}
	return -1
}

// Pseudo-tie bands (suite param "band" of the pseudotie family).
const (
	BandZeros      = "zeros"      // −0 and +0
	BandSubnormals = "subnormals" // ±0 and ±subnormals
	BandNaNs       = "nans"       // ±NaN with random payloads
)

func paramsPseudoTie(pr *difftest.Params, g *genConfig) {
	g.band = pr.String("band", BandZeros, BandZeros, BandSubnormals, BandNaNs)
	g.above = pr.Int("above", unset)
}

func checkPseudoTie(g *genConfig) error {
	return g.checkCount("above", g.above, wholeRow, "above values must fit in every row")
}

// rowPseudoTie: a random permutation places the above values (ranks r <
// above) and the band values (the rest). Each band position draws one
// word w: sign = bit 31; zeros: ±0; subnormals: bit 30 set → a subnormal
// with mantissa w & 0x7FFFFF (0 → 1), else ±0; nans: exponent all ones,
// mantissa w & 0x7FFFFF (0 → 0x400000, the quiet bit), so quiet and
// signalling NaNs both occur.
func rowPseudoTie(g *genConfig, st *rng.Stream, dst []uint32) int {
	above := g.above
	if above == unset {
		above = min(g.K/2, len(dst))
	}
	for r, i := range st.Perm(len(dst)) {
		if r < above {
			if g.band == BandNaNs {
				dst[i] = f32(st.Normal())
			} else {
				dst[i] = f32(0.5 + math.Abs(st.Normal()))
			}
			continue
		}
		w := st.Uint32()
		sign, mant := w&0x80000000, w&0x007FFFFF
		switch g.band {
		case BandZeros:
			dst[i] = sign
		case BandSubnormals:
			dst[i] = sign
			if w&0x40000000 != 0 {
				dst[i] = sign | max(mant, 1)
			}
		case BandNaNs:
			if mant == 0 {
				mant = 0x00400000
			}
			dst[i] = sign | 0x7F800000 | mant
		}
	}
	return -1
}
