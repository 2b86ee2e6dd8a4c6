// Package rng generates the seeded inputs of every case (docs/running.md):
// a Philox4x32-10 counter-based stream keyed by (suite seed, case id), and
// versioned transforms from its 32-bit words to values (uniform, normal,
// special bit patterns).
//
// Every output is a pure function of (key, tensor, block, position in the
// stream) and is bit-identical on every host and Go build: the transforms
// use integer arithmetic, correctly rounded IEEE operations (+, −, ×, ÷,
// math.Sqrt) and explicit float64 conversions that forbid FMA fusion; they
// never call math.Log, math.Sin or math.Cos, whose results differ by
// architecture (package detmath has the deterministic ones).
package rng

// Version identifies the bit-to-value transforms of this package (Uniform,
// Normal, Intn, Perm, the specials lists) and the key derivation of
// CaseKey. Any change to what they return for a given stream bumps it, and
// difftest.GeneratorVersion, which reports record, with it (which also
// moves on its own when a kernel's generator changes).
const Version = 1
