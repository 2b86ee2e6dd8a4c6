// bfloat16: the top 16 bits of an IEEE 754 binary32 (1 sign, 8 exponent,
// 7 fraction bits; bias 127), as defined by Google Brain for TPUs and
// adopted by Intel's "BFLOAT16 – Hardware Numerics Definition" (2018).
// Conversions round to nearest, ties to even (IEEE 754-2019 §4.3.1).

package numeric

import "math"

const (
	bf16Inf  = 0x7F80 // +inf; −inf is 0xFF80
	bf16QNaN = 0x7FC0 // the quiet NaN produced for every NaN input (sign kept)
)

// BF16FromF32 converts f to bfloat16 bits, round-to-nearest-even on the
// 16 discarded bits. Values at or beyond the midpoint between the largest
// finite bf16 (0x7F7F, 3.3895e38) and 2^128 round to ±inf, ±inf stays ±inf,
// ±0 and subnormals keep their sign and round like any other value. Every
// NaN becomes the quiet NaN 0x7FC0 with f's sign bit (0xFFC0 if negative);
// the payload is not kept. For non-NaN inputs this equals CUDA's
// __float2bfloat16_rn; CUDA's NaN pattern can differ (its canonical NaN is
// 0x7FFF), so comparators should match NaN against NaN by class
// (BF16IsNaN), not by bits.
func BF16FromF32(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	if b&0x7FFFFFFF > 0x7F800000 {
		return sign | bf16QNaN
	}
	// Adding 0x7FFF plus the kept LSB rounds the low half to nearest even;
	// a carry propagates into the exponent, up to the inf pattern.
	b += 0x7FFF + (b>>16)&1
	return uint16(b >> 16)
}

// BF16FromF64 converts f to bfloat16 bits with a single round-to-nearest-
// even from the exact binary64 value (not via binary32, which can round
// twice: 1 + 2^-8 + 2^-30 goes to 1 + 2^-8 in f32, a tie, and then down to
// 1, while the exact value rounds up to 1 + 2^-7). Overflow goes to ±inf as
// RNE dictates (|f| ≥ 2^128·(1 − 2^-9)), subnormal results are produced
// exactly rounded, ±0 keep their sign, ±inf map to ±inf, every NaN becomes
// 0x7FC0 with f's sign bit.
func BF16FromF64(f float64) uint16 {
	return uint16(ieeeFromF64(f, 8, 7))
}

// BF16ToF32 returns the binary32 value of bfloat16 bits b; exact for every
// pattern (NaN payloads and signs are kept, as b is the top half of the
// result).
func BF16ToF32(b uint16) float32 {
	return math.Float32frombits(uint32(b) << 16)
}

// BF16ToF64 returns the value of bfloat16 bits b as binary64; exact.
func BF16ToF64(b uint16) float64 {
	return float64(BF16ToF32(b))
}

// BF16IsNaN reports whether b is a bfloat16 NaN (exponent all ones,
// non-zero fraction).
func BF16IsNaN(b uint16) bool { return b&0x7FFF > bf16Inf }
