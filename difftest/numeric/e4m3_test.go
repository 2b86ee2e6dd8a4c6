package numeric

import (
	"math"
	"testing"
)

// TestE4M3FromF64 covers the e4m3fn classes by hand: values and codes from
// the OCP OFP8 spec's E4M3 table, ties in normal and subnormal ranges,
// saturation and NaN.
func TestE4M3FromF64(t *testing.T) {
	tests := []struct {
		in     float64
		want   uint8
		reason string
	}{
		{1, 0x38, "1.0 = S.0111.000"},
		{448, 0x7E, "largest finite S.1111.110"},
		{-448, 0xFE, "negative largest finite"},
		{0x1p-6, 0x08, "smallest normal S.0001.000"},
		{0.875 * 0x1p-6, 0x07, "largest subnormal S.0000.111"},
		{0x1p-9, 0x01, "smallest subnormal"},
		{0x1p-10, 0x00, "half the smallest subnormal: tie to zero"},
		{0x1p-10 + 0x1p-60, 0x01, "just above that tie"},
		{-0x1p-10, 0x80, "negative tie to -0"},
		{3 * 0x1p-10, 0x02, "subnormal tie 1.5·2^-9 rounds to even 2·2^-9"},
		{1.0625, 0x38, "tie between 1 and 1.125: even (1.0)"},
		{1.1875, 0x3A, "tie between 1.125 and 1.25: even (1.25)"},
		{1.0625 + 0x1p-40, 0x39, "just above a tie; via f32 it would be the tie"},
		{0x1p-6 - 0x1p-10, 0x08, "tie between largest subnormal and smallest normal: normal (even)"},
		{449, 0x7E, "above max, rounds to 448 anyway"},
		{464, 0x7E, "tie between 448 and 480: 448 (even, and saturation agrees)"},
		{464 + 0x1p-40, 0x7E, "above the tie: saturates (plain RNE would overflow)"},
		{465, 0x7E, "saturates to 448"},
		{-1e30, 0xFE, "large negative saturates to -448"},
		{math.Inf(1), 0x7E, "+inf saturates"},
		{math.Inf(-1), 0xFE, "-inf saturates"},
		{math.NaN(), 0x7F, "NaN"},
		{math.Copysign(math.NaN(), -1), 0x7F, "negative NaN is 0x7F too (docs/contracts/norm_rope_store.md)"},
		{math.Copysign(0, -1), 0x80, "-0 keeps its sign"},
	}
	for _, tc := range tests {
		if got := E4M3FromF64(tc.in); got != tc.want {
			t.Errorf("E4M3FromF64(%v) = %02x, want %02x: %s", tc.in, got, tc.want, tc.reason)
		}
	}
}

// TestE4M3ToF32 checks hand-decoded codes.
func TestE4M3ToF32(t *testing.T) {
	tests := []struct {
		code   uint8
		want   float32
		reason string
	}{
		{0x00, 0, "+0"},
		{0x01, 0x1p-9, "smallest subnormal"},
		{0x07, 0.875 * 0x1p-6, "largest subnormal"},
		{0x08, 0x1p-6, "smallest normal"},
		{0x38, 1, "one"},
		{0x3B, 1.375, "1.011b"},
		{0x7E, 448, "largest finite"},
		{0xFE, -448, "negative largest finite"},
		{0xC0, -2, "S=1, E=1000, M=000"},
	}
	for _, tc := range tests {
		if got := E4M3ToF32(tc.code); got != tc.want {
			t.Errorf("E4M3ToF32(%02x) = %v, want %v: %s", tc.code, got, tc.want, tc.reason)
		}
	}
	if got := math.Float32bits(E4M3ToF32(0x80)); got != 0x80000000 {
		t.Errorf("E4M3ToF32(0x80) = %08x, want -0", got)
	}
	for _, c := range []uint8{0x7F, 0xFF} {
		if f := E4M3ToF32(c); f == f {
			t.Errorf("E4M3ToF32(%02x) = %v, want NaN", c, f)
		}
	}
}

// TestE4M3RoundTrip: every non-NaN code decodes and re-encodes to itself.
func TestE4M3RoundTrip(t *testing.T) {
	for i := 0; i < 256; i++ {
		c := uint8(i)
		if E4M3IsNaN(c) {
			continue
		}
		if got := E4M3FromF32(E4M3ToF32(c)); got != c {
			t.Errorf("E4M3FromF32(E4M3ToF32(%02x)) = %02x", c, got)
		}
	}
}
