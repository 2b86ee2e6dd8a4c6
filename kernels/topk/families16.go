// The 16-bit score families of topk_transform (docs/contracts/topk_transform.md,
// "16-bit scores"): rows drawn as bf16 or f16 bit patterns, built to stress
// a two-pass 8-bit radix select over Key16 — ties at the K-th key
// straddling a high-digit boundary, whole rows inside one exponent (only
// the mantissa, and so the low digit, tells them apart), and NaNs of both
// signs. They need dtype = "bf16" or "f16"; every other family narrows
// its f32 draws to the case's format (writeRow16).

package topk

import (
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

func init() { families = append(families, families16...) }

// families16 joins the catalog at init (families.go keeps the f32 ones).
var families16 = []family{
	// ties16: every position holds one of five adjacent Key16 keys,
	// c−2 … c+2, where c is the key of a N(0, 1) draw rounded to a
	// multiple of 256 (a high-digit boundary): so the row is one big tie
	// band whose K-th key sits on either side of a digit boundary, and
	// the low digit decides among keys that share the high one. Guards
	// tie holes and duplicates in 16-bit kernels, a single radix pass,
	// and a low digit taken from the raw bits instead of the key.
	{name: "ties16", bits16: true, row: rowTies16},
	// oneexp: every value of a row in one binade, [1, 2) or (−2, −1]
	// (a coin flip per row), uniform random mantissas: the high Key16 digit holds
	// the sign, the exponent and 1 (bf16) or 3 (f16) mantissa bits, so
	// the selection is made in the low digit. Guards one-pass selection,
	// raw bits compared without the sign flip (negative rows reverse), a
	// low digit of the wrong word, and f16 ranked at bf16 precision.
	{name: "oneexp", bits16: true, row: rowOneExp},
	// nan16: N(0, 1) values narrowed to the format, with a quarter of the
	// positions specials of the format: quiet and signalling NaNs of both
	// signs with random payloads (half of the specials), ±inf, ±0, the
	// smallest subnormals and ±max finite. Key16 ranks +NaN above +inf
	// (by payload) and −NaN below −inf. Guards NaN dropped or
	// canonicalised, sign-blind NaN handling and raw-bit order.
	{name: "nan16", bits16: true, row: rowNaN16},
}

// writeRow16 writes row b of 16-bit scores: the first L elements from
// row (16-bit patterns when bits16, else f32 bits narrowed by
// narrow16), then the past-length fill (+NaN even, +inf odd).
func writeRow16(scores *difftest.Tensor, p *Params, b, L int, row []uint32, bits16 bool) {
	base := b * p.Stride
	for i := 0; i < p.Stride; i++ {
		var x uint16
		switch {
		case i < L && bits16:
			x = uint16(row[i])
		case i < L:
			x = narrow16(p.ScoreDType, row[i])
		default:
			x = pastFill16(p.ScoreDType, i%2 == 1)
		}
		scores.SetU16(base+i, x)
	}
}

// bits16Of narrows an f64 draw to the case's 16-bit format.
func (g *genConfig) bits16Of(x float64) uint16 {
	if g.ScoreDType == ScoreF16 {
		return numeric.F16FromF64(x)
	}
	return numeric.BF16FromF64(x)
}

// rowTies16: one N(0, 1) draw gives the centre key c (rounded to a
// multiple of 256), then each position one of c−2 … c+2 uniformly.
func rowTies16(g *genConfig, st *rng.Stream, dst []uint32) int {
	c := uint32(numeric.Key16(g.bits16Of(st.Normal())))
	c = (c + 128) &^ 255
	for i := range dst {
		dst[i] = uint32(numeric.Key16Bits(uint16(c + uint32(st.Intn(5)) - 2)))
	}
	return -1
}

// rowOneExp: the bits of 1.0 (bf16 0x3F80, f16 0x3C00) with a uniform
// random mantissa; the sign bit is set when the row's first word is odd.
func rowOneExp(g *genConfig, st *rng.Stream, dst []uint32) int {
	one, mant := uint32(0x3F80), uint32(0x7F)
	if g.ScoreDType == ScoreF16 {
		one, mant = 0x3C00, 0x3FF
	}
	sign := uint32(0)
	if st.Uint32()&1 == 1 {
		sign = 0x8000
	}
	for i := range dst {
		dst[i] = sign | one | st.Uint32()&mant
	}
	return -1
}

// rowNaN16: per position one word picks special (a quarter) or Gaussian;
// a special is a NaN (half of them: sign, quiet bit and payload random,
// payload never zero) or one of the eight other specials of the format.
func rowNaN16(g *genConfig, st *rng.Stream, dst []uint32) int {
	inf, quiet, payload, maxFinite := uint32(0x7F80), uint32(0x40), uint32(0x3F), uint32(0x7F7F)
	if g.ScoreDType == ScoreF16 {
		inf, quiet, payload, maxFinite = 0x7C00, 0x200, 0x1FF, 0x7BFF
	}
	others := [...]uint32{inf, 0x8000 | inf, 0, 0x8000, 1, 0x8001, maxFinite, 0x8000 | maxFinite}
	for i := range dst {
		w := st.Uint32()
		switch {
		case w >= 1<<30:
			dst[i] = uint32(g.bits16Of(st.Normal()))
		case w < 1<<29:
			x := st.Uint32()
			p := x & payload
			if p == 0 {
				p = 1
			}
			dst[i] = x>>16&0x8000 | inf | x>>8&quiet | p
		default:
			dst[i] = others[st.Intn(len(others))]
		}
	}
	return -1
}
