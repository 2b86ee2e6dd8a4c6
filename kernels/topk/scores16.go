// 16-bit scores (docs/contracts/topk_transform.md, "16-bit scores"): the
// score_dtype parameter, the Key16 order of bf16 and f16 scores, and the
// conversions the generator and the diagnostics use.

package topk

import (
	"fmt"
	"math"
	"strconv"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// Score dtypes (Params.ScoreDType, suite param "dtype").
const (
	ScoreF32  = "f32"  // scores F32, key32 order (the default; stored as "" in Params)
	ScoreBF16 = "bf16" // scores BF16, Key16 order
	ScoreF16  = "f16"  // scores F16 (IEEE binary16), Key16 order
)

// checkScoreDType accepts "", "f32", "bf16" and "f16"; the error is a
// *difftest.InputError on score_dtype.
func checkScoreDType(d string) error {
	switch d {
	case "", ScoreF32, ScoreBF16, ScoreF16:
		return nil
	}
	return difftest.Inputf("score_dtype", nil, "must be %q, %q or %q, got %q", ScoreF32, ScoreBF16, ScoreF16, d)
}

// wide16 reports whether the scores are 16-bit (bf16 or f16).
func (p Params) wide16() bool { return p.ScoreDType == ScoreBF16 || p.ScoreDType == ScoreF16 }

// scoresDType is the tensor dtype of scores: F32, BF16 or F16. An unknown
// score_dtype gives F32 (checkScoreDType rejects it first).
func (p Params) scoresDType() difftest.DType {
	switch p.ScoreDType {
	case ScoreBF16:
		return difftest.BF16
	case ScoreF16:
		return difftest.F16
	}
	return difftest.F32
}

// scoresDTypeOf is scoresDType of c's params (F32 when they are not
// topk.Params; Validate reports that first).
func scoresDTypeOf(c *difftest.Case) difftest.DType {
	if p, err := paramsOf(c); err == nil {
		return p.scoresDType()
	}
	return difftest.F32
}

// key16Of is the selection key of 16-bit score bits: key32 of the exact
// f32 widening. Widening is monotone and injective on both sign-magnitude
// formats (NaN payloads included), so this ranks exactly as
// numeric.Key16 does (TestKey16OfOrder checks all 65,536 patterns of
// each format), and the reference's radix select, the check, the
// variants and the mutants rank 16-bit rows with the f32 code.
func key16Of(dtype string, bits uint16) uint32 { return numeric.Key32(widen16(dtype, bits)) }

// keys16 fills dst (its length is the number of positions) with key16Of
// of scores[b][0:len(dst)].
func (v *view) keys16(b int, dst []uint32) []uint32 {
	base := b * v.p.Stride
	for i := range dst {
		dst[i] = key16Of(v.p.ScoreDType, v.scores.U16(base+i))
	}
	return dst
}

// describeScore formats score bits (view.bits: f32 bits, widened for
// 16-bit scores) as the check's messages show them: "f32 0x3f800000 =
// 1", "bf16 0x3f80 = 1" or "f16 0x3c00 = 1".
func (v *view) describeScore(bits uint32) string {
	switch v.p.ScoreDType {
	case ScoreBF16, ScoreF16:
		return fmt.Sprintf("%s %#04x = %s", v.p.ScoreDType, narrowBits(v.p.ScoreDType, bits), fmtF32(math.Float32frombits(bits)))
	}
	return describeBits(bits)
}

// describeKey formats the score whose selection key is key.
func (v *view) describeKey(key uint32) string { return v.describeScore(numeric.Key32Bits(key)) }

func fmtF32(f float32) string { return strconv.FormatFloat(float64(f), 'g', -1, 32) }

// narrow16 converts the f32 bits a family drew to the case's 16-bit
// format, rounding to nearest even (NaNs keep their sign and stay NaN).
func narrow16(dtype string, x uint32) uint16 {
	f := math.Float32frombits(x)
	if dtype == ScoreF16 {
		return numeric.F16FromF32(f)
	}
	return numeric.BF16FromF32(f)
}

// Past-length fill of 16-bit rows: +NaN at even positions, +inf at odd,
// the two highest Key16 keys of their class (as pastEvenBits and
// pastOddBits for f32).
func pastFill16(dtype string, odd bool) uint16 {
	switch {
	case dtype == ScoreF16 && odd:
		return 0x7C00
	case dtype == ScoreF16:
		return 0x7E00
	case odd:
		return 0x7F80
	}
	return 0x7FC0
}

// widen16 returns the f32 bits of the exact value of a bf16 or f16
// pattern (NaNs keep sign and payload).
func widen16(dtype string, x uint16) uint32 {
	if dtype == ScoreF16 {
		return math.Float32bits(numeric.F16ToF32(x))
	}
	return uint32(x) << 16
}

// narrowBits converts f32 bits to the 16-bit format: exact for every
// widen16 result (NaNs included), round to nearest even for other
// values; a NaN keeps its sign and the top of its payload (never zero).
func narrowBits(dtype string, x uint32) uint16 {
	if x&0x7FFFFFFF > 0x7F800000 { // NaN
		sign, frac := uint16(x>>16)&0x8000, x&0x7FFFFF
		if dtype == ScoreF16 {
			if p := uint16(frac >> 13); p != 0 {
				return sign | 0x7C00 | p
			}
			return sign | 0x7C01
		}
		if p := uint16(frac >> 16); p != 0 {
			return sign | 0x7F80 | p
		}
		return sign | 0x7F81
	}
	return narrow16(dtype, x)
}
