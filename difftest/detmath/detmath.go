// Package detmath computes the few transcendental functions the input
// generators need so that every host gets the same bits: math.Log,
// math.Sin and math.Cos have per-architecture assembly or FMA-dependent
// code paths, so their last bit can differ between hosts (docs/running.md:
// Go may fuse x*y+z into an FMA, on arm64 always, on amd64 with
// GOAMD64≥v3). These use only correctly rounded operations (+, −, ×, ÷,
// math.Frexp, math.Floor) with an explicit float64 conversion around every
// product, which forbids the compiler from fusing a multiply and an add
// (Go spec, "Floating-point operators"). The methods are the textbook
// ones: for Ln, reduction by the binary exponent and the series
// ln m = 2·atanh((m−1)/(m+1)) (Abramowitz and Stegun 4.1.27); for Cos2Pi
// and SinCos, reduction to the nearest quarter turn (in integers, or by a
// three-part π/2 whose first two parts multiply exactly: Cody and Waite,
// "Software Manual for the Elementary Functions", 1980, ch. 8) and the
// Taylor series of sin and cos on |x| ≤ π/4.
package detmath

import "math"

const (
	ln2   = 0.693147180559945309417232121458176568075500134360255254120680009
	ln2Hi = 0x1.62e42p-1 // ln 2 with 21 significant bits: e·ln2Hi is exact for |e| < 2^31
	ln2Lo = ln2 - ln2Hi  // the rest, rounded once

	sqrtHalf = 0x1.6a09e667f3bcdp-1 // √½ rounded: the reduction threshold

	twoPiOver2p32 = 2 * math.Pi / (1 << 32) // radians per unit of a 32-bit angle

	// π/2 = halfPi1 + halfPi2 + halfPi3: the first two with at most 28
	// significant bits, so k·halfPi1 and k·halfPi2 are exact for k < 2^24;
	// the third rounded once (the rest is below 2^-113).
	halfPi1   = 0x1.921fb54p+0
	halfPi2   = 0x1.10b461p-30
	halfPi3   = 0x1.a62633145c06ep-58
	twoOverPi = 0x1.45f306dc9c883p-1 // 2/π rounded: picks the quarter turn

	// SinCosMax bounds the arguments of SinCos: |x| ≤ 2^24.
	SinCosMax = 1 << 24
)

// atanhCoef[k] = 1/(2k+3): ln m = 2s + 2s·s²·Σ atanhCoef[k]·s^(2k).
var atanhCoef = [12]float64{1. / 3, 1. / 5, 1. / 7, 1. / 9, 1. / 11, 1. / 13, 1. / 15, 1. / 17, 1. / 19, 1. / 21, 1. / 23, 1. / 25}

// Ln returns the natural logarithm of a finite x > 0 (callers guarantee
// it; anything else gives an unspecified value). x = m·2^e with m in [√½, √2), both exact; s = (m−1)/(m+1) has
// |s| ≤ 0.1716, so s² ≤ 0.0295 and the series, cut after s^24/25, leaves a
// truncation error below 2^-60 relative. Measured against math.Log the
// result is within 2 ULP of the exact logarithm (TestLnAccuracy).
func Ln(x float64) float64 {
	m, e := math.Frexp(x)
	if m < sqrtHalf {
		m *= 2
		e--
	}
	s := (m - 1) / (m + 1) // m−1 is exact (Sterbenz)
	s2 := float64(s * s)
	p := atanhCoef[len(atanhCoef)-1]
	for k := len(atanhCoef) - 2; k >= 0; k-- {
		p = float64(p*s2) + atanhCoef[k]
	}
	twoS := 2 * s // exact
	lnm := twoS + float64(twoS*float64(s2*p))
	fe := float64(e)
	return float64(fe*ln2Hi) + (float64(fe*ln2Lo) + lnm)
}

// cosCoef[k] = (−1)^k/(2k)!, sinCoef[k] = (−1)^k/(2k+1)!: Taylor
// coefficients up to x^18 and x^19; for |x| ≤ π/4 the next terms are below
// 2^-63 relative.
var (
	cosCoef = [10]float64{1, -1. / 2, 1. / 24, -1. / 720, 1. / 40320, -1. / 3628800,
		1. / 479001600, -1. / 87178291200, 1. / 20922789888000, -1. / 6402373705728000}
	sinCoef = [10]float64{1, -1. / 6, 1. / 120, -1. / 5040, 1. / 362880, -1. / 39916800,
		1. / 6227020800, -1. / 1307674368000, 1. / 355687428096000, -1. / 121645100408832000}
)

// Cos2Pi returns cos(2π·b/2^32) for a 32-bit angle b (b/2^32 turns). The
// nearest quarter turn q is taken off in integers, leaving f = b − q·2^30
// in [−2^29, 2^29) and x = f·2π/2^32 with |x| ≤ π/4 (one rounding); then
// cos(x + q·π/2) is ±cos x or ±sin x, exactly. Within 2.5e-16 absolute
// of the true value (TestCos2PiAccuracy), exact at the quarter turns.
func Cos2Pi(b uint32) float64 {
	q := (b + 1<<29) >> 30 // nearest quarter turn, 0..4 (4 wraps to 0)
	f := int32(b - q<<30)
	x := float64(float64(f) * twoPiOver2p32)
	x2 := float64(x * x)
	switch q & 3 {
	case 0:
		return poly(x2, &cosCoef)
	case 1:
		return -float64(x * poly(x2, &sinCoef))
	case 2:
		return -poly(x2, &cosCoef)
	default:
		return float64(x * poly(x2, &sinCoef))
	}
}

// poly evaluates Σ c[k]·x2^k by Horner's rule, rounding each product.
func poly(x2 float64, c *[10]float64) float64 {
	p := c[len(c)-1]
	for k := len(c) - 2; k >= 0; k-- {
		p = float64(p*x2) + c[k]
	}
	return p
}

// SinCos returns sin x and cos x for |x| ≤ SinCosMax (2^24; beyond it, and
// for NaN or ±Inf, both are NaN). k = round(x·2/π) is taken off as
// r = ((x − k·halfPi1) − k·halfPi2) − k·halfPi3, whose first two products
// are exact and whose first difference is exact (Sterbenz); then
// sin(r + k·π/2) and cos(r + k·π/2) are ±sin r or ±cos r. Within 3.3e-16
// absolute of the true values on the whole domain (TestSinCosAccuracy
// measured 2.2e-16 at worst over 16,000 arguments against math/big).
func SinCos(x float64) (sin, cos float64) {
	if !(math.Abs(x) <= SinCosMax) {
		return math.NaN(), math.NaN()
	}
	k := math.Floor(float64(x*twoOverPi) + 0.5)
	r := float64(x-float64(k*halfPi1)) - float64(k*halfPi2)
	r -= float64(k * halfPi3)
	r2 := float64(r * r)
	s := float64(r * poly(r2, &sinCoef))
	c := poly(r2, &cosCoef)
	switch int64(k) & 3 {
	case 0:
		return s, c
	case 1:
		return c, -s
	case 2:
		return -s, -c
	default:
		return -c, s
	}
}
