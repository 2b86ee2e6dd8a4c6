package normrope

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// TestReferenceHandWorked checks stored bytes derived by hand.
func TestReferenceHandWorked(t *testing.T) {
	ident := [][]float32{rotRow(1, 0), rotRow(0, 1)} // position 0: identity; 1: quarter turn
	two := []float64{2, 2}                           // x_0 = x_1 = 2, the rest 0

	t.Run("fp8-plain-hadamard", func(t *testing.T) {
		// rms: mean(x²) = 8/128 = 1/16, r = 1/sqrt(1/16 + 1e-6) = 4/sqrt(1.000016);
		// y_0 = y_1 = 2r ≈ 8(1 − 8e-6), the rest 0; RoPE at position 0 is the identity.
		// Hadamard: z_k = (y_0 + (−1)^(k&1) y_1)/sqrt(128): even k → 4r/sqrt(128) =
		// 16/(8√2)·(1 − 8e-6) = √2(1 − 8e-6); odd k → 0.
		// amax = √2(1 − 8e-6) ≈ 1.4142, scale = amax/448 ≈ 0.0031567 (stored as f32);
		// codes: even k → z/scale = 448 → 0x7E, odd k → 0 → 0x00.
		// P = 2, out_loc 3 → page 1, offset 1: codes at 1·264 + 1·128 = 392,
		// scale at 1·264 + 128·2 + 1·4 = 524.
		p := config(NormRMS, StyleNeox, 0, true, StoreFP8, ScalePlain, 2, 2)
		c := handCase(p, [][]float64{two}, nil, nil, ident, []int64{0}, []int64{3})
		cache := reference(t, c)
		for k := 0; k < Dim; k++ {
			want := uint8(0x7E)
			if k%2 == 1 {
				want = 0x00
			}
			if got := cache.Data[392+k]; got != want {
				t.Errorf("code %d = 0x%02x, want 0x%02x", k, got, want)
			}
		}
		r := 1 / math.Sqrt(1.0/16+float64(float32(1e-6)))
		scale := float32(4 * r / math.Sqrt(128) / 448)
		if got := binary.LittleEndian.Uint32(cache.Data[524:]); got != math.Float32bits(scale) {
			t.Errorf("scale bits 0x%08x (%g), want 0x%08x (%g)", got, math.Float32frombits(got), math.Float32bits(scale), scale)
		}
		assertCanaryOutside(t, c, cache)
	})

	t.Run("fp8-ue8m0-hadamard", func(t *testing.T) {
		// As above, scale 0.0031567 rounds up to 2^-8 = 0.00390625 (bits 0x3B800000);
		// even k: 1.41420/2^-8 = 362.03, between the e4m3 values 352 and 384 (step 32 in
		// [256, 512)) → 352 = 1.375·2^8: exponent 8+7 = 15, fraction 3 → 0x7B. P = 1, slot 0.
		p := config(NormRMS, StyleNeox, 0, true, StoreFP8, ScaleUE8M0, 1, 1)
		c := handCase(p, [][]float64{two}, nil, nil, ident, []int64{0}, []int64{0})
		cache := reference(t, c)
		for k := 0; k < Dim; k++ {
			want := uint8(0x7B)
			if k%2 == 1 {
				want = 0
			}
			if cache.Data[k] != want {
				t.Errorf("code %d = 0x%02x, want 0x%02x", k, cache.Data[k], want)
			}
		}
		if got := binary.LittleEndian.Uint32(cache.Data[128:]); got != 0x3B800000 {
			t.Errorf("scale bits 0x%08x, want 0x3B800000 (2^-8)", got)
		}
	})

	t.Run("bf16-hadamard-single", func(t *testing.T) {
		// x_0 = 2: r = 1/sqrt(4/128 + 1e-6) = √32/sqrt(1.000032), y_0 = 2r;
		// z_k = 2r/sqrt(128) = 1/sqrt(1.000032) ≈ 0.999984 for every k, which rounds to
		// bf16 1.0 (0x3F80; the next value down is 1 − 2^-8). P = 1, slot 1 → byte 256.
		p := config(NormRMS, StyleInterleaved, 64, true, StoreBF16, ScalePlain, 1, 2)
		c := handCase(p, [][]float64{{2}}, nil, nil, ident, []int64{0}, []int64{1})
		cache := reference(t, c)
		for k := 0; k < Dim; k++ {
			if got := binary.LittleEndian.Uint16(cache.Data[256+2*k:]); got != 0x3F80 {
				t.Errorf("value %d = 0x%04x, want 0x3F80", k, got)
			}
		}
		assertCanaryOutside(t, c, cache)
	})

	t.Run("bf16-layer-rope-quarter-turn", func(t *testing.T) {
		// x = +1, −1, +1, … : mean 0, variance 1, r = 1/sqrt(1 + 1e-6) ≈ 1 − 5e-7, so
		// y = ±(1 − 5e-7) (w = 1, b = 0), bf16 ±1. Position 1 rotates every pair by a
		// quarter turn, (a, b) → (−b, a): interleaved on [64, 128) the pair (+1, −1)
		// becomes (+1, +1). Dims 0–63 keep ±1 (0x3F80, 0xBF80), dims 64–127 are all
		// 0x3F80. Token 1 has out_loc −1 and writes nothing.
		row := make([]float64, Dim)
		for i := range row {
			row[i] = 1 - 2*float64(i%2)
		}
		p := config(NormLayer, StyleInterleaved, 64, false, StoreBF16, ScalePlain, 1, 3)
		c := handCase(p, [][]float64{row, row}, nil, nil, ident, []int64{1, 1}, []int64{2, -1})
		cache := reference(t, c)
		for k := 0; k < Dim; k++ {
			want := uint16(0x3F80)
			if k < 64 && k%2 == 1 {
				want = 0xBF80
			}
			if got := binary.LittleEndian.Uint16(cache.Data[512+2*k:]); got != want {
				t.Errorf("value %d = 0x%04x, want 0x%04x", k, got, want)
			}
		}
		assertCanaryOutside(t, c, cache)
	})
}

// assertCanaryOutside fails if any byte outside the written slots changed.
func assertCanaryOutside(t *testing.T, c *difftest.Case, cache *difftest.Tensor) {
	t.Helper()
	if msg := canaryViolation(c, cache); msg != "" {
		t.Error(msg)
	}
}

func TestRopeIdentityAtPositionZero(t *testing.T) {
	for _, model := range []string{ModelV32, ModelV4} {
		row, _ := FreqsTable(model, 1)
		for _, style := range []string{StyleNeox, StyleInterleaved} {
			for _, off := range []int{0, 64} {
				var y, orig [Dim]float64
				for i := range y {
					y[i] = math.Sin(float64(i)*1.7) * 3
				}
				orig = y
				ropeF64(style, off, row, &y)
				if y != orig {
					t.Errorf("%s %s@%d: RoPE at position 0 changed the vector", model, style, off)
				}
			}
		}
	}
}

func TestRopePairs(t *testing.T) {
	// A quarter turn (c, s) = (0, 1) maps (a, b) → (−b, a); with y_i = i the
	// rotated dims show which index each pairs with.
	tests := []struct {
		style string
		off   int
		i     int
		want  float64
	}{
		{StyleNeox, 0, 0, -32},         // pair (0, 32): a' = −y_32
		{StyleNeox, 0, 32, 0},          // b' = a = y_0
		{StyleNeox, 64, 95, -127},      // pair (95, 127)
		{StyleInterleaved, 0, 0, -1},   // pair (0, 1)
		{StyleInterleaved, 64, 65, 64}, // pair (64, 65): b' = y_64
		{StyleInterleaved, 64, 10, 10}, // outside [64, 128): untouched
		{StyleNeox, 0, 100, 100},       // outside [0, 64): untouched
	}
	for _, tc := range tests {
		var y [Dim]float64
		for i := range y {
			y[i] = float64(i)
		}
		ropeF64(tc.style, tc.off, rotRow(0, 1), &y)
		if y[tc.i] != tc.want {
			t.Errorf("%s@%d: y[%d] = %g, want %g", tc.style, tc.off, tc.i, y[tc.i], tc.want)
		}
	}
}

func TestHadamard(t *testing.T) {
	var y, orig [Dim]float64
	for i := range y {
		y[i] = math.Cos(float64(i)*0.37) * float64(i%7+1)
	}
	orig = y
	hadamardF64(&y)
	// Natural order: z_k = 128^-½ Σ_j (−1)^popcount(j&k) y_j, checked directly.
	for _, k := range []int{0, 1, 5, 64, 127} {
		var s float64
		for j := range orig {
			if popParity(j & k) {
				s -= orig[j]
			} else {
				s += orig[j]
			}
		}
		if want := s / math.Sqrt(128); math.Abs(y[k]-want) > 1e-12 {
			t.Errorf("z_%d = %g, want %g", k, y[k], want)
		}
	}
	hadamardF64(&y)
	for i := range y {
		if math.Abs(y[i]-orig[i]) > 1e-13 {
			t.Fatalf("H(H(y))[%d] = %g, want %g", i, y[i], orig[i])
		}
	}
}

func TestBF16StoreOfExactVector(t *testing.T) {
	// RMSNorm of x = ±1 is ±1/sqrt(1 + 1e-6); with weight sqrt(1 + 1e-6) rounded to
	// f32 the product is within 2^-24 of ±1 and rounds to exactly ±1 in bf16; no
	// Hadamard, position 0. The stored bytes must be exactly bf16(±1).
	row := make([]float64, Dim)
	for i := range row {
		row[i] = float64(1 - 2*(i/3%2))
	}
	w := make([]float32, Dim)
	for i := range w {
		w[i] = float32(math.Sqrt(1 + float64(float32(1e-6))))
	}
	p := config(NormRMS, StyleNeox, 0, false, StoreBF16, ScalePlain, 4, 1)
	c := handCase(p, [][]float64{row}, w, nil, [][]float32{rotRow(1, 0)}, []int64{0}, []int64{2})
	cache := reference(t, c)
	for k := 0; k < Dim; k++ {
		if got := binary.LittleEndian.Uint16(cache.Data[512+2*k:]); got != numeric.BF16FromF64(row[k]) {
			t.Errorf("value %d = 0x%04x, want 0x%04x", k, got, numeric.BF16FromF64(row[k]))
		}
	}
}
