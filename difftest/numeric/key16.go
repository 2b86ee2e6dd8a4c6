// key16: the 16-bit analogue of key32 (key32.go) for bf16 and IEEE
// binary16 scores, the order of 16-bit radix-select top-k kernels
// (SGLang 0.5.23 topk_bf16_small.cuh calls it the "distorted" order of the
// raw bf16 bits: x ^ (x < 0 ? 0xFFFF : 0x8000)). Both formats are
// sign-magnitude, so one transform serves both.

package numeric

// Key16 maps bf16 or binary16 bits to a key whose unsigned order is the
// total order of the 16-bit scores: bits ^ 0xFFFF when the sign bit is
// set, bits ^ 0x8000 otherwise. Thus −NaN < −inf < negative finite < −0 <
// +0 < positive finite < +inf < +NaN, NaNs ordered among themselves by
// payload, and two scores tie only when their bit patterns are equal. It
// is a bijection on uint16, and it agrees with Key32 of the exactly
// widened bf16 value: Key16(b) = Key32(b << 16) >> 16.
func Key16(bits uint16) uint16 {
	if bits&0x8000 != 0 {
		return ^bits
	}
	return bits ^ 0x8000
}

// Key16Bits inverts Key16: Key16Bits(Key16(b)) == b for every b.
func Key16Bits(key uint16) uint16 {
	if key&0x8000 != 0 {
		return key ^ 0x8000
	}
	return ^key
}
