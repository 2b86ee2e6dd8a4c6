// Special bit patterns of binary32 (IEEE 754-2019 §3.4) and bfloat16, the
// edge values every input family mixes in (docs/contracts/topk_transform.md and docs/contracts/norm_rope_store.md: ±0,
// subnormals, ±inf, NaN of both signs). Part of transform version 1: the
// lists and their order are fixed.

package rng

// SpecialsF32 returns binary32 bit patterns of every special class, each
// positive then negative, in this order: ±0 (0x00000000), ±smallest
// subnormal 2^-149 (0x00000001), ±largest subnormal (0x007FFFFF),
// ±smallest normal 2^-126 (0x00800000), ±largest finite (0x7F7FFFFF),
// ±inf (0x7F800000), ±quiet NaN (0x7FC00000), ±signalling NaN (0x7FA00000),
// ±1 (0x3F800000). The result is a new slice on each call.
func SpecialsF32() []uint32 {
	return withSigns([]uint32{0x00000000, 0x00000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F800000, 0x7FC00000, 0x7FA00000, 0x3F800000}, 0x80000000)
}

// SpecialsBF16 returns bfloat16 bit patterns of the same classes as
// SpecialsF32, in the same order: ±0 (0x0000), ±smallest subnormal 2^-133
// (0x0001), ±largest subnormal (0x007F), ±smallest normal 2^-126 (0x0080),
// ±largest finite (0x7F7F), ±inf (0x7F80), ±quiet NaN (0x7FC0),
// ±signalling NaN (0x7FA0), ±1 (0x3F80). The result is a new slice on each
// call.
func SpecialsBF16() []uint16 {
	return withSigns([]uint16{0x0000, 0x0001, 0x007F, 0x0080, 0x7F7F, 0x7F80, 0x7FC0, 0x7FA0, 0x3F80}, 0x8000)
}

// withSigns returns each pattern of pos followed by its negative (the sign
// bit sign set).
func withSigns[T uint16 | uint32](pos []T, sign T) []T {
	out := make([]T, 0, 2*len(pos))
	for _, b := range pos {
		out = append(out, b, b|sign)
	}
	return out
}
