// The block-planar paged cache layout of docs/contracts/norm_rope_store.md step 4 and the
// encodings of one token: FP8 e4m3fn codes with a per-token f32 scale
// (plain, or ue8m0 = rounded up to a power of two, as DeepSeek's
// act_quant with scale_fmt "ue8m0"), or BF16.

package normrope

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// ScaleFloor is the amax floor of the FP8 scale, the f32 constant 1e-4f
// as kernels spell it (bits 0x38D1B717): scale = max(amax, 1e-4)/448.
const ScaleFloor = 9.99999974737875163555145263671875e-05

// slotBytes locates slot's bytes in the cache (SlotBytes, pages packed
// tight). Offsets are in int (64-bit on the hosts Go supports for this
// project).
func slotBytes(p Params, slot int) (codesAt, scaleAt int) {
	c, s := SlotBytes(p.Store, p.PageSize, int64(slot), int64(p.PageBytes()))
	return int(c), int(s)
}

// PageBytes returns the tight bytes of one page of a cache of store with
// page size P: 132·P for FP8 (128 code bytes and a 4-byte f32 scale per
// token), 256·P for BF16, 68·P for FP4 (64 bytes of packed e2m1 codes and
// 4 ue8m0 scale bytes per token). The layout is this kernel's output and
// indexer_logits' input (its page_stride may pad pages: SlotBytes' pitch).
func PageBytes(store string, P int) int {
	switch store {
	case StoreBF16:
		return 2 * Dim * P
	case StoreFP4:
		return (Dim/2 + 4) * P
	}
	return (Dim + 4) * P
}

// SlotBytes locates slot's bytes in a cache of store with page size P (a
// power of two) whose pages lie pitch bytes apart (PageBytes when packed
// tight). page = slot >> log2 P, off = slot & (P−1), base = page·pitch:
//
//	FP8:  codes at base + off·128 (128 bytes),
//	      scale at base + 128P + off·4 (4 bytes, f32 little-endian)
//	BF16: values at base + off·256 (256 bytes, little-endian)
//	FP4:  packed e2m1 codes at base + off·64 (64 bytes),
//	      ue8m0 block scales at base + 64P + off·4 (4 bytes, block b in byte b)
//
// For BF16, scaleAt is −1. Offsets are int64: a cache may exceed 2 GiB.
func SlotBytes(store string, P int, slot, pitch int64) (codesAt, scaleAt int64) {
	page, off := slot>>bits.TrailingZeros(uint(P)), slot&int64(P-1)
	base := page * pitch
	switch store {
	case StoreBF16:
		return base + off*2*Dim, -1
	case StoreFP4:
		return base + off*Dim/2, base + int64(Dim/2*P) + off*4
	}
	return base + off*Dim, base + int64(Dim*P) + off*4
}

// codeBytes returns the bytes of one slot's values at codesAt (slotBytes):
// 128 e4m3fn codes for FP8, 256 for BF16's 128 values, 64 packed e2m1
// bytes for FP4; the scale bytes, where the store has them, are apart.
func codeBytes(p Params) int {
	switch p.Store {
	case StoreBF16:
		return 2 * Dim
	case StoreFP4:
		return Dim / 2
	}
	return Dim
}

// fp8Scale returns the exact FP8 scale of a token whose largest magnitude
// is amax: max(amax, 1e-4)/448, and for ue8m0 the next power of two up,
// 2^ceil(log2 s). NaN amax gives NaN.
func fp8Scale(scaleFmt string, amax float64) float64 {
	s := math.Max(amax, ScaleFloor) / numeric.E4M3Max
	if math.IsNaN(amax) {
		return math.NaN()
	}
	if scaleFmt == ScaleUE8M0 {
		s, _ = numeric.UE8M0Ceil(s)
	}
	return s
}

// storeFP8 writes token z to slot: scale = fp8Scale(max|z|), stored as f32
// (the one rounding of a plain scale; a ue8m0 scale is exact), and codes
// e4m3fn(z_k / scale) with the exact f64 scale, one round-to-nearest-even
// each (the f64 quotient is within 2^-53 of exact), saturating to ±448.
func storeFP8(p Params, cache []byte, slot int, z *[Dim]float64) {
	amax := 0.0
	for _, v := range z {
		if a := math.Abs(v); a > amax || math.IsNaN(a) {
			amax = a
		}
	}
	s := fp8Scale(p.ScaleFmt, amax)
	codesAt, scaleAt := slotBytes(p, slot)
	for k, v := range z {
		cache[codesAt+k] = numeric.E4M3FromF64(v / s)
	}
	binary.LittleEndian.PutUint32(cache[scaleAt:], math.Float32bits(float32(s)))
}

// storeBF16 writes bf16_rne(z_k) to slot, little-endian.
func storeBF16(p Params, cache []byte, slot int, z *[Dim]float64) {
	at, _ := slotBytes(p, slot)
	for k, v := range z {
		binary.LittleEndian.PutUint16(cache[at+2*k:], numeric.BF16FromF64(v))
	}
}
