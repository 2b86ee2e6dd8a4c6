package detmath

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// bigLn returns ln x to about 100 bits with math/big: ln x = e·ln 2 +
// 2·atanh((m−1)/(m+1)), summed until the terms vanish. It is the accuracy
// yardstick for ln; math.Log itself is only faithful, not exact.
func bigLn(x float64) *big.Float {
	const prec = 200
	m, e := math.Frexp(x)
	if m < 0.75 { // m in [0.75, 1.5): exact 0 at x = 1, fast convergence
		m *= 2
		e--
	}
	mb := new(big.Float).SetPrec(prec).SetFloat64(m)
	one := new(big.Float).SetPrec(prec).SetInt64(1)
	s := new(big.Float).SetPrec(prec).Quo(new(big.Float).SetPrec(prec).Sub(mb, one), new(big.Float).SetPrec(prec).Add(mb, one))
	s2 := new(big.Float).SetPrec(prec).Mul(s, s)
	sum := new(big.Float).SetPrec(prec)
	term := new(big.Float).SetPrec(prec).Set(s)
	for k := 0; k < 60; k++ { // |s| ≤ 0.2: term 60 is below 2^-270
		q := new(big.Float).SetPrec(prec).Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(2*k+1)))
		sum.Add(sum, q)
		term.Mul(term, s2)
	}
	sum.Mul(sum, new(big.Float).SetPrec(prec).SetInt64(2))
	ln2 := bigLn2(prec)
	return sum.Add(sum, new(big.Float).SetPrec(prec).Mul(ln2, new(big.Float).SetPrec(prec).SetInt64(int64(e))))
}

// bigLn2 returns ln 2 = 2·atanh(1/3) to prec bits.
func bigLn2(prec uint) *big.Float {
	third := new(big.Float).SetPrec(prec).Quo(new(big.Float).SetPrec(prec).SetInt64(1), new(big.Float).SetPrec(prec).SetInt64(3))
	ninth := new(big.Float).SetPrec(prec).Mul(third, third)
	sum := new(big.Float).SetPrec(prec)
	term := new(big.Float).SetPrec(prec).Set(third)
	for k := 0; k < 100; k++ { // 9^-100 is below 2^-300
		sum.Add(sum, new(big.Float).SetPrec(prec).Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(2*k+1))))
		term.Mul(term, ninth)
	}
	return sum.Mul(sum, new(big.Float).SetPrec(prec).SetInt64(2))
}

// ulpErr returns |got − want| in units of the float64 ULP of want.
func ulpErr(got float64, want *big.Float) float64 {
	w, _ := want.Float64()
	if w == 0 {
		return math.Abs(got)
	}
	_, e := math.Frexp(w)
	ulp := math.Ldexp(1, e-53)
	d := new(big.Float).SetPrec(200).Sub(new(big.Float).SetFloat64(got), want)
	df, _ := d.Float64()
	return math.Abs(df) / ulp
}

// TestLnAccuracy: ln is within 2 ULP of the exact logarithm on the inputs
// Normal gives it, (a+1)·2^-32, including the ends (2^-32 and 1) and
// values next to 1 where cancellation would show.
func TestLnAccuracy(t *testing.T) {
	inputs := []float64{0x1p-32, 0x1p-31, 0.5, 0.70710678118654752, 0.7071067811865476, 1 - 0x1p-32, 1 - 0x1p-20, 0.999, 0.25 + 0x1p-32, 1}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 3000; i++ {
		inputs = append(inputs, float64(uint64(r.Uint32())+1)*0x1p-32)
	}
	worst := 0.0
	for _, x := range inputs {
		e := ulpErr(Ln(x), bigLn(x))
		if e > worst {
			worst = e
		}
		if e > 2 {
			t.Errorf("Ln(%v) = %v, %.2f ULP from exact", x, Ln(x), e)
		}
	}
	if Ln(1) != 0 {
		t.Errorf("Ln(1) = %v, want 0", Ln(1))
	}
	t.Logf("ln worst error %.3f ULP", worst)
}

// TestCos2PiAccuracy: Cos2Pi(b) is within 2.5e-16 of cos(2π·b/2^32),
// computed with math/big-exact angles reduced by hand; exact at the
// quarter turns.
func TestCos2PiAccuracy(t *testing.T) {
	exact := map[uint32]float64{0: 1, 1 << 30: 0, 1 << 31: -1, 3 << 30: 0}
	for b, want := range exact {
		if got := Cos2Pi(b); got != want {
			t.Errorf("Cos2Pi(%#x) = %v, want %v", b, got, want)
		}
	}
	// Reference: math.Cos on the reduced angle |x| ≤ π/4 is accurate to
	// about 1 ULP, and the reduction here is exact in integers.
	r := rand.New(rand.NewPCG(5, 6))
	worst := 0.0
	for i := 0; i < 100000; i++ {
		b := r.Uint32()
		q := (b + 1<<29) >> 30
		f := float64(int32(b - q<<30))
		x := f * 2 * math.Pi / (1 << 32)
		var want float64
		switch q & 3 {
		case 0:
			want = math.Cos(x)
		case 1:
			want = -math.Sin(x)
		case 2:
			want = -math.Cos(x)
		default:
			want = math.Sin(x)
		}
		d := math.Abs(Cos2Pi(b) - want)
		if d > worst {
			worst = d
		}
		if d > 2.5e-16 {
			t.Errorf("Cos2Pi(%#x) = %v, want %v (|d| = %g)", b, Cos2Pi(b), want, d)
		}
	}
	t.Logf("cos2pi worst absolute error %g", worst)
}

// bigPi is π to 200 decimal digits (well past the 256 bits used below).
const bigPi = "3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798214808651328230664709384460955058223172535940812848111745028410270193852110555964462294895493038196"

// bigHalfPi is π/2 to 256 bits.
var bigHalfPi = func() *big.Float {
	pi, _, err := big.ParseFloat(bigPi, 10, 256, big.ToNearestEven)
	if err != nil {
		panic(err)
	}
	return pi.Quo(pi, big.NewFloat(2))
}()

// bigSinCos returns sin x and cos x to about 240 bits with math/big: x is
// reduced by a 256-bit π/2 and the Taylor series summed until its terms
// vanish. It is the yardstick for SinCos.
func bigSinCos(x float64) (sin, cos float64) {
	const prec = 256
	nf := func() *big.Float { return new(big.Float).SetPrec(prec) }
	halfPi := bigHalfPi
	xb := nf().SetFloat64(x)
	q := nf().Quo(xb, halfPi)
	q.Add(q, nf().SetFloat64(0.5))
	k, _ := q.Int(nil)
	if q.Sign() < 0 && !q.IsInt() {
		k.Sub(k, big.NewInt(1)) // floor for negatives
	}
	r := nf().Sub(xb, nf().Mul(nf().SetInt(k), halfPi))
	r2 := nf().Mul(r, r)
	s, c := nf().Set(r), nf().SetInt64(1)
	ts, tc := nf().Set(r), nf().SetInt64(1)
	for n := 1; n < 80; n++ {
		ts.Mul(ts, r2)
		ts.Quo(ts, nf().SetInt64(int64((2*n)*(2*n+1))))
		ts.Neg(ts)
		s.Add(s, ts)
		tc.Mul(tc, r2)
		tc.Quo(tc, nf().SetInt64(int64((2*n-1)*(2*n))))
		tc.Neg(tc)
		c.Add(c, tc)
	}
	sf, _ := s.Float64()
	cf, _ := c.Float64()
	switch new(big.Int).And(k, big.NewInt(3)).Int64() {
	case 0:
		return sf, cf
	case 1:
		return cf, -sf
	case 2:
		return -sf, -cf
	default:
		return -cf, sf
	}
}

// TestSinCosAccuracy: SinCos is within 3.3e-16 of the exact sine and
// cosine over its domain: random arguments at every scale up to 2^24, the
// YaRN table's angles p·f (integer positions times frequencies in (0, 1]),
// and the doubles nearest multiples of π/2, where the reduction matters
// most.
func TestSinCosAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	xs := []float64{0, 0x1p-30, 0.5, math.Pi / 4, math.Pi / 2, math.Pi, 3 * math.Pi / 2, 2 * math.Pi, 1e6, SinCosMax, -SinCosMax, -1, -math.Pi}
	for i := 0; i < 4000; i++ {
		xs = append(xs, math.Ldexp(r.Float64(), r.IntN(25)))
		xs = append(xs, float64(float64(r.IntN(1<<20))*math.Ldexp(r.Float64()+0.5, -r.IntN(20))))
		k := float64(r.IntN(1 << 24 / 2))
		xs = append(xs, k*math.Pi/2, math.Nextafter(k*math.Pi/2, math.Inf(1)))
	}
	worst := 0.0
	for _, x := range xs {
		if math.Abs(x) > SinCosMax {
			continue
		}
		s, c := SinCos(x)
		ws, wc := bigSinCos(x)
		d := math.Max(math.Abs(s-ws), math.Abs(c-wc))
		worst = math.Max(worst, d)
		if d > 3.3e-16 {
			t.Errorf("SinCos(%v) = (%v, %v), exact (%v, %v): |d| = %g", x, s, c, ws, wc, d)
		}
	}
	t.Logf("SinCos worst absolute error %g over %d arguments", worst, len(xs))
}

func TestSinCosExactAndOutOfDomain(t *testing.T) {
	if s, c := SinCos(0); s != 0 || c != 1 {
		t.Errorf("SinCos(0) = (%v, %v), want (0, 1)", s, c)
	}
	for _, x := range []float64{math.Nextafter(SinCosMax, math.Inf(1)), -2 * SinCosMax, math.Inf(1), math.Inf(-1), math.NaN()} {
		if s, c := SinCos(x); !math.IsNaN(s) || !math.IsNaN(c) {
			t.Errorf("SinCos(%v) = (%v, %v), want NaN outside |x| ≤ 2^24", x, s, c)
		}
	}
}
