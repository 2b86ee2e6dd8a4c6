package numeric

import (
	"math"
	"testing"
)

// TestKey32Order: the hand-ordered chain of docs/contracts/topk_transform.md, each key strictly
// below the next.
func TestKey32Order(t *testing.T) {
	chain := []struct {
		bits   uint32
		reason string
	}{
		{0xFFFFFFFF, "-NaN with the largest payload is the very bottom"},
		{0xFFC00000, "-NaN (quiet)"},
		{0xFF800001, "-NaN with the smallest payload, just below -inf"},
		{0xFF800000, "-inf"},
		{0xFF7FFFFF, "-max finite"},
		{0xBF800000, "-1"},
		{0x80000001, "-smallest subnormal"},
		{0x80000000, "-0"},
		{0x00000000, "+0, above -0"},
		{0x00000001, "+smallest subnormal"},
		{0x3F800000, "1"},
		{0x7F7FFFFF, "max finite"},
		{0x7F800000, "+inf"},
		{0x7F800001, "+NaN with the smallest payload"},
		{0x7FC00000, "+NaN (quiet)"},
		{0x7FFFFFFF, "+NaN with the largest payload is the top"},
	}
	for i := 1; i < len(chain); i++ {
		lo, hi := chain[i-1], chain[i]
		if !(Key32(lo.bits) < Key32(hi.bits)) {
			t.Errorf("Key32(%08x) = %08x not below Key32(%08x) = %08x (%s < %s)",
				lo.bits, Key32(lo.bits), hi.bits, Key32(hi.bits), lo.reason, hi.reason)
		}
	}
	if Key32(0xFFFFFFFF) != 0 || Key32(0x7FFFFFFF) != 0xFFFFFFFF {
		t.Errorf("the ends of the order must be keys 0 and 0xFFFFFFFF")
	}
	if Key32F(float32(math.Copysign(0, -1))) != 0x7FFFFFFF || Key32F(0) != 0x80000000 {
		t.Errorf("Key32F(-0), Key32F(+0) = %08x, %08x, want 7fffffff, 80000000", Key32F(float32(math.Copysign(0, -1))), Key32F(0))
	}
}

// TestKey32MatchesFloatOrder: on non-NaN values with distinct bits the key
// order is the float order, except -0 < +0; and Key32Bits inverts Key32.
func TestKey32MatchesFloatOrder(t *testing.T) {
	vals := []float32{float32(math.Inf(-1)), -3e38, -1.5, -1, -1e-40, 0, 1e-45, 1e-40, 1, 1.0000001, 3e38, float32(math.Inf(1))}
	for i := range vals {
		for j := range vals {
			a, b := vals[i], vals[j]
			if (a < b) != (Key32F(a) < Key32F(b)) {
				t.Errorf("order of %v, %v: float %v, key %v", a, b, a < b, Key32F(a) < Key32F(b))
			}
		}
	}
	for _, b := range []uint32{0, 1, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF, 0x3F800000, 0xDEADBEEF} {
		if got := Key32Bits(Key32(b)); got != b {
			t.Errorf("Key32Bits(Key32(%08x)) = %08x", b, got)
		}
	}
}
