// IEEE 754-2019 binary16 (1 sign, 5 exponent, 10 fraction bits; bias 15),
// rounded to nearest, ties to even (§4.3.1). Used by the top-k coarse
// histogram key and by the fp8 double-rounding fault (docs/mutants.md).

package numeric

import "math"

// F16FromF64 converts f to binary16 bits with one round-to-nearest-even
// from the exact binary64 value. |f| ≥ 65520 (the midpoint between the
// largest finite 65504 and 2^16) rounds to ±inf; results below 2^-14 are
// subnormal, exactly rounded (the smallest is 2^-24, 0x0001); ±0 keep
// their sign; ±inf map to ±inf (0x7C00, 0xFC00); every NaN becomes the
// quiet NaN 0x7E00 with f's sign bit (the payload is not kept).
func F16FromF64(f float64) uint16 {
	return uint16(ieeeFromF64(f, 5, 10))
}

// F16FromF32 converts f to binary16 bits; it is F16FromF64(float64(f)),
// one rounding (the widening is exact), with the same special cases.
func F16FromF32(f float32) uint16 {
	return F16FromF64(float64(f))
}

// F16ToF32 returns the binary32 value of binary16 bits h; exact for every
// pattern. Subnormals become normal binary32 values; a NaN keeps its sign
// and its 10-bit payload in the top fraction bits (so it stays quiet or
// signalling as it was).
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1F
	frac := uint32(h) & 0x3FF
	if exp == 0x1F { // inf or NaN
		return math.Float32frombits(sign | 0x7F800000 | frac<<13)
	}
	return finiteToF32(sign, exp, frac, 5, 10)
}
