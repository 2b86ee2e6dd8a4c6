// The input families of topk_transform (DESIGN.md §3 "Input families"),
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
	// position L/3. Guards the long-context recall loss of DESIGN.md §1:
	// the top-k must keep the needle at every length.
	{name: "needle", needle: true, row: rowNeedle},
	// equal: every score of a row is the same value (drawn per row). Any K
	// positions are valid; guards tie holes and duplicates on a plateau.
	{name: "equal", row: rowEqual},
	// straddle: `above` distinct values above 1.0, `tied` values exactly
	// 1.0, the rest below, at random positions; with the defaults (3K/4
	// above, K/2 tied) the K-th value sits inside the tie band. Guards
	// tie-hole and dup-on-plateau kernels and "every pick ≥ the K-th"
	// checkers.
	{name: "straddle", params: paramsStraddle, row: rowStraddle},
	// relu: `positives` values > 0 (default 100) at random positions, the
	// rest exact +0.0, like ReLU-ed indexer logits (e.g. L = 8320, K =
	// 2048): the threshold bin holds almost the whole row.
	{name: "relu", params: paramsReLU, row: rowReLU},
	// lowcontrast: L distinct values, evenly spaced bit patterns in random
	// order, within one narrow band (span): "coarse" [1.0, 1.25) (one fp16
	// coarse bin), "high" ≥ 65520 (fp16 +inf), "tiny" [0, 1.5e-5) (fp16
	// subnormals). Guards fixed candidate buffers that overflow and
	// selection on fp16-rounded keys.
	{name: "lowcontrast", params: paramsLowContrast, row: rowLowContrast},
	// masked: only `finite` (default K/2) Gaussian values, the rest −inf,
	// as causal or padding masks leave them. The −inf positions are valid
	// picks; guards −FLT_MAX padding sentinels and −inf emitted as −1.
	{name: "masked", params: paramsMasked, row: rowMasked},
	// specials: Gaussian values with a quarter of the positions replaced by
	// rng.SpecialsF32 (±0, subnormals, ±FLT_MAX, ±inf, quiet and
	// signalling NaN of both signs). Guards key32 order (−0 < +0, NaN sign)
	// and NaN-dependent index garbage.
	{name: "specials", row: rowSpecials},
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
	g.above = pr.Int("above", -1)
	g.tied = pr.Int("tied", -1)
}

// rowStraddle: above values 2 + |z| (> 1), tied values exactly 1.0, the
// rest 0.1·z (|0.1·z| ≤ 0.67 < 1), placed by a random permutation.
func rowStraddle(g *genConfig, st *rng.Stream, dst []uint32) int {
	above, tied := g.above, g.tied
	if above < 0 {
		above = 3 * g.K / 4
	}
	if tied < 0 {
		tied = g.K / 2
	}
	L := len(dst)
	above = min(above, L)
	tied = min(tied, L-above)
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

func paramsReLU(pr *difftest.Params, g *genConfig) { g.positives = pr.Int("positives", 100) }

// rowReLU: positives values 0.5 + |z| (> 0), the rest +0.0.
func rowReLU(g *genConfig, st *rng.Stream, dst []uint32) int {
	n := min(max(g.positives, 0), len(dst))
	clear(dst)
	for r, i := range st.Perm(len(dst)) {
		if r >= n {
			break
		}
		dst[i] = f32(0.5 + math.Abs(st.Normal()))
	}
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

func paramsMasked(pr *difftest.Params, g *genConfig) { g.finite = pr.Int("finite", -1) }

// rowMasked: finite Gaussian values at random positions, −inf elsewhere.
func rowMasked(g *genConfig, st *rng.Stream, dst []uint32) int {
	n := g.finite
	if n < 0 {
		n = g.K / 2
	}
	n = min(n, len(dst))
	for r, i := range st.Perm(len(dst)) {
		dst[i] = 0xFF800000 // −inf
		if r < n {
			dst[i] = f32(st.Normal())
		}
	}
	return -1
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
