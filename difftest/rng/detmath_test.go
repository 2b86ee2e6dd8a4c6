package rng

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
		e := ulpErr(ln(x), bigLn(x))
		if e > worst {
			worst = e
		}
		if e > 2 {
			t.Errorf("ln(%v) = %v, %.2f ULP from exact", x, ln(x), e)
		}
	}
	if ln(1) != 0 {
		t.Errorf("ln(1) = %v, want 0", ln(1))
	}
	t.Logf("ln worst error %.3f ULP", worst)
}

// TestCos2piAccuracy: cos2pi(b) is within 2.5e-16 of cos(2π·b/2^32),
// computed with math/big-exact angles reduced by hand; exact at the
// quarter turns.
func TestCos2piAccuracy(t *testing.T) {
	exact := map[uint32]float64{0: 1, 1 << 30: 0, 1 << 31: -1, 3 << 30: 0}
	for b, want := range exact {
		if got := cos2pi(b); got != want {
			t.Errorf("cos2pi(%#x) = %v, want %v", b, got, want)
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
		d := math.Abs(cos2pi(b) - want)
		if d > worst {
			worst = d
		}
		if d > 2.5e-16 {
			t.Errorf("cos2pi(%#x) = %v, want %v (|d| = %g)", b, cos2pi(b), want, d)
		}
	}
	t.Logf("cos2pi worst absolute error %g", worst)
}
