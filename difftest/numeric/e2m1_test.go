package numeric

import (
	"math"
	"testing"
)

// Hand-worked e2m1 encodings: the grid, every midpoint (ties to the even
// code), values just either side of each midpoint, saturation, signs.
func TestE2M1KnownAnswers(t *testing.T) {
	cases := []struct {
		x    float64
		want uint8
	}{
		{0, 0x0}, {math.Copysign(0, -1), 0x8},
		{0.5, 0x1}, {1, 0x2}, {1.5, 0x3}, {2, 0x4}, {3, 0x5}, {4, 0x6}, {6, 0x7},
		{-0.5, 0x9}, {-1, 0xA}, {-1.5, 0xB}, {-2, 0xC}, {-3, 0xD}, {-4, 0xE}, {-6, 0xF},
		// ties: to the even code
		{0.25, 0x0}, {0.75, 0x2}, {1.25, 0x2}, {1.75, 0x4}, {2.5, 0x4}, {3.5, 0x6}, {5, 0x6},
		{-0.25, 0x8}, {-0.75, 0xA}, {-1.75, 0xC}, {-3.5, 0xE}, {-5, 0xE},
		// either side of the ties
		{math.Nextafter(0.25, 1), 0x1}, {math.Nextafter(0.75, 0), 0x1}, {math.Nextafter(1.25, 2), 0x3},
		{math.Nextafter(1.75, 0), 0x3}, {math.Nextafter(2.5, 3), 0x5}, {math.Nextafter(3.5, 0), 0x5},
		{math.Nextafter(5, 6), 0x7}, {math.Nextafter(5, 0), 0x6},
		// saturation and tiny values
		{6.5, 0x7}, {7, 0x7}, {1e30, 0x7}, {math.Inf(1), 0x7}, {math.Inf(-1), 0xF}, {-100, 0xF},
		{1e-30, 0x0}, {-1e-30, 0x8}, {0.1, 0x0}, {-0.2, 0x8},
		{math.NaN(), 0x7},
	}
	for _, c := range cases {
		if got := E2M1FromF64(c.x); got != c.want {
			t.Errorf("E2M1FromF64(%v) = 0x%X, want 0x%X", c.x, got, c.want)
		}
	}
	for c := uint8(0); c < 16; c++ {
		v := E2M1ToF64(c)
		if back := E2M1FromF64(v); back != c {
			t.Errorf("code 0x%X: value %v encodes back to 0x%X", c, v, back)
		}
		if E2M1ToF64(c|0xF0) != v && !(math.IsNaN(v)) {
			t.Errorf("E2M1ToF64 reads the high nibble of 0x%X", c|0xF0)
		}
	}
	if E2M1ToF64(0x8) != 0 || !math.Signbit(E2M1ToF64(0x8)) {
		t.Errorf("code 0x8 is not -0")
	}
}

// bruteE2M1 is an independent encoder: the nearest of the 15 finite
// values by exact distance, ties to the even code, saturating.
func bruteE2M1(x float64) uint8 {
	best, bestD := uint8(0), math.Inf(1)
	for c := uint8(0); c < 16; c++ {
		d := math.Abs(E2M1ToF64(c) - x)
		if d < bestD || (d == bestD && c&1 == 0 && best&1 == 1) {
			best, bestD = c, d
		}
	}
	mag := best & 7
	if math.Signbit(x) {
		return 8 | mag
	}
	return mag
}

func TestE2M1AgainstBruteForce(t *testing.T) {
	// every f32 value in [−8, 8] with 12 significant bits, plus scaled
	for e := -30; e <= 4; e++ {
		for m := 0; m < 1<<11; m++ {
			x := math.Ldexp(1+float64(m)/(1<<11), e)
			for _, v := range []float64{x, -x} {
				if got, want := E2M1FromF64(v), bruteE2M1(v); got != want {
					t.Fatalf("E2M1FromF64(%v) = 0x%X, brute force 0x%X", v, got, want)
				}
			}
		}
	}
}

func TestE2M1CodeDistance(t *testing.T) {
	for _, c := range []struct {
		a, b uint8
		d    int
	}{{0x0, 0x8, 0}, {0x1, 0x9, 2}, {0x7, 0xF, 14}, {0x5, 0x6, 1}, {0x6, 0x4, 2}} {
		if got := E2M1CodeDistance(c.a, c.b); got != c.d {
			t.Errorf("E2M1CodeDistance(0x%X, 0x%X) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}

func TestUE8M0CeilF32(t *testing.T) {
	for _, c := range []struct {
		s    float32
		want uint8
	}{
		{1, 127}, {2, 128}, {0.5, 126}, {math.Nextafter32(1, 2), 128}, {math.Nextafter32(1, 0), 127},
		{1e-4, 114},    // 1e-4 ≈ 2^-13.29: ceil 2^-13
		{3.0 / 6, 126}, // exact 0.5
		{0, 1}, {math.Float32frombits(1), 1}, {math.Float32frombits(0x00800000), 1}, {math.Float32frombits(0x00800001), 2},
		{0x1p127, 254}, {math.MaxFloat32, 254}, {float32(math.Inf(1)), 254}, {float32(math.NaN()), 254},
		{-2, 128},
	} {
		if got := UE8M0CeilF32(c.s); got != c.want {
			t.Errorf("UE8M0CeilF32(%g) = %d, want %d", c.s, got, c.want)
		}
	}
	// agrees with UE8M0Ceil on positive normal values below 2^127
	for _, s := range []float32{1e-30, 3e-5, 0.3, 0.75, 1.5, 6, 1e10, 0x1p126} {
		_, e := UE8M0Ceil(float64(s))
		if got := UE8M0CeilF32(s); int(got) != 127+e {
			t.Errorf("UE8M0CeilF32(%g) = %d, UE8M0Ceil exponent %d", s, got, e)
		}
	}
}

// TestGoldenE2M1 checks E2M1ToF64 on all 16 codes and E2M1FromF32 on the
// finite inputs of the table against ml_dtypes' float4_e2m1fn, code for
// code (signed zeros included: both keep the sign of a value that rounds
// to zero).
func TestGoldenE2M1(t *testing.T) {
	rows := goldenRows(t, "e2m1.txt", 2)
	if len(rows) < 16+100 {
		t.Fatalf("e2m1: %d rows, want the 16 codes and the encode inputs", len(rows))
	}
	for i, r := range rows[:16] {
		if r[0] != uint64(i) {
			t.Fatalf("e2m1 row %d holds code %x", i, r[0])
		}
		if got := math.Float32bits(float32(E2M1ToF64(uint8(i)))); uint64(got) != r[1] {
			t.Errorf("E2M1ToF64(%x) = %08x, ml_dtypes %08x", i, got, r[1])
		}
	}
	bad := 0
	for _, r := range rows[16:] {
		x := math.Float32frombits(uint32(r[0]))
		if got := E2M1FromF32(x); uint64(got) != r[1] && bad < 10 {
			t.Errorf("E2M1FromF32(%g = %08x) = %x, ml_dtypes %x", x, r[0], got, r[1])
			bad++
		}
	}
}
