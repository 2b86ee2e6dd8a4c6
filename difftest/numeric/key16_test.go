package numeric

import "testing"

// TestKey16Order: a hand-ordered chain of bf16 patterns, each key strictly
// below the next, and the ends of the order.
func TestKey16Order(t *testing.T) {
	chain := []struct {
		bits   uint16
		reason string
	}{
		{0xFFFF, "-NaN with the largest payload is the very bottom"},
		{0xFFC0, "-NaN (quiet)"},
		{0xFF81, "-NaN with the smallest payload, just below -inf"},
		{0xFF80, "-inf"},
		{0xFF7F, "-max finite"},
		{0xBF80, "-1"},
		{0x8001, "-smallest subnormal"},
		{0x8000, "-0"},
		{0x0000, "+0, above -0"},
		{0x0001, "+smallest subnormal"},
		{0x3F80, "1"},
		{0x3F81, "1 + 2^-7"},
		{0x7F7F, "max finite"},
		{0x7F80, "+inf"},
		{0x7F81, "+NaN with the smallest payload"},
		{0x7FC0, "+NaN (quiet)"},
		{0x7FFF, "+NaN with the largest payload is the top"},
	}
	for i := 1; i < len(chain); i++ {
		lo, hi := chain[i-1], chain[i]
		if !(Key16(lo.bits) < Key16(hi.bits)) {
			t.Errorf("Key16(%04x) = %04x not below Key16(%04x) = %04x (%s < %s)", lo.bits, Key16(lo.bits), hi.bits, Key16(hi.bits), lo.reason, hi.reason)
		}
	}
	if Key16(0xFFFF) != 0 || Key16(0x7FFF) != 0xFFFF || Key16(0x8000) != 0x7FFF || Key16(0) != 0x8000 {
		t.Errorf("ends and zeros: %04x %04x %04x %04x", Key16(0xFFFF), Key16(0x7FFF), Key16(0x8000), Key16(0))
	}
}

// TestKey16AgreesWithFloatOrder checks, over all 2^16 × 2^16 pairs drawn
// as every pattern against a stride of patterns, that Key16 orders non-NaN
// bf16 and f16 values as their float values (−0 below +0), agrees with
// Key32 on the widened bf16, and that Key16Bits inverts it.
func TestKey16AgreesWithFloatOrder(t *testing.T) {
	for b := 0; b < 1<<16; b++ {
		u := uint16(b)
		if Key16Bits(Key16(u)) != u {
			t.Fatalf("Key16Bits(Key16(%04x)) = %04x", u, Key16Bits(Key16(u)))
		}
		if got, want := Key16(u), uint16(Key32(uint32(u)<<16)>>16); got != want {
			t.Fatalf("Key16(%04x) = %04x, Key32 of the widened bf16 gives %04x", u, got, want)
		}
	}
	isNaN16 := func(u uint16, f16 bool) bool {
		if f16 {
			return u&0x7C00 == 0x7C00 && u&0x03FF != 0
		}
		return u&0x7F80 == 0x7F80 && u&0x007F != 0
	}
	for _, f16 := range []bool{false, true} {
		val := func(u uint16) float64 {
			if f16 {
				return float64(F16ToF32(u))
			}
			return float64(BF16ToF32(u))
		}
		for a := 0; a < 1<<16; a += 7 {
			for b := 3; b < 1<<16; b += 509 {
				x, y := uint16(a), uint16(b)
				if isNaN16(x, f16) || isNaN16(y, f16) || x == y {
					continue
				}
				vx, vy := val(x), val(y)
				less := vx < vy || (vx == 0 && vy == 0 && x == 0x8000)
				if less != (Key16(x) < Key16(y)) {
					t.Fatalf("f16=%v: %04x (%g) < %04x (%g) is %v, keys say %v", f16, x, vx, y, vy, less, Key16(x) < Key16(y))
				}
			}
		}
	}
}
