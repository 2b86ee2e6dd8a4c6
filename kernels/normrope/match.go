// The diagnosis's matching rule for norm_rope_store (docs/failures.md): a
// candidate's store is an alternative contract, so an implementation that
// reproduces its fault with another f32 summation order, or writes the
// other NaN sign, still behaves like it.

package normrope

import (
	"bytes"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

var _ triage.CandidateMatcher = Kernel{}

// MatchCandidate reports whether got, an implementation's cache, passes
// the own check of the named candidate, whose cache is cand
// (triage.CandidateMatcher). Bytes outside the written slots must be
// equal, as in Match. In every slot of a token whose values are specified
// (Check's don't-care tokens are skipped), each stored value of got must
// equal cand's, be a NaN where cand's is (e4m3 0x7F and 0xFF, any bf16
// NaN: the candidate does not fix the sign; torch's 0/0 has the sign bit),
// or lie one rounding step from it (the neighbouring e4m3 code or bf16
// value of the same sign: the candidate's formula in another f32 order
// rounds to a neighbour near a midpoint); the FP8 scale as sameScale. And
// got must reproduce the candidate's fault: of the elements where cand
// differs from the reference (its signature), got equals cand on at least
// half. So a truncating store in another summation order matches
// bf16-truncate, but a store that rounds to nearest with a larger error
// (a bf16 intermediate) does not.
func (Kernel) MatchCandidate(c *difftest.Case, name string, cand, got []*difftest.Tensor) bool {
	in, err := load(c)
	if err != nil || len(cand) != 1 || len(got) != 1 || checkCache(in.p, cand[0]) != nil || checkCache(in.p, got[0]) != nil {
		return false
	}
	ref := cand[0].Clone()
	copy(ref.Data, got[0].Data) // bytes outside the slots: compared below, never read from ref
	if err := Compute(c, ref); err != nil {
		return false
	}
	p, x, y, r := in.p, cand[0].Data, got[0].Data, ref.Data
	n := codeBytes(p)
	sig, kept := 0, 0
	match := in.matchSlots(x, y, func(_, codesAt, scaleAt int) bool {
		if p.Store == StoreFP4 {
			// Two e2m1 codes a byte under the block scales: the same scale
			// bytes and the same codes (±0 one value). One code step is
			// not given here, as it is for FP8: the FP4 variants differ
			// from each other by just that step at the midpoints (ties to
			// even or toward zero), so a step would name both.
			if !bytes.Equal(x[scaleAt:scaleAt+4], y[scaleAt:scaleAt+4]) {
				return false
			}
			for i := codesAt; i < codesAt+n; i++ {
				for _, sh := range [2]uint{0, 4} {
					a, b, w := x[i]>>sh&0xF, y[i]>>sh&0xF, r[i]>>sh&0xF
					if numeric.E2M1CodeDistance(a, b) != 0 {
						return false
					}
					if a != w {
						sig++
						if a == b {
							kept++
						}
					}
				}
			}
		} else if p.Store == StoreBF16 {
			for i := codesAt; i < codesAt+n; i += 2 {
				a, b, w := le16(x[i:]), le16(y[i:]), le16(r[i:])
				if !nearBF16(a, b) {
					return false
				}
				if a != w {
					sig++
					if a == b {
						kept++
					}
				}
			}
		} else {
			for i := codesAt; i < codesAt+n; i++ {
				if !nearE4M3(x[i], y[i]) {
					return false
				}
				if x[i] != r[i] {
					sig++
					if x[i] == y[i] || e4m3NaN(x[i]) && e4m3NaN(y[i]) {
						kept++
					}
				}
			}
			if !sameScale(p.ScaleFmt, x[scaleAt:scaleAt+4], y[scaleAt:scaleAt+4]) {
				return false
			}
		}
		return true
	})
	return match && 2*kept >= sig
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }

// e4m3NaN reports whether an e4m3fn code is NaN (0x7F or 0xFF).
func e4m3NaN(c uint8) bool { return c&0x7F == 0x7F }

// nearE4M3 reports whether two e4m3fn codes are equal, both NaN, or
// neighbours of one sign (codes one apart; ±0 neighbour the smallest
// subnormal of their sign, and +0/−0 are equal values).
func nearE4M3(a, b uint8) bool { return nearCode(a, b, 0x80, e4m3NaN) }

// nearBF16 is nearE4M3 for bf16 bit patterns.
func nearBF16(a, b uint16) bool { return nearCode(a, b, 0x8000, numeric.BF16IsNaN) }

// nearCode is nearE4M3 and nearBF16 for sign-magnitude codes whose sign
// is the bit sign (the top bit), the rest the magnitude's code in value
// order, and whose NaN codes isNaN names.
func nearCode[T uint8 | uint16](a, b, sign T, isNaN func(T) bool) bool {
	na, nb, mag := isNaN(a), isNaN(b), sign-1
	switch {
	case a == b, na && nb:
		return true
	case na || nb:
		return false
	case a&mag == 0 && b&mag == 0:
		return true
	case a&sign != b&sign:
		return false
	}
	d := int(a&mag) - int(b&mag)
	return d == 1 || d == -1
}
