// An independent reference for the float64 entry points: math/big.Float
// rounding (ToNearestEven) to the target precision, with the precision cut
// by hand in the subnormal range, and the result read back as a float64
// value. It shares no code with roundF64.

package numeric

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// bigRound returns f rounded to nearest-even in a binary format with p
// fraction bits and minimum normal exponent emin, with unbounded exponent
// range above (overflow is the caller's rule). f must be finite.
func bigRound(f float64, p, emin int) float64 {
	if f == 0 {
		return f
	}
	x := new(big.Float).SetFloat64(f)
	exp := x.MantExp(nil) - 1 // 2^exp ≤ |f| < 2^(exp+1)
	qe := emin - p            // quantum of the subnormal range
	prec := p + 1
	if exp < emin {
		prec = exp - qe + 1
	}
	if prec < 1 {
		// |f| < 2^qe: the candidates are 0 and 2^qe.
		half := math.Ldexp(1, qe-1)
		if math.Abs(f) > half {
			return math.Copysign(math.Ldexp(1, qe), f)
		}
		return math.Copysign(0, f)
	}
	z := new(big.Float).SetMode(big.ToNearestEven).SetPrec(uint(prec))
	z.Set(x)
	v, acc := z.Float64()
	if math.IsInf(v, 0) {
		return v // rounded up past MaxFloat64: overflow in every target format
	}
	if acc != big.Exact {
		panic("bigRound: result not a float64")
	}
	return v
}

// checkFromF64 compares the three float64 encoders with bigRound on f.
func checkFromF64(t *testing.T, f float64) {
	t.Helper()
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return // specials are table-tested
	}
	neg := math.Signbit(f)
	same := func(got, want float64) bool {
		return got == want && math.Signbit(got) == math.Signbit(want)
	}

	want := bigRound(f, 7, -126)
	if math.Abs(want) >= 0x1p128 {
		want = math.Inf(1)
		if neg {
			want = math.Inf(-1)
		}
	}
	if got := BF16FromF64(f); !same(BF16ToF64(got), want) {
		t.Errorf("BF16FromF64(%v = %016x) = %04x (%v), math/big %v", f, math.Float64bits(f), got, BF16ToF64(got), want)
	}

	want = bigRound(f, 10, -14)
	if math.Abs(want) >= 0x1p16 {
		want = math.Copysign(math.Inf(1), f)
	}
	if got := F16FromF64(f); !same(float64(F16ToF32(got)), want) {
		t.Errorf("F16FromF64(%v = %016x) = %04x, math/big %v", f, math.Float64bits(f), got, want)
	}

	want = bigRound(f, 3, -6)
	if math.Abs(want) > E4M3Max {
		want = math.Copysign(E4M3Max, f)
	}
	if got := E4M3FromF64(f); !same(float64(E4M3ToF32(got)), want) {
		t.Errorf("E4M3FromF64(%v = %016x) = %02x, math/big %v", f, math.Float64bits(f), got, want)
	}
}

// f64Corpus holds the hardest float64 inputs: exact ties of each format,
// ties plus or minus one float64 ULP (where rounding via float32 goes
// wrong), subnormal boundaries and overflow thresholds.
var f64Corpus = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.1, 1e-300, -1e300, math.MaxFloat64, math.SmallestNonzeroFloat64,
	1 + 0x1p-8, 1 + 0x1p-8 + 0x1p-30, 1 + 0x1p-8 - 0x1p-52, 1 + 3*0x1p-8, 1 + 0x1p-4 + 0x1p-40,
	0x1p-133, 0x1p-134, 0x1p-134 + 0x1p-160, 0x1p-126 - 0x1p-134, 0x1p-126 - 0x1p-135,
	0x1p128, 0x1p128 * (1 - 0x1p-9), 0x1p128*(1-0x1p-9) - 0x1p80, math.MaxFloat32,
	65504, 65520, 65519.99, 0x1p-24, 0x1p-25, 0x1p-25 + 0x1p-60, 0x1p-14 - 0x1p-25,
	448, 464, 464 + 0x1p-40, 465, 0x1p-9, 0x1p-10, 0x1p-10 + 0x1p-60, 0x1p-6 - 0x1p-10, 0x1p-6 - 0x1p-11,
	-0x1p-10, -(0x1p-10 + 0x1p-60), 1.0625, 1.1875, -1.0625 - 0x1p-50,
}

// TestFromF64BigCorpus runs the corpus and a deterministic random sample
// through checkFromF64: random bit patterns, random values at each format's
// ties nudged by a few float64 ULPs, and log-uniform values.
func TestFromF64BigCorpus(t *testing.T) {
	for _, f := range f64Corpus {
		checkFromF64(t, f)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		checkFromF64(t, math.Float64frombits(r.Uint64()))
		// A bf16 tie (a 9-bit significand, odd last bit) nudged by k ULPs.
		tie := math.Ldexp(float64(256+2*r.IntN(128)+1), r.IntN(300)-150-8)
		k := r.IntN(5) - 2
		checkFromF64(t, math.Float64frombits(uint64(int64(math.Float64bits(tie))+int64(k))))
		// An e4m3 tie (a 5-bit significand), in and beyond the range.
		tie = math.Ldexp(float64(16+2*r.IntN(8)+1), r.IntN(30)-14-4)
		checkFromF64(t, math.Float64frombits(uint64(int64(math.Float64bits(tie))+int64(k))))
		checkFromF64(t, -math.Exp2(r.Float64()*60-40))
	}
}

// FuzzFromF64 compares BF16FromF64, F16FromF64 and E4M3FromF64 with the
// math/big reference on arbitrary float64 bit patterns:
//
//	go test ./difftest/numeric -run '^$' -fuzz FuzzFromF64 -fuzztime 10s
func FuzzFromF64(f *testing.F) {
	for _, v := range f64Corpus {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		checkFromF64(t, math.Float64frombits(bits))
	})
}
