package rng

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"

	"github.com/kerneldiff/kerneldiff/difftest/detmath"
	"testing"
)

// TestTransformDigests pins the value transforms. The uniform digest was
// computed independently by testdata/known_answers.py; the normal and
// integer digests come from this package at Version 1 (the Python script
// has no bit-exact ln and cos) and guard against any change of the
// transforms, the deterministic detmath.Ln/Cos2Pi included. A failing digest means
// every generated input changed: bump Version and difftest.GeneratorVersion
// together, then update the digest.
func TestTransformDigests(t *testing.T) {
	key := CaseKey(1, "topk/gaussian-L1000")
	f64s := func(n int, next func() float64) string {
		h := sha256.New()
		var b [8]byte
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint64(b[:], math.Float64bits(next()))
			h.Write(b[:])
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	s := NewStream(key, 1, 7<<32)
	if got, want := f64s(1000, s.Uniform), "cee476f2098151739bc0c21ca25805df06fde2ce7d6c0f0d989152b722d25ccd"; got != want {
		t.Errorf("Uniform digest %s, want %s", got, want)
	}
	s = NewStream(key, 2, 3<<32)
	if got, want := f64s(1000, s.Normal), "d7d602b808c846efdea945944ba71c499af2a669e6f620a9343c0b5706e4e141"; got != want {
		t.Errorf("Normal digest %s, want %s", got, want)
	}
	s = NewStream(key, 4, 0)
	h := sha256.New()
	var b [8]byte
	for _, n := range []int{1, 2, 3, 7, 100, 1000, 1 << 20, 1<<33 + 5} {
		binary.LittleEndian.PutUint64(b[:], uint64(s.Intn(n)))
		h.Write(b[:])
	}
	for _, v := range s.Perm(100) {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		h.Write(b[:])
	}
	if got, want := hex.EncodeToString(h.Sum(nil)), "2ee6ab79170c33b1adf0ab4c13dd48f8419efab7512fd8a3ae043335521b1487"; got != want {
		t.Errorf("Intn/Perm digest %s, want %s", got, want)
	}
}

// TestUniform: values are multiples of 2^-24 in [0, 1), taken from the top
// 24 bits of the next word.
func TestUniform(t *testing.T) {
	a, b := NewStream(42, 0, 0), NewStream(42, 0, 0)
	for i := 0; i < 1000; i++ {
		w := b.Uint32()
		u := a.Uniform()
		if u != float64(w>>8)/(1<<24) || u < 0 || u >= 1 || float64(float32(u)) != u {
			t.Fatalf("Uniform #%d = %v from word %08x", i, u, w)
		}
	}
}

// TestNormalFormula: Normal is the Box–Muller value of its two words, to
// within rounding of math.Log, math.Cos and detmath.Ln/Cos2Pi.
func TestNormalFormula(t *testing.T) {
	a, b := NewStream(7, 0, 0), NewStream(7, 0, 0)
	for i := 0; i < 20000; i++ {
		w1, w2 := b.Uint32(), b.Uint32()
		u1 := (float64(w1) + 1) / (1 << 32)
		want := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*float64(w2)/(1<<32))
		got := a.Normal()
		if d := math.Abs(got - want); d > 1e-14*(1+math.Abs(want)) {
			t.Fatalf("Normal #%d = %v, Box–Muller of (%08x, %08x) = %v", i, got, w1, w2, want)
		}
	}
	// Words (0xFFFFFFFF, 0): u1 = 1, so z = 0 exactly.
	// Words (0, 0): u1 = 2^-32, the largest value sqrt(64 ln 2).
	if got, want := normalOf(0xFFFFFFFF, 0), 0.0; got != want {
		t.Errorf("normal of (ffffffff, 0) = %v, want %v", got, want)
	}
	if got, want := normalOf(0, 0), math.Sqrt(64*math.Ln2); math.Abs(got-want) > 4e-15 {
		t.Errorf("normal of (0, 0) = %v, want %v", got, want)
	}
	if got := normalOf(0, 1<<31); got != -normalOf(0, 0) {
		t.Errorf("half a turn must negate exactly: %v vs %v", got, normalOf(0, 0))
	}
}

// normalOf runs Normal's transform on two given words.
func normalOf(w1, w2 uint32) float64 {
	u1 := float64(uint64(w1)+1) * 0x1p-32
	return float64(math.Sqrt(-2*detmath.Ln(u1)) * detmath.Cos2Pi(w2))
}

// TestNormalMoments: over 200,000 draws the mean, variance and the share
// beyond ±1.96 match the standard normal within 5 standard errors.
func TestNormalMoments(t *testing.T) {
	const n = 200000
	s := NewStream(CaseKey(5, "moments"), 0, 0)
	var sum, sum2 float64
	tail := 0
	for i := 0; i < n; i++ {
		z := s.Normal()
		sum += z
		sum2 += z * z
		if math.Abs(z) > 1.959964 {
			tail++
		}
	}
	mean := sum / n
	variance := sum2/n - mean*mean
	if math.Abs(mean) > 5/math.Sqrt(n) {
		t.Errorf("mean %v, want 0 ± %v", mean, 5/math.Sqrt(n))
	}
	if math.Abs(variance-1) > 5*math.Sqrt(2.0/n) {
		t.Errorf("variance %v, want 1 ± %v", variance, 5*math.Sqrt(2.0/n))
	}
	p := float64(tail) / n
	if se := math.Sqrt(0.05 * 0.95 / n); math.Abs(p-0.05) > 5*se {
		t.Errorf("P(|z| > 1.96) = %v, want 0.05 ± %v", p, 5*se)
	}
}

// TestIntn: results lie in [0, n), every value of a small range appears
// with the right frequency, and the rejection removes modulo bias.
func TestIntn(t *testing.T) {
	s := NewStream(11, 0, 0)
	for _, n := range []int{1, 2, 3, 1000, 1 << 32, 1<<32 + 1, 1 << 62} {
		for i := 0; i < 200; i++ {
			if v := s.Intn(n); v < 0 || v >= n {
				t.Fatalf("Intn(%d) = %d", n, v)
			}
		}
	}
	// n = 3·2^30: plain w mod n would give 0..2^30−1 twice the weight of
	// the rest (2^32 = n + 2^30). With rejection each third has 1/3.
	const n = 3 << 30
	const draws = 60000
	low := 0
	for i := 0; i < draws; i++ {
		if s.Intn(n) < 1<<30 {
			low++
		}
	}
	if p, se := float64(low)/draws, math.Sqrt(2.0/9/draws); math.Abs(p-1.0/3) > 5*se {
		t.Errorf("Intn(3·2^30) below 2^30 with frequency %v, want 1/3 ± %v (biased would be 1/2)", p, 5*se)
	}
	defer func() {
		if recover() == nil {
			t.Error("Intn(0) did not panic")
		}
	}()
	s.Intn(0)
}

// TestPerm: Perm(n) is a permutation; all 6 orders of 3 occur about
// equally; Perm(0) is empty.
func TestPerm(t *testing.T) {
	s := NewStream(12, 0, 0)
	for _, n := range []int{0, 1, 2, 10, 1000} {
		p := s.Perm(n)
		seen := make([]bool, n)
		for _, v := range p {
			if v < 0 || v >= n || seen[v] {
				t.Fatalf("Perm(%d) = %v is not a permutation", n, p)
			}
			seen[v] = true
		}
		if len(p) != n {
			t.Fatalf("Perm(%d) has length %d", n, len(p))
		}
	}
	counts := map[[3]int]int{}
	const draws = 60000
	for i := 0; i < draws; i++ {
		p := s.Perm(3)
		counts[[3]int{p[0], p[1], p[2]}]++
	}
	if len(counts) != 6 {
		t.Fatalf("Perm(3) produced %d distinct orders, want 6", len(counts))
	}
	se := math.Sqrt(draws * (1.0 / 6) * (5.0 / 6))
	for order, c := range counts {
		if math.Abs(float64(c)-draws/6.0) > 5*se {
			t.Errorf("order %v drawn %d times, want %v ± %v", order, c, draws/6.0, 5*se)
		}
	}
}

// TestSpecials checks each listed pattern belongs to its class.
func TestSpecials(t *testing.T) {
	f := SpecialsF32()
	if len(f) != 18 {
		t.Fatalf("SpecialsF32 has %d patterns, want 18", len(f))
	}
	classes := []func(v float64) bool{
		func(v float64) bool { return v == 0 },
		func(v float64) bool { return math.Abs(v) == math.SmallestNonzeroFloat32 },
		func(v float64) bool { return math.Abs(v) == 0x1p-126-0x1p-149 },
		func(v float64) bool { return math.Abs(v) == 0x1p-126 },
		func(v float64) bool { return math.Abs(v) == math.MaxFloat32 },
		func(v float64) bool { return math.IsInf(v, 0) },
		func(v float64) bool { return math.IsNaN(v) },
		func(v float64) bool { return math.IsNaN(v) },
		func(v float64) bool { return math.Abs(v) == 1 },
	}
	for i, b := range f {
		v := float64(math.Float32frombits(b))
		if !classes[i/2](v) || (b>>31 == 1) != (i%2 == 1) {
			t.Errorf("SpecialsF32()[%d] = %08x (%v) is not in class %d with sign %d", i, b, v, i/2, i%2)
		}
		if i/2 == 6 && b&0x00400000 == 0 || i/2 == 7 && b&0x00400000 != 0 {
			t.Errorf("SpecialsF32()[%d] = %08x: wrong quiet bit", i, b)
		}
	}
	bf := SpecialsBF16()
	if len(bf) != len(f) {
		t.Fatalf("SpecialsBF16 has %d patterns, want %d", len(bf), len(f))
	}
	bfClasses := append([]func(v float64) bool(nil), classes...)
	bfClasses[1] = func(v float64) bool { return math.Abs(v) == 0x1p-133 }
	bfClasses[2] = func(v float64) bool { return math.Abs(v) == 0x1p-126-0x1p-133 }
	bfClasses[4] = func(v float64) bool { return math.Abs(v) == 0x1p127*(2-0x1p-7) }
	for i, b := range bf {
		v := float64(math.Float32frombits(uint32(b) << 16))
		if !bfClasses[i/2](v) || (b>>15 == 1) != (i%2 == 1) {
			t.Errorf("SpecialsBF16()[%d] = %04x (%v) is not in class %d with sign %d", i, b, v, i/2, i%2)
		}
	}
}
