// Philox4x32-10: the counter-based generator of J. K. Salmon, M. A. Moraes,
// R. O. Dror and D. E. Shaw, "Parallel Random Numbers: As Easy as 1, 2, 3",
// SC 2011 (multipliers, Weyl key schedule, 10 rounds; the variant
// that cuRAND and the Random123 library ship).

package rng

import "math/bits"

const (
	philoxM0 = 0xD2511F53 // round multiplier applied to word 0
	philoxM1 = 0xCD9E8D57 // round multiplier applied to word 2
	philoxW0 = 0x9E3779B9 // key-schedule increment of key word 0 (golden ratio)
	philoxW1 = 0xBB67AE85 // key-schedule increment of key word 1 (sqrt(3) − 1)
)

// Philox4x32 returns the Philox4x32-10 block for counter ctr and key key:
// ten rounds of
//
//	hi0, lo0 = M0 · ctr[0];  hi1, lo1 = M1 · ctr[2]
//	ctr = (hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0)
//
// with the key bumped by (W0, W1) between rounds. It is a bijection of the
// counter for a fixed key. Known answers (docs/running.md): counter 0, key 0
// gives 6627e8d5 e169c58d bc57ac4c 9b00dbd8.
func Philox4x32(ctr [4]uint32, key [2]uint32) [4]uint32 {
	for r := 0; r < 10; r++ {
		if r > 0 {
			key[0] += philoxW0
			key[1] += philoxW1
		}
		hi0, lo0 := bits.Mul32(philoxM0, ctr[0])
		hi1, lo1 := bits.Mul32(philoxM1, ctr[2])
		ctr = [4]uint32{hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0}
	}
	return ctr
}
