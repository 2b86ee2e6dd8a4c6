package numeric

import (
	"math"
	"testing"
)

// TestF16FromF64 covers binary16 rounding classes by hand.
func TestF16FromF64(t *testing.T) {
	tests := []struct {
		in     float64
		want   uint16
		reason string
	}{
		{1, 0x3C00, "1.0"},
		{1 + 0x1p-11, 0x3C00, "tie with even fraction stays"},
		{1 + 3*0x1p-11, 0x3C02, "tie with odd fraction rounds up"},
		{1 + 0x1p-11 + 0x1p-40, 0x3C01, "just above the tie"},
		{65504, 0x7BFF, "largest finite"},
		{65519.99, 0x7BFF, "below the overflow tie"},
		{65520, 0x7C00, "the overflow tie rounds to +inf"},
		{-65520, 0xFC00, "negative overflow"},
		{0x1p-24, 0x0001, "smallest subnormal"},
		{0x1p-25, 0x0000, "half the smallest subnormal: tie to zero"},
		{0x1p-25 + 0x1p-60, 0x0001, "just above that tie"},
		{3 * 0x1p-25, 0x0002, "subnormal tie with odd quantum count rounds up"},
		{0x1p-14 - 0x1p-25, 0x0400, "tie between largest subnormal and smallest normal goes to the normal (even)"},
		{math.Copysign(0, -1), 0x8000, "-0"},
		{math.Inf(-1), 0xFC00, "-inf"},
		{math.NaN(), 0x7E00, "NaN becomes the quiet NaN"},
		{math.Copysign(math.NaN(), -1), 0xFE00, "negative NaN keeps its sign"},
	}
	for _, tc := range tests {
		if got := F16FromF64(tc.in); got != tc.want {
			t.Errorf("F16FromF64(%v) = %04x, want %04x: %s", tc.in, got, tc.want, tc.reason)
		}
	}
}

// TestF16RoundTrip: every non-NaN binary16 value decodes and re-encodes to
// itself; NaNs decode to NaNs of the same sign.
func TestF16RoundTrip(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := F16ToF32(h)
		if h&0x7FFF > 0x7C00 {
			if f == f || math.Signbit(float64(f)) != (h&0x8000 != 0) {
				t.Fatalf("F16ToF32(%04x) = %v, want a NaN of the same sign", h, f)
			}
			continue
		}
		if got := F16FromF32(f); got != h {
			t.Fatalf("F16FromF32(F16ToF32(%04x)) = %04x", h, got)
		}
	}
}
