// YaRN rotary frequency tables (B. Peng, J. Quesnelle, H. Fan, E. Shippole,
// "YaRN: Efficient Context Window Extension of Large Language Models",
// ICLR 2024, §3.2 "NTK-by-parts" interpolation), as the DeepSeek-V3.2 and
// DeepSeek-V4 reference inference code builds them in precompute_freqs_cis
// (inference/model.py: find_correction_dim, find_correction_range,
// linear_ramp_factor). Computed here in f64 (math/big for the base
// frequencies, detmath for ln, sin and cos, so the bits do not depend on
// the host) and stored as f32.

package normrope

import (
	"fmt"
	"math"
	"math/big"
	"sync"

	"github.com/kerneldiff/kerneldiff/difftest/detmath"
)

// YaRN model families of the freqs input.
const (
	ModelV32 = "v32" // DeepSeek-V3.2: θ 10000, factor 40, original length 4096
	ModelV4  = "v4"  // DeepSeek-V4: θ 160000, factor 16, original length 65536
)

// Yarn holds the YaRN parameters of one model family. Both families use
// β_fast = 32, β_slow = 1 and rotary dimension 64.
type Yarn struct {
	Theta    float64 // rope_theta, the RoPE base
	Factor   float64 // rope_factor, the context extension factor
	Original int     // original_seq_len, the pre-extension context length
	BetaFast float64 // β_fast: rotations at which interpolation stops (high-frequency end)
	BetaSlow float64 // β_slow: rotations at which interpolation is complete (low-frequency end)
}

// YarnOf returns the YaRN parameters of model "v32" or "v4" (docs/contracts/norm_rope_store.md).
func YarnOf(model string) (Yarn, error) {
	switch model {
	case ModelV32:
		return Yarn{Theta: 10000, Factor: 40, Original: 4096, BetaFast: 32, BetaSlow: 1}, nil
	case ModelV4:
		return Yarn{Theta: 160000, Factor: 16, Original: 65536, BetaFast: 32, BetaSlow: 1}, nil
	}
	return Yarn{}, fmt.Errorf("unknown YaRN model %q (want %s or %s)", model, ModelV32, ModelV4)
}

// MaxPositions returns the extended context length Original·Factor: 163840
// for v32, 1048576 for v4. Positions of a full table are [0, MaxPositions).
func (y Yarn) MaxPositions() int { return int(float64(y.Original) * y.Factor) }

// correctionDim returns the (fractional) pair index j at which the base
// frequency θ^(−2j/64) completes rot rotations over the original context:
// 64·ln(Original / (2π·rot)) / (2·ln θ).
func (y Yarn) correctionDim(rot float64) float64 {
	return RopeDim * detmath.Ln(float64(y.Original)/float64(rot*2*math.Pi)) / float64(2*detmath.Ln(y.Theta))
}

// baseFreq returns θ^(−j/32) = θ^(−2j/64), the RoPE base frequency of pair
// j, correctly rounded to f64 (unless the exact value lies within 2^-240
// of a rounding boundary): θ^(1/32) by five square roots in math/big at 256
// bits, its j-th power, the reciprocal, one rounding. math.Pow is only
// faithful, and its last bit depends on the host (FMA fusion, docs/running.md); math/big is integer arithmetic, the same everywhere.
func baseFreq(theta float64, j int) float64 {
	const prec = 256
	root := new(big.Float).SetPrec(prec).SetFloat64(theta)
	for n := RopeDim / 2; n > 1; n /= 2 { // RopeDim/2 = 32 = 2^5: five square roots
		root.Sqrt(root)
	}
	pow := new(big.Float).SetPrec(prec).SetInt64(1)
	for i := 0; i < j; i++ {
		pow.Mul(pow, root)
	}
	f, _ := pow.Quo(new(big.Float).SetPrec(prec).SetInt64(1), pow).Float64()
	return f
}

// Ramp returns the correction range (low, high): low = floor(correctionDim(β_fast))
// clamped to ≥ 0, high = ceil(correctionDim(β_slow)) clamped to ≤ 63. The
// reference code clamps to the rotary dimension minus one (63), not to the
// pair count; it is kept as written. v32: (10, 23); v4: (15, 25).
func (y Yarn) Ramp() (low, high float64) {
	low = math.Max(math.Floor(y.correctionDim(y.BetaFast)), 0)
	high = math.Min(math.Ceil(y.correctionDim(y.BetaSlow)), RopeDim-1)
	return low, high
}

// Freq returns the angular frequency of pair j ∈ [0, 32), in radians per
// position:
//
//	base_j = θ^(−2j/64)
//	r_j    = clamp((j − low) / (high − low), 0, 1)   (high += 0.001 when equal)
//	freq_j = base_j/factor · r_j + base_j · (1 − r_j)
//
// so pairs below low (fast rotations) keep their frequency, pairs above high
// are interpolated by 1/factor, and the ramp blends between. The reference
// code applies this whenever max_seq_len > original_seq_len, which holds
// for both families' deployed configurations, so it is always applied here.
func (y Yarn) Freq(j int) float64 {
	base := baseFreq(y.Theta, j)
	low, high := y.Ramp()
	if low == high {
		high += 0.001
	}
	r := math.Min(math.Max((float64(j)-low)/(high-low), 0), 1)
	return float64(base/y.Factor*r) + float64(base*(1-r))
}

// yarnCache keeps, per model, the longest table built so far; rows do not
// depend on the table length, so a shorter request is a prefix.
var yarnCache struct {
	sync.Mutex
	rows map[string][]float32
}

// FreqsTable returns the freqs input of model for positions [0, maxPos):
// maxPos·64 f32 values, row p holding (cos(p·freq_j), sin(p·freq_j)) for
// j = 0..31 interleaved. Each angle p·freq_j is one f64 product, its cosine
// and sine are f64 (detmath.SinCos: within 3.3e-16 of the exact values,
// and the same bits on every host and Go build) and each is rounded once
// to f32, so every value is within 1 f32 ULP of the exact one and the
// table is byte-identical on amd64 and arm64 (math.Pow, math.Sin and
// math.Cos need not be: their multiply-adds fuse on arm64; math.Pow did
// change the v32 and v4 tables there, scripts/test-xarch).
//
// Tables are cached per model, so repeated cases cost a copy; the result
// is a fresh slice the caller may modify. maxPos must be in [1,
// MaxPositions] (a v4 table of its full 1048576-position context is
// 256 MiB).
func FreqsTable(model string, maxPos int) ([]float32, error) {
	y, err := YarnOf(model)
	if err != nil {
		return nil, err
	}
	if err := checkMaxPos(maxPos, "max_pos"); err != nil {
		return nil, fmt.Errorf("freqs table: %w", err)
	}
	yarnCache.Lock()
	defer yarnCache.Unlock()
	if yarnCache.rows == nil {
		yarnCache.rows = map[string][]float32{}
	}
	have := yarnCache.rows[model]
	if len(have) < maxPos*RopeDim {
		have = buildFreqs(y, have, maxPos)
		yarnCache.rows[model] = have
	}
	return append([]float32(nil), have[:maxPos*RopeDim]...), nil
}

// buildFreqs extends a table of len(have)/64 rows to maxPos rows.
func buildFreqs(y Yarn, have []float32, maxPos int) []float32 {
	var freq [RopeDim / 2]float64
	for j := range freq {
		freq[j] = y.Freq(j)
	}
	out := make([]float32, maxPos*RopeDim)
	copy(out, have)
	first := len(have) / RopeDim
	forTokens(maxPos-first, func(lo, hi int) {
		for p := first + lo; p < first+hi; p++ {
			row := out[p*RopeDim : (p+1)*RopeDim]
			for j, f := range freq {
				sin, cos := detmath.SinCos(float64(float64(p) * f))
				row[2*j] = float32(cos)
				row[2*j+1] = float32(sin)
			}
		}
	})
	return out
}
