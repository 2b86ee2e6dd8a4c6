package numeric

import (
	"math"
	"testing"
)

// TestBF16FromF32 covers each rounding class by hand: the low 16 bits
// below, at and above the tie, with an even and an odd kept part, the
// carry into the exponent and into inf, subnormals, zeros and NaNs.
func TestBF16FromF32(t *testing.T) {
	tests := []struct {
		in     uint32
		want   uint16
		reason string
	}{
		{0x3F800000, 0x3F80, "1.0 is exact"},
		{0x3F807FFF, 0x3F80, "just below the tie rounds down"},
		{0x3F808000, 0x3F80, "tie with even kept part (0x3F80) stays"},
		{0x3F818000, 0x3F82, "tie with odd kept part (0x3F81) rounds up to even"},
		{0x3F808001, 0x3F81, "just above the tie rounds up"},
		{0x3FFF8000, 0x4000, "tie at 0x3FFF carries into the exponent: 2.0"},
		{0x7F7F7FFF, 0x7F7F, "largest finite below the overflow tie stays finite"},
		{0x7F7F8000, 0x7F80, "overflow tie (odd 0x7F7F) rounds to +inf"},
		{0xFF7F8000, 0xFF80, "negative overflow tie rounds to -inf"},
		{0x7F7FFFFF, 0x7F80, "f32 max rounds to +inf"},
		{0x7F800000, 0x7F80, "+inf stays"},
		{0xFF800000, 0xFF80, "-inf stays"},
		{0x00000000, 0x0000, "+0"},
		{0x80000000, 0x8000, "-0 keeps its sign"},
		{0x00000001, 0x0000, "smallest f32 subnormal rounds to +0"},
		{0x80000001, 0x8000, "smallest negative subnormal rounds to -0"},
		{0x00008000, 0x0000, "subnormal tie to even zero"},
		{0x00018000, 0x0002, "subnormal tie with odd kept part rounds up"},
		{0x007FFFFF, 0x0080, "largest f32 subnormal rounds up to the smallest normal"},
		{0x7FC00000, 0x7FC0, "quiet NaN"},
		{0xFFC00000, 0xFFC0, "negative quiet NaN keeps its sign"},
		{0x7F800001, 0x7FC0, "signalling NaN whose payload truncates to inf becomes quiet NaN, not inf"},
		{0xFFA00000, 0xFFC0, "negative signalling NaN"},
	}
	for _, tc := range tests {
		if got := BF16FromF32(math.Float32frombits(tc.in)); got != tc.want {
			t.Errorf("BF16FromF32(%08x) = %04x, want %04x: %s", tc.in, got, tc.want, tc.reason)
		}
	}
}

// TestBF16FromF64 checks the single rounding from f64, where rounding via
// f32 would round twice, and the overflow threshold 2^128·(1 − 2^-9).
func TestBF16FromF64(t *testing.T) {
	tests := []struct {
		in     float64
		want   uint16
		reason string
	}{
		{1 + 0x1p-8 + 0x1p-30, 0x3F81, "just above a tie; via f32 it would become the tie and round to 0x3F80"},
		{1 + 0x1p-8, 0x3F80, "exact tie, even kept part"},
		{1 + 0x1p-8 - 0x1p-52, 0x3F80, "just below the tie"},
		{1 + 3*0x1p-8, 0x3F82, "tie with odd kept part rounds up"},
		{0x1p128 * (1 - 0x1p-9), 0x7F80, "the overflow tie rounds to +inf"},
		{0x1p128*(1-0x1p-9) - 0x1p90, 0x7F7F, "just below the overflow tie stays at the largest finite"},
		{-0x1p200, 0xFF80, "beyond f32 range: -inf"},
		{math.Inf(1), 0x7F80, "+inf"},
		{0x1p-133, 0x0001, "smallest bf16 subnormal"},
		{0x1p-134, 0x0000, "half the smallest subnormal: tie to even zero"},
		{0x1p-134 + 0x1p-180, 0x0001, "just above that tie"},
		{-0x1p-300, 0x8000, "f64-only tiny negative rounds to -0"},
		{math.NaN(), 0x7FC0, "NaN"},
		{math.Copysign(math.NaN(), -1), 0xFFC0, "negative NaN keeps its sign"},
	}
	for _, tc := range tests {
		if got := BF16FromF64(tc.in); got != tc.want {
			t.Errorf("BF16FromF64(%v) = %04x, want %04x: %s", tc.in, got, tc.want, tc.reason)
		}
	}
}

// TestBF16RoundTrip: every non-NaN bf16 value converts back to itself from
// f32 and from f64.
func TestBF16RoundTrip(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		b := uint16(i)
		if BF16IsNaN(b) {
			continue
		}
		if got := BF16FromF32(BF16ToF32(b)); got != b {
			t.Fatalf("BF16FromF32(BF16ToF32(%04x)) = %04x", b, got)
		}
		if got := BF16FromF64(BF16ToF64(b)); got != b {
			t.Fatalf("BF16FromF64(BF16ToF64(%04x)) = %04x", b, got)
		}
	}
}
