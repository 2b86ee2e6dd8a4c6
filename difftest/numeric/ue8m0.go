// ue8m0: the unsigned power-of-two scale format E8M0 of the OCP
// "Microscaling Formats (MX) Specification" v1.0 (2023): 8 exponent
// bits, bias 127, no sign, no fraction; code 0xFF is NaN, so codes 0..254
// stand for 2^-127 .. 2^127. DeepSeek's fp8 kernels round their per-block
// scales up to such a power of two ("scale_fmt = ue8m0", docs/contracts/norm_rope_store.md).

package numeric

import "math"

// UE8M0Ceil returns the smallest power of two not below s, 2^ceil(log2 s),
// and its exponent, for finite s > 0. It is exact: the exponent comes from
// math.Frexp (s = frac·2^e with frac in [0.5, 1)), so an exact power of two
// maps to itself and any other value to the next power up, including
// subnormal s. For s > 2^1023 the exponent is 1024 and pow2 is +Inf.
//
// For s ≤ 0 (±0 included), ±Inf and NaN there is no such power: it returns
// (NaN, 0). Callers test math.IsNaN(pow2); the exponent 0 alone does not
// signal the error, as UE8M0Ceil(1) is (1, 0).
func UE8M0Ceil(s float64) (pow2 float64, exp int) {
	if !(s > 0) || math.IsInf(s, 1) {
		return math.NaN(), 0
	}
	frac, e := math.Frexp(s)
	if frac == 0.5 {
		e-- // s is exactly 2^(e−1)
	}
	return math.Ldexp(1, e), e
}

// UE8M0Code returns the ue8m0 byte 127+exp for the scale 2^exp, and true,
// when exp is in [-127, 127]. Outside that range it returns (0xFF, false):
// 0xFF is the format's NaN and no byte represents the scale.
func UE8M0Code(exp int) (uint8, bool) {
	if exp < -127 || exp > 127 {
		return 0xFF, false
	}
	return uint8(127 + exp), true
}

// UE8M0ToF64 returns the scale 2^(code−127) of a ue8m0 byte, exactly, and
// NaN for 0xFF.
func UE8M0ToF64(code uint8) float64 {
	if code == 0xFF {
		return math.NaN()
	}
	return math.Ldexp(1, int(code)-127)
}
