package numeric

import (
	"math"
	"testing"
)

// TestUE8M0Ceil: exact powers map to themselves, everything else to the
// next power up, with the scales the fp8 store produces (amax/448 and the
// 1e-4/448 floor of docs/contracts/norm_rope_store.md).
func TestUE8M0Ceil(t *testing.T) {
	tests := []struct {
		in      float64
		want    float64
		wantExp int
		reason  string
	}{
		{1, 1, 0, "exact power 2^0"},
		{0.5, 0.5, -1, "exact power 2^-1"},
		{1024, 1024, 10, "exact power 2^10"},
		{math.Nextafter(1, 2), 2, 1, "one ULP above a power goes up"},
		{math.Nextafter(1, 0), 1, 0, "one ULP below a power stays at it"},
		{3, 4, 2, "between powers"},
		{1e-4 / 448, 0x1p-22, -22, "the scale floor: 2.232e-7 lies in (2^-23, 2^-22]"},
		{448.0 / 448, 1, 0, "amax 448 gives scale 1 exactly"},
		{449.0 / 448, 2, 1, "amax just above 448 needs scale 2"},
		{math.SmallestNonzeroFloat64, 0x1p-1074, -1074, "subnormal power of two"},
		{3 * math.SmallestNonzeroFloat64, 0x1p-1072, -1072, "subnormal non-power"},
		{math.MaxFloat64, math.Inf(1), 1024, "above 2^1023: exponent 1024, value +Inf"},
		{0x1p1023, 0x1p1023, 1023, "largest power of two"},
	}
	for _, tc := range tests {
		got, exp := UE8M0Ceil(tc.in)
		if got != tc.want || exp != tc.wantExp {
			t.Errorf("UE8M0Ceil(%v) = %v, %d, want %v, %d: %s", tc.in, got, exp, tc.want, tc.wantExp, tc.reason)
		}
	}
	for _, bad := range []float64{0, math.Copysign(0, -1), -1, math.Inf(1), math.Inf(-1), math.NaN()} {
		if got, exp := UE8M0Ceil(bad); !math.IsNaN(got) || exp != 0 {
			t.Errorf("UE8M0Ceil(%v) = %v, %d, want NaN, 0", bad, got, exp)
		}
	}
}

// TestUE8M0Code checks the byte range of OCP MX E8M0 and its decoding.
func TestUE8M0Code(t *testing.T) {
	tests := []struct {
		exp    int
		code   uint8
		ok     bool
		reason string
	}{
		{0, 127, true, "scale 1 is the bias"},
		{-22, 105, true, "the 1e-4/448 floor scale"},
		{-127, 0, true, "smallest scale 2^-127"},
		{127, 254, true, "largest scale 2^127"},
		{128, 0xFF, false, "0xFF is NaN: no code for 2^128"},
		{-128, 0xFF, false, "below the range"},
	}
	for _, tc := range tests {
		code, ok := UE8M0Code(tc.exp)
		if code != tc.code || ok != tc.ok {
			t.Errorf("UE8M0Code(%d) = %d, %v, want %d, %v: %s", tc.exp, code, ok, tc.code, tc.ok, tc.reason)
		}
		if ok {
			if v := UE8M0ToF64(code); v != math.Ldexp(1, tc.exp) {
				t.Errorf("UE8M0ToF64(%d) = %v, want 2^%d", code, v, tc.exp)
			}
		}
	}
	if v := UE8M0ToF64(0xFF); !math.IsNaN(v) {
		t.Errorf("UE8M0ToF64(0xFF) = %v, want NaN", v)
	}
}
