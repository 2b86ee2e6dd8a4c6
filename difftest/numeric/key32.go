// key32: the total order on binary32 bit patterns used by radix-select
// top-k kernels (docs/contracts/topk_transform.md). Flipping every bit of a negative pattern
// and only the sign bit of a non-negative one turns IEEE 754 sign-magnitude
// order into unsigned integer order (the transform CUB's radix sort applies
// to floating-point keys).

package numeric

import "math"

// Key32 maps binary32 bits to a key whose unsigned order is the contract's
// total order: bits ^ 0xFFFFFFFF when the sign bit is set, bits ^ 0x80000000
// otherwise. Thus −NaN < −inf < negative finite < −0 < +0 < positive finite
// < +inf < +NaN, NaNs ordered among themselves by payload, and two values
// tie only when their bit patterns are equal. It is a bijection on uint32.
func Key32(bits uint32) uint32 {
	if bits&0x80000000 != 0 {
		return ^bits
	}
	return bits ^ 0x80000000
}

// Key32F is Key32(math.Float32bits(f)).
func Key32F(f float32) uint32 {
	return Key32(math.Float32bits(f))
}

// Key32Bits inverts Key32: Key32Bits(Key32(b)) == b for every b.
func Key32Bits(key uint32) uint32 {
	if key&0x80000000 != 0 {
		return key ^ 0x80000000
	}
	return ^key
}
