// Distances in representable steps (units in the last place) between two
// bfloat16 values or two e4m3fn codes, as used by the store comparators of
// docs/contracts/norm_rope_store.md. Each format's non-NaN patterns are put on one integer line
// (sign-magnitude to two's complement, with −0 and +0 at the same point) and
// the distance is the difference of positions, as in Bruce Dawson's
// "Comparing Floating Point Numbers, 2012 Edition".

package numeric

// BF16ULPDistance returns how many representable bfloat16 steps separate a
// and b: 0 for equal values (−0 and +0 are one value), 1 for neighbours,
// counting across zero (the smallest positive and smallest negative
// subnormal are 2 apart) and with ±inf as the two ends of the line (the
// largest finite value and +inf are 1 apart). It returns −1 if either is a
// NaN.
func BF16ULPDistance(a, b uint16) int {
	if BF16IsNaN(a) || BF16IsNaN(b) {
		return -1
	}
	return lineDistance(a, b, 0x8000)
}

// E4M3CodeDistance returns how many representable e4m3fn steps separate
// codes a and b: 0 for equal values (0x00 and 0x80, ±0, are one value), 1
// for neighbours, counting across zero, with ±448 (0x7E, 0xFE) as the ends.
// It returns −1 if either is a NaN code (0x7F, 0xFF).
func E4M3CodeDistance(a, b uint8) int {
	if E4M3IsNaN(a) || E4M3IsNaN(b) {
		return -1
	}
	return lineDistance(a, b, 0x80)
}

// lineDistance is |ordinal(a) − ordinal(b)| for sign-magnitude patterns
// whose sign is the bit sign: the ordinal of a pattern with the sign set
// is minus its magnitude, so −0 and +0 share the point 0 and the line runs
// from the most negative pattern to the most positive in value order.
func lineDistance[T uint8 | uint16](a, b, sign T) int {
	ordinal := func(x T) int {
		if x&sign != 0 {
			return -int(x &^ sign)
		}
		return int(x)
	}
	d := ordinal(a) - ordinal(b)
	if d < 0 {
		d = -d
	}
	return d
}
