// Round-to-nearest-even from binary64 to a narrower binary format, by
// integer arithmetic on the significand (the method of IEEE 754-2019 §4.3.1
// applied to the exact value m·2^e of a binary64 datum), and the exact way
// back from such a format's finite numbers to binary32.

package numeric

import (
	"math"
	"math/bits"
)

// roundF64 rounds the finite value |f| to a binary format with p stored
// significand bits and minimum normal exponent emin, ties to even, and
// returns the format's magnitude encoding ((biased exponent << p) | fraction)
// together with the sign of f (1 for negative, including −0). The encoding
// is unbounded above: a value that overflows the format yields an encoding
// at or beyond the format's largest exponent field, and the caller applies
// its overflow rule (±inf for IEEE formats, saturation for e4m3fn).
//
// f must be finite. Subnormal results, and rounding up across a binade or
// from the largest subnormal to the smallest normal, come out right because
// the encoding is monotone in the rounded significand.
func roundF64(f float64, p uint, emin int) (enc uint64, sign uint64) {
	b := math.Float64bits(f)
	sign = b >> 63
	expField := int(b>>52) & 0x7FF
	frac := b & (1<<52 - 1)
	var m uint64
	var e int // |f| = m · 2^e exactly
	if expField == 0 {
		m, e = frac, -1074
	} else {
		m, e = frac|1<<52, expField-1075
	}
	if m == 0 {
		return 0, sign
	}
	x := e + bits.Len64(m) - 1 // 2^x ≤ |f| < 2^(x+1)
	if x < emin {
		x = emin // subnormal range of the target: fixed quantum 2^(emin−p)
	}
	qe := x - int(p) // quantum exponent of the target in this binade
	shift := qe - e  // significand bits to drop; > 0 for every narrower format
	var q uint64
	switch {
	case shift <= 0:
		q = m << uint(-shift)
	case shift >= 64:
		// |f| < 2^(e+53) ≤ 2^(qe−11): below half a quantum, rounds to zero.
		q = 0
	default:
		q = m >> uint(shift)
		rem := m & (1<<uint(shift) - 1)
		half := uint64(1) << uint(shift-1)
		if rem > half || (rem == half && q&1 == 1) {
			q++
		}
	}
	// Normal: ((x−emin+1) << p) + (q − 2^p) = ((x−emin) << p) + q.
	// Subnormal (x clamped to emin, q < 2^p): the exponent field is 0 and
	// the encoding is q; q == 2^p is the smallest normal. Both are the same
	// formula.
	return uint64(x-emin)<<p + q, sign
}

// ieeeFromF64 converts f to the bits of the IEEE 754 binary format with we
// exponent bits and p stored fraction bits (sign in bit we+p; we+p < 64):
// one round-to-nearest-even from the exact binary64 value (roundF64).
// Results at or beyond the format's infinity, and ±inf, give ±inf; ±0 and
// subnormals keep their sign; every NaN becomes the quiet NaN (exponent all
// ones, only the top fraction bit set) with f's sign bit.
func ieeeFromF64(f float64, we, p uint) uint64 {
	inf := (uint64(1)<<we - 1) << p
	var enc uint64
	switch {
	case math.IsNaN(f):
		enc = inf | 1<<(p-1)
	case math.IsInf(f, 0):
		enc = inf
	default:
		enc, _ = roundF64(f, p, 2-1<<(we-1))
		enc = min(enc, inf)
	}
	return math.Float64bits(f)>>63<<(we+p) | enc
}

// finiteToF32 is the binary32 value, exact, of a finite number of a
// narrower binary format with we exponent bits (bias 2^(we−1) − 1) and p
// stored fraction bits, given as its sign (already in bit 31), biased
// exponent field exp and fraction field frac: a normal number is
// rebiased, a subnormal (frac · 2^(1−bias−p)) normalised so that its
// leading one becomes the implicit bit. The caller decodes the format's
// infinities and NaNs.
func finiteToF32(sign, exp, frac uint32, we, p uint) float32 {
	bias := uint32(1)<<(we-1) - 1
	switch {
	case exp != 0:
		return math.Float32frombits(sign | (exp+127-bias)<<23 | frac<<(23-p))
	case frac == 0:
		return math.Float32frombits(sign)
	}
	e := 128 - bias // the biased binary32 exponent of the smallest normal, 2^(1−bias)
	lead := uint32(1) << p
	for frac&lead == 0 {
		frac <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (frac&(lead-1))<<(23-p))
}
