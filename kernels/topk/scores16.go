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

// key16Of is the selection key of 16-bit score bits: Key16 in the high
// half of a uint32, so the reference's four-digit radix select, the check
// and the mutants rank 16-bit rows with the same code as f32 rows (the
// low two digits are zero; two keys tie exactly when the bit patterns
// are equal).
func key16Of(bits uint16) uint32 { return uint32(numeric.Key16(bits)) << 16 }

// keys16 fills dst (its length is the number of positions) with key16Of
// of scores[b][0:len(dst)].
func (v *view) keys16(b int, dst []uint32) []uint32 {
	base := b * v.p.Stride
	for i := range dst {
		dst[i] = key16Of(v.scores.U16(base + i))
	}
	return dst
}

// describeScore formats score bits as the check's messages show them:
// "f32 0x3f800000 = 1", "bf16 0x3f80 = 1" or "f16 0x3c00 = 1".
func (v *view) describeScore(bits uint32) string {
	switch v.p.ScoreDType {
	case ScoreBF16:
		return fmt.Sprintf("bf16 %#04x = %s", bits, fmtF32(numeric.BF16ToF32(uint16(bits))))
	case ScoreF16:
		return fmt.Sprintf("f16 %#04x = %s", bits, fmtF32(numeric.F16ToF32(uint16(bits))))
	}
	return describeBits(bits)
}

// describeKey formats the score whose selection key is key.
func (v *view) describeKey(key uint32) string {
	if v.p.wide16() {
		return v.describeScore(uint32(numeric.Key16Bits(uint16(key >> 16))))
	}
	return describeBits(numeric.Key32Bits(key))
}

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

// wideBits returns scores[b][i] as f32 bits: the f32 bits themselves, or
// the exact widening of a bf16 or f16 score (a NaN keeps its sign and
// payload), so the shrinker and literal entries handle every dtype as
// f32 bits; narrowBits inverts it.
func (v *view) wideBits(b, i int) uint32 {
	x := v.bits(b, i)
	if v.p.wide16() {
		return widen16(v.p.ScoreDType, uint16(x))
	}
	return x
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
