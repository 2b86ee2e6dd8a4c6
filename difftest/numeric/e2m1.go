// e2m1: the 4-bit floating-point element format FP4 E2M1 of the OCP
// "Microscaling Formats (MX) Specification" v1.0 (2023), §5.3.3: one sign
// bit, two exponent bits (bias 1), one mantissa bit, no infinities and no
// NaN. The eight magnitudes of codes 0–7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6;
// bit 3 is the sign (code 8 is −0). The FP4 index keys of
// docs/contracts/norm_rope_store.md ("FP4 keys") pack two codes a byte.

package numeric

import "math"

// E2M1Max is the largest finite e2m1 magnitude, 6.
const E2M1Max = 6.0

// e2m1Mag holds the magnitude of codes 0–7.
var e2m1Mag = [8]float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}

// E2M1ToF64 returns the value of the e2m1 code in the low nibble of c
// (the high nibble is ignored), exactly: ±{0, 0.5, 1, 1.5, 2, 3, 4, 6};
// code 0x8 is −0.
func E2M1ToF64(c uint8) float64 {
	v := e2m1Mag[c&7]
	if c&8 != 0 {
		return -v
	}
	return v
}

// E2M1FromF64 returns the e2m1 code (0x0–0xF) of x rounded once to
// nearest, ties to the even code (mantissa bit 0), saturating: |x| > 6
// and ±inf give ±6 (0x7, 0xF), as PTX cvt.rn.satfinite.e2m1x2.f32
// (CUDA's __nv_cvt_float2_to_fp4x2 with cudaRoundNearest) and ml_dtypes'
// float4_e2m1fn (for finite x) do. The ties fall at 0.25 → 0, 0.75 → 1,
// 1.25 → 1, 1.75 → 2, 2.5 → 2, 3.5 → 4 and 5 → 4. The sign is kept,
// also when the magnitude rounds to zero (−0.1 gives 0x8, −0); the FP4
// store clears it (docs/contracts/norm_rope_store.md). NaN has no e2m1
// code: it gives 0x7 (+6); the contract leaves NaN tokens unspecified.
func E2M1FromF64(x float64) uint8 {
	if math.IsNaN(x) {
		return 0x7
	}
	var sign uint8
	if math.Signbit(x) {
		sign = 8
	}
	a := math.Abs(x)
	// Each midpoint between neighbouring magnitudes, with the code a tie
	// takes (the even one).
	mids := [7]float64{0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5}
	idx := uint8(0)
	for i, m := range mids {
		switch {
		case a > m:
			idx = uint8(i + 1)
		case a == m:
			idx = uint8(i)
			if idx&1 == 1 {
				idx++
			}
		}
	}
	return sign | idx
}

// E2M1FromF32 is E2M1FromF64 of a float32 value (exact widening, one
// rounding).
func E2M1FromF32(x float32) uint8 { return E2M1FromF64(float64(x)) }

// E2M1Round returns the value of E2M1FromF64(x): x rounded to the e2m1
// grid (RNE, saturating at ±6).
func E2M1Round(x float64) float64 { return E2M1ToF64(E2M1FromF64(x)) }

// E2M1CodeDistance returns how many representable magnitudes apart two
// e2m1 codes are on the signed line −6 … −0.5, 0, 0.5 … 6 (−0 and +0 are
// one point, distance 0). Only the low nibble of each is read.
func E2M1CodeDistance(a, b uint8) int { return lineDistance(a&0xF, b&0xF, 8) }

// UE8M0CeilF32 returns the ue8m0 byte of the power of two at or above the
// float32 s, computed on its bits as SGLang's cast_to_ue8m0 does
// (exponent field plus one when the mantissa field is non-zero), clamped
// to [1, 254] as its FP4 index packer does: for a positive normal s the
// byte of 2^ceil(log2 s); for a subnormal or zero s, 1 (2^-126); for
// s ≥ 2^127, +inf and NaN, 254. Negative s is not a scale: the sign is
// ignored.
func UE8M0CeilF32(s float32) uint8 {
	u := math.Float32bits(s) & 0x7FFFFFFF
	if u > 0x7F800000 { // NaN
		return 254
	}
	e := int(u >> 23)
	if u&0x7FFFFF != 0 {
		e++
	}
	return uint8(min(max(e, 1), 254))
}
