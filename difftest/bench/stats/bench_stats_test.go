package stats

import (
	"math"
	"testing"
	"time"
)

func TestQuantileType7(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sorted []float64
		q      float64
		want   float64
	}{
		{"median of an even sample: mean of the middle two", []float64{1, 2, 3, 4}, 0.5, 2.5},
		{"first quartile interpolates at h = 0.75", []float64{1, 2, 3, 4}, 0.25, 1.75},
		{"third quartile at h = 2.25", []float64{1, 2, 3, 4}, 0.75, 3.25},
		{"q = 1 is the maximum", []float64{1, 5, 9}, 1, 9},
		{"one value", []float64{7}, 0.3, 7},
	} {
		if got := Quantile(tc.sorted, tc.q); got != tc.want {
			t.Errorf("%s: Quantile(%v, %v) = %v, want %v", tc.name, tc.sorted, tc.q, got, tc.want)
		}
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("Quantile of an empty sample is not NaN")
	}
}

func TestMedianCI(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	// n = 10: P(B ≤ 1) = 11/1024 ≤ 0.025 < P(B ≤ 2) = 56/1024, so k = 2.
	if lo, hi, ok := MedianCI(xs, 0.95); !ok || lo != 2 || hi != 9 {
		t.Errorf("n=10: [%v, %v] ok=%v, want [2, 9]", lo, hi, ok)
	}
	// n = 6: P(B ≤ 0) = 1/64 ≤ 0.025: the extremes.
	if lo, hi, ok := MedianCI(xs[:6], 0.95); !ok || lo != 1 || hi != 6 {
		t.Errorf("n=6: [%v, %v] ok=%v, want [1, 6]", lo, hi, ok)
	}
	// n = 5: P(B ≤ 0) = 1/32 > 0.025: no interval.
	if _, _, ok := MedianCI(xs[:5], 0.95); ok {
		t.Error("n=5 gave an interval")
	}
}

func TestSummarize(t *testing.T) {
	var ts []time.Duration
	for _, us := range []int{13, 10, 12, 11, 30, 14, 15, 10, 16, 17} {
		ts = append(ts, time.Duration(us)*time.Microsecond)
	}
	s := Summarize(ts)
	want := Stats{N: 10, Min: 10 * time.Microsecond, Max: 30 * time.Microsecond,
		Q1: 11250 * time.Nanosecond, Median: 13500 * time.Nanosecond, Q3: 15750 * time.Nanosecond, IQR: 4500 * time.Nanosecond,
		MedianLo: 10 * time.Microsecond, MedianHi: 17 * time.Microsecond}
	if s != want {
		t.Errorf("Summarize = %+v\nwant        %+v", s, want)
	}
}

func TestMannWhitney(t *testing.T) {
	// scipy.stats.mannwhitneyu's documented example (males, females):
	// U = 17, exact p = 0.1111 (14 of 126 arrangements), asymptotic p =
	// 0.11134688653314041.
	males := []float64{19, 22, 16, 29, 24}
	females := []float64{20, 11, 17, 12}
	u, p := MannWhitney(males, females)
	if u != 17 || math.Abs(p-14.0/126) > 1e-12 {
		t.Errorf("exact: U = %v, p = %v; want 17, %v", u, p, 14.0/126)
	}
	if p := uNormalP(17, 5, 4, 0); math.Abs(p-0.11134688653314041) > 1e-12 {
		t.Errorf("asymptotic p = %.17g, want 0.11134688653314041", p)
	}
	// Complete separation: U = 0, p = 2 / C(6,3) and 2 / C(20,10).
	if u, p := MannWhitney([]float64{1, 2, 3}, []float64{4, 5, 6}); u != 0 || math.Abs(p-0.1) > 1e-12 {
		t.Errorf("3 vs 3 separated: U = %v, p = %v, want 0, 0.1", u, p)
	}
	var lo, hi []float64
	for i := 0; i < 10; i++ {
		lo, hi = append(lo, float64(i)), append(hi, float64(i+10))
	}
	if _, p := MannWhitney(lo, hi); math.Abs(p-2.0/184756) > 1e-15 {
		t.Errorf("10 vs 10 separated: p = %v, want %v", p, 2.0/184756)
	}
	// Ties: the normal approximation with the tie term Σ(t³ − t).
	x, y := []float64{1, 1, 2, 3}, []float64{2, 3, 3, 4}
	// Ranks: 1,1 → 1.5; 2,2 → 3.5; 3,3,3 → 6; 4 → 8. R_x = 1.5+1.5+3.5+6 = 12.5, U = 12.5 − 10 = 2.5.
	// Ties: groups of 2, 2, 3: Σ(t³−t) = 6 + 6 + 24 = 36.
	u, p = MannWhitney(x, y)
	if u != 2.5 || math.Abs(p-uNormalP(2.5, 4, 4, 36)) > 1e-15 {
		t.Errorf("ties: U = %v, p = %v, want 2.5, %v", u, p, uNormalP(2.5, 4, 4, 36))
	}
	// σ² = 16/12 · (9 − 36/56) = 11.142857…; z = (8 − 2.5 − 0.5)/σ = 1.49786…
	if want := math.Erfc((5 / math.Sqrt(16.0/12*(9-36.0/56))) / math.Sqrt2); math.Abs(p-want) > 1e-15 || math.Abs(p-0.13414) > 5e-5 {
		t.Errorf("ties: p = %v, want %v ≈ 0.13414", p, want)
	}
	if _, p := MannWhitney([]float64{5, 5}, []float64{5, 5, 5}); p != 1 {
		t.Errorf("all equal: p = %v, want 1", p)
	}
}

func TestUCriticalTable(t *testing.T) {
	// Two-sided α = 0.05 critical values of U from the standard tables
	// (the largest U still significant): n1 = n2 = 20 → 127, 10 → 23,
	// 5 → 2. uCritical is that value + 1.
	seq := func(n, off int) []float64 {
		var xs []float64
		for i := 0; i < n; i++ {
			xs = append(xs, float64(2*i+off))
		}
		return xs
	}
	for _, tc := range []struct{ n, crit int }{{20, 127}, {10, 23}, {5, 2}} {
		if got := uCritical(seq(tc.n, 0), seq(tc.n, 1), 0.05); got != tc.crit+1 {
			t.Errorf("n1 = n2 = %d: uCritical = %d, want %d", tc.n, got, tc.crit+1)
		}
	}
}

func TestCompareTimes(t *testing.T) {
	var base, faster, same []time.Duration
	for i := 0; i < 20; i++ {
		base = append(base, time.Duration(100000+1000*i))
		faster = append(faster, time.Duration(90000+900*i)) // exactly 0.9 × base
		same = append(same, time.Duration(100000+1000*((i*7)%20)))
	}
	c := CompareTimes(base, faster, 0)
	if math.Abs(c.Ratio-0.9) > 1e-12 || !c.Significant || !c.HasCI || c.Lo > 0.9 || c.Hi < 0.9 || c.Hi >= 1 || c.Alpha != 0.05 {
		t.Errorf("0.9 × base: %+v, want ratio 0.9 in a significant CI below 1", c)
	}
	// The interval is [d_(128), d_(273)] of the 400 log differences.
	if c.NBase != 20 || c.NNew != 20 {
		t.Errorf("n = %d, %d", c.NBase, c.NNew)
	}
	s := CompareTimes(base, same, 0.05)
	if s.Ratio != 1 || s.Significant || s.P < 0.99 || !s.HasCI || s.Lo >= 1 || s.Hi <= 1 {
		t.Errorf("a permutation of base: %+v, want ratio 1, not significant, CI around 1", s)
	}
	if c := CompareTimes(base[:1], faster[:1], 0); c.HasCI || c.Significant {
		t.Errorf("one run each: %+v, want no interval and no significance", c)
	}
}

func TestGeomean(t *testing.T) {
	if g := Geomean([]float64{0.5, 2, 1}); math.Abs(g-1) > 1e-15 {
		t.Errorf("Geomean = %v, want 1", g)
	}
	if g := Geomean([]float64{0.9, 0.9}); math.Abs(g-0.9) > 1e-15 {
		t.Errorf("Geomean = %v, want 0.9", g)
	}
}
