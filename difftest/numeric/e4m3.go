// e4m3fn: the 8-bit floating-point format E4M3 of the OCP "8-bit Floating
// Point Specification (OFP8)", revision 1.0 (2023) (1 sign, 4
// exponent, 3 fraction bits; bias 7; no infinities; S.1111.111 is NaN; the
// largest finite value is S.1111.110 = ±448; the smallest subnormal 2^-9).
// The "fn" suffix is the name the ML frameworks give it (finite, NaN only).
//
// The conversion is the saturating mode of OFP8, which CUDA's
// __nv_cvt_float_to_fp8(..., __NV_SATFINITE, __NV_E4M3) implements and the
// kernels of docs/contracts/norm_rope_store.md use.

package numeric

import "math"

// E4M3Max is the largest finite e4m3fn magnitude, 1.75 · 2^8 (code 0x7E).
const E4M3Max = 448.0

const (
	e4m3MaxCode = 0x7E // +448; −448 is 0xFE
	e4m3NaN     = 0x7F // the NaN code produced for every NaN input
)

// E4M3FromF64 converts f to an e4m3fn code with one round-to-nearest-even
// from the exact binary64 value. Subnormal results (multiples of 2^-9 below
// 2^-6) are exactly rounded; |f| ≤ 2^-10 rounds to ±0 (2^-10 is a tie and
// goes to the even zero), keeping f's sign. |f| > 448, ±inf included,
// saturates to ±448 (0x7E, 0xFE); values in (448, 464) would round to 448
// anyway. Every NaN, whatever its sign, becomes 0x7F (docs/contracts/norm_rope_store.md).
func E4M3FromF64(f float64) uint8 {
	if math.IsNaN(f) {
		return e4m3NaN
	}
	sign := uint8(math.Float64bits(f)>>56) & 0x80
	if math.IsInf(f, 0) {
		return sign | e4m3MaxCode
	}
	enc, _ := roundF64(f, 3, -6)
	if enc > e4m3MaxCode {
		enc = e4m3MaxCode
	}
	return sign | uint8(enc)
}

// E4M3FromF32 converts f to an e4m3fn code; it is E4M3FromF64(float64(f))
// (the widening is exact, so there is one rounding), with the same
// saturation and NaN rules.
func E4M3FromF32(f float32) uint8 {
	return E4M3FromF64(float64(f))
}

// E4M3ToF32 returns the value of e4m3fn code c as binary32; exact. The two
// NaN codes 0x7F and 0xFF decode to the quiet NaN 0x7FC00000 with c's sign
// bit (0xFFC00000 for 0xFF).
func E4M3ToF32(c uint8) float32 {
	sign := uint32(c&0x80) << 24
	if E4M3IsNaN(c) {
		return math.Float32frombits(sign | 0x7FC00000)
	}
	return finiteToF32(sign, uint32(c>>3)&0xF, uint32(c)&0x7, 4, 3) // no infinities: exponent 15 is finite
}

// E4M3IsNaN reports whether c is one of the two e4m3fn NaN codes, 0x7F
// and 0xFF.
func E4M3IsNaN(c uint8) bool { return c&0x7F == e4m3NaN }
