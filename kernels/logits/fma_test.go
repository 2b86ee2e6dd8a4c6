package logits

import (
	"math"
	"math/big"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// fma32 against math/big's exact a·b + c rounded once to f32, on random
// operands and on constructed midpoint cases.
func TestFMA32(t *testing.T) {
	exact := func(a, b, c float32) float32 {
		x := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetPrec(200).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetPrec(200).SetFloat64(float64(c)))
		f, _ := x.Float32()
		return f
	}
	st := rng.NewStream(7, 0, 0)
	check := func(a, b, c float32) {
		if got, want := fma32(a, b, c), exact(a, b, c); math.Float32bits(got) != math.Float32bits(want) && !(got == 0 && want == 0) {
			t.Fatalf("fma32(%g, %g, %g) = %g (0x%08x), want %g (0x%08x)", a, b, c, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	// a·b = 2^-24 − 2^-70 and c = 1 + 2^-23: the exact sum lies 2^-70
	// below the midpoint 1 + 2^-23 + 2^-24, which f64 rounds onto; ties to
	// even would then go up. The fused result rounds down.
	a, b, c := float32(0x1p-12*(1+0x1p-23)), float32(0x1p-12*(1-0x1p-23)), float32(1+0x1p-23)
	if got := fma32(a, b, c); got != c {
		t.Errorf("fma32 on an f64 midpoint: %g (0x%08x), want %g", got, math.Float32bits(got), c)
	}
	check(a, b, c)
	check(-a, b, -c)
	for i := 0; i < 200000; i++ {
		a := math.Float32frombits(st.Uint32()&0x807FFFFF | uint32(100+st.Intn(56))<<23)
		b := math.Float32frombits(st.Uint32()&0x807FFFFF | uint32(100+st.Intn(56))<<23)
		c := math.Float32frombits(st.Uint32()&0x807FFFFF | uint32(90+st.Intn(76))<<23)
		check(a, b, c)
		// c chosen so that a·b + c lies near an f32 midpoint: c = −f32(a·b) + tiny.
		p := float32(float64(a) * float64(b))
		check(a, b, -p)
		check(a, b, math.Nextafter32(-p, 0))
	}
}
