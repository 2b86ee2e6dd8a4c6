package numeric

import "testing"

// TestBF16ULPDistance: distances across zero, at the ends (inf) and NaN.
func TestBF16ULPDistance(t *testing.T) {
	tests := []struct {
		a, b   uint16
		want   int
		reason string
	}{
		{0x3F80, 0x3F80, 0, "equal"},
		{0x3F80, 0x3F81, 1, "neighbours"},
		{0x3F81, 0x3F80, 1, "symmetric"},
		{0x3F7F, 0x3F80, 1, "across a binade"},
		{0x0000, 0x8000, 0, "-0 and +0 are one value"},
		{0x0001, 0x8001, 2, "smallest subnormals of both signs straddle zero"},
		{0x0001, 0x8000, 1, "+min subnormal to -0"},
		{0x7F7F, 0x7F80, 1, "max finite to +inf"},
		{0xFF80, 0x7F80, 2 * 0x7F80, "-inf to +inf spans the whole line"},
		{0xBF80, 0x3F80, 2 * 0x3F80, "-1 to 1"},
		{0x7FC0, 0x3F80, -1, "NaN"},
		{0x3F80, 0xFF81, -1, "negative NaN"},
	}
	for _, tc := range tests {
		if got := BF16ULPDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("BF16ULPDistance(%04x, %04x) = %d, want %d: %s", tc.a, tc.b, got, tc.want, tc.reason)
		}
	}
}

// TestE4M3CodeDistance: distances across zero, at ±448 and NaN codes.
func TestE4M3CodeDistance(t *testing.T) {
	tests := []struct {
		a, b   uint8
		want   int
		reason string
	}{
		{0x38, 0x39, 1, "1.0 to 1.125"},
		{0x00, 0x80, 0, "-0 and +0 are one value"},
		{0x01, 0x81, 2, "smallest subnormals straddle zero"},
		{0x7D, 0x7E, 1, "416 to 448"},
		{0xFE, 0x7E, 2 * 0x7E, "-448 to 448"},
		{0x7F, 0x7E, -1, "NaN"},
		{0x00, 0xFF, -1, "negative NaN code"},
	}
	for _, tc := range tests {
		if got := E4M3CodeDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("E4M3CodeDistance(%02x, %02x) = %d, want %d: %s", tc.a, tc.b, got, tc.want, tc.reason)
		}
	}
}

// TestDistanceIsValueOrder: over all non-NaN bf16 patterns, the distance
// from the smallest (-inf) is monotone in the value, so it counts steps.
func TestDistanceIsValueOrder(t *testing.T) {
	prev := float32(0)
	first := true
	for k := -0x7F80; k <= 0x7F80; k++ {
		var b uint16
		if k < 0 {
			b = 0x8000 | uint16(-k)
		} else {
			b = uint16(k)
		}
		if got := BF16ULPDistance(0xFF80, b); got != k+0x7F80 {
			t.Fatalf("BF16ULPDistance(-inf, %04x) = %d, want %d", b, got, k+0x7F80)
		}
		v := BF16ToF32(b)
		if !first && !(v > prev) {
			t.Fatalf("bf16 %04x = %v not above the previous step %v", b, v, prev)
		}
		prev, first = v, false
	}
}
