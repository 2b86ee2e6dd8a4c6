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

// SlotBytes with pages pitch bytes apart (indexer_logits' page_stride),
// FP4's layout, and an offset past 2 GiB.
func TestSlotBytesPitch(t *testing.T) {
	tests := []struct {
		store        string
		P            int
		slot, pitch  int64
		codes, scale int64
		reason       string
	}{
		{StoreFP4, 64, 65, 68 * 64, 4352 + 64, 4352 + 4096 + 4, "FP4 page 1 (68·64 = 4352 bytes) offset 1: codes, then the page's 64·64 code bytes and the block scales"},
		{StoreFP4, 64, 65, 4608, 4608 + 64, 4608 + 4096 + 4, "the same slot with pages 4608 bytes apart"},
		{StoreFP8, 2, 3, 300, 300 + 128, 300 + 256 + 4, "FP8 P = 2 page 1 offset 1, pages 300 bytes apart"},
		{StoreBF16, 4, 6, 2048, 2048 + 2*256, -1, "BF16 page 1 offset 2, pages 2048 bytes apart"},
		{StoreFP8, 64, 300000*64 + 1, 8448, 2534400000 + 128, 2534400000 + 8192 + 4, "page 300000 starts past 2 GiB (300000·8448)"},
	}
	for _, tc := range tests {
		c, s := SlotBytes(tc.store, tc.P, tc.slot, tc.pitch)
		if c != tc.codes || s != tc.scale {
			t.Errorf("%s: SlotBytes = (%d, %d), want (%d, %d)", tc.reason, c, s, tc.codes, tc.scale)
		}
	}
	if got := PageBytes(StoreFP4, 64); got != 4352 {
		t.Errorf("PageBytes(fp4, 64) = %d, want 68·64 = 4352", got)
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
