// SplitMix64: the generator of G. L. Steele Jr., D. Lea and C. H. Flood,
// "Fast Splittable Pseudorandom Number Generators", OOPSLA 2014 (the
// "mix64" finaliser variant with shifts 30, 27, 31 that java.util's
// SplittableRandom and Vigna's splitmix64.c use), and the case-key
// derivation built on it.

package rng

// golden is SplitMix64's default increment (gamma), 2^64 / φ rounded to odd.
const golden = 0x9E3779B97F4A7C15

// SplitMix64 returns the SplitMix64 output for state x: the finaliser
//
//	z = x + 0x9E3779B97F4A7C15
//	z = (z ^ z>>30) · 0xBF58476D1CE4E5B9
//	z = (z ^ z>>27) · 0x94D049BB133111EB
//	return z ^ z>>31
//
// Iterating the state x += 0x9E3779B97F4A7C15 from 0 gives the sequence
// e220a8397b1dcdaf, 6e789e6aa1b965f4, 06c45d188009454f, ...
func SplitMix64(x uint64) uint64 {
	z := x + golden
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// CaseKey derives the 64-bit Philox key of a case from the suite seed and
// the case id (docs/running.md):
//
//	h   = FNV-1a 64 of the UTF-8 bytes of caseID
//	      (offset basis 0xCBF29CE484222325, prime 0x100000001B3)
//	key = SplitMix64(SplitMix64(seed) ^ h)
//
// Seeding SplitMix64 first keeps nearby seeds from giving nearby keys; the
// outer SplitMix64 mixes the id hash into every key bit. This definition is
// part of the generator version and must never change without bumping
// Version.
func CaseKey(seed uint64, caseID string) uint64 {
	h := uint64(0xCBF29CE484222325)
	for i := 0; i < len(caseID); i++ {
		h ^= uint64(caseID[i])
		h *= 0x100000001B3
	}
	return SplitMix64(SplitMix64(seed) ^ h)
}
