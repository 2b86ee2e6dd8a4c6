package normrope

import (
	"math"
	"testing"
)

func TestScaleFloorIsF32(t *testing.T) {
	if ScaleFloor != float64(float32(1e-4)) || math.Float32bits(float32(ScaleFloor)) != 0x38D1B717 {
		t.Errorf("ScaleFloor = %.20g, want float32(1e-4) = %.20g", ScaleFloor, float64(float32(1e-4)))
	}
}

func TestSlotBytes(t *testing.T) {
	fp8 := Params{Store: StoreFP8, PageSize: 64}
	bf16 := Params{Store: StoreBF16, PageSize: 64}
	one := Params{Store: StoreFP8, PageSize: 1}
	tests := []struct {
		p            Params
		slot         int
		codes, scale int
		reason       string
	}{
		{fp8, 0, 0, 8192, "page 0 offset 0: scales follow the page's 64·128 code bytes"},
		{fp8, 63, 63 * 128, 8192 + 63*4, "offset P−1 of page 0"},
		{fp8, 64, 8448, 8448 + 8192, "page 1 starts at 132·64 = 8448"},
		{fp8, 130, 2*8448 + 2*128, 2*8448 + 8192 + 2*4, "page 2 offset 2"},
		{bf16, 65, 16384 + 256, -1, "page 1 (256·64 bytes) offset 1"},
		{one, 5, 5 * 132, 5*132 + 128, "P = 1: each page is one token's codes then its scale"},
	}
	for _, tc := range tests {
		c, s := slotBytes(tc.p, tc.slot)
		if c != tc.codes || s != tc.scale {
			t.Errorf("%s: slotBytes(%d) = (%d, %d), want (%d, %d)", tc.reason, tc.slot, c, s, tc.codes, tc.scale)
		}
	}
}

func TestNonFiniteBF16(t *testing.T) {
	want := []uint16{0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7FA0, 0xFFA0}
	got := nonFiniteBF16()
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("nonFiniteBF16() = %#04x, want %#04x", got, want)
		}
	}
}
