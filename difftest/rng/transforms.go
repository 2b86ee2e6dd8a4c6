// Bit-to-value transforms, version 1 (see Version): uniform from the top
// 24 bits of a word, standard normal by the Box–Muller transform (G. E. P.
// Box and M. E. Muller, "A Note on the Generation of Random Normal
// Deviates", Ann. Math. Statist. 29(2), 1958) in f64, unbiased integers by
// rejection, permutations by Fisher–Yates (Durstenfeld, CACM 7(7), 1964,
// Algorithm 235).

package rng

import (
	"fmt"
	"math"

	"github.com/kerneldiff/kerneldiff/difftest/detmath"
)

// Uniform returns a value in [0, 1) from one word w: (w >> 8) · 2^-24, a
// multiple of 2^-24, so it is exact in float32 as well as float64.
func (s *Stream) Uniform() float64 {
	return float64(s.Uint32()>>8) * 0x1p-24
}

// Normal returns a standard normal deviate from two words a, b (in that
// order):
//
//	u1 = (a + 1) · 2^-32            in (0, 1]
//	z  = sqrt(−2 ln u1) · cos(2π · b/2^32)
//
// computed in f64 with the deterministic detmath.Ln and detmath.Cos2Pi and
// math.Sqrt (correctly rounded), so the bits are the same on every host.
// |z| ≤ sqrt(64 ln 2) ≈ 6.66. Each value is within a few ULP of the exact
// Box–Muller value of (a, b); determinism, not correct rounding, is the
// point. The sine half of the pair is not used, so each call consumes
// exactly two words.
func (s *Stream) Normal() float64 {
	a := s.Uint32()
	b := s.Uint32()
	u1 := float64(uint64(a)+1) * 0x1p-32
	r := math.Sqrt(-2 * detmath.Ln(u1))
	return float64(r * detmath.Cos2Pi(b))
}

// Intn returns a uniform integer in [0, n), without modulo bias: words w
// are drawn until w < 2^32 − (2^32 mod n), and the result is w mod n
// (n ≤ 2^32: one word per attempt; larger n: Uint64 per attempt, with
// 2^64 in place of 2^32). The expected number of attempts is below 2.
// It panics if n ≤ 0, like math/rand/v2.IntN: that is a caller's bug, not
// an input error.
func (s *Stream) Intn(n int) int {
	if n <= 0 {
		panic(fmt.Sprintf("rng: Intn(%d): n must be > 0", n))
	}
	if uint64(n) <= 1<<32 {
		m := uint64(n)
		limit := (1 << 32) - (1<<32)%m
		for {
			w := uint64(s.Uint32())
			if w < limit {
				return int(w % m)
			}
		}
	}
	m := uint64(n)
	limit := -(-m % m) // 2^64 − (2^64 mod m), computed mod 2^64
	for {
		w := s.Uint64()
		if w < limit || limit == 0 {
			return int(w % m)
		}
	}
}

// Perm returns a uniform random permutation of [0, n): the identity
// shuffled by Fisher–Yates from the top, position i swapped with Intn(i+1)
// for i = n−1 down to 1. Perm(0) is empty; it panics if n < 0.
func (s *Stream) Perm(n int) []int {
	if n < 0 {
		panic(fmt.Sprintf("rng: Perm(%d): n must be ≥ 0", n))
	}
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := s.Intn(i + 1)
		p[i], p[j] = p[j], p[i]
	}
	return p
}
