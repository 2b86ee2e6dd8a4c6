package normrope

import (
	"math"
	"testing"
)

func TestYarnRamp(t *testing.T) {
	// correctionDim(rot) = 64·ln(orig/(2π·rot)) / (2·ln θ):
	//   v32: 64·ln(4096/(64π))/(2 ln 1e4) = 10.47 → floor 10; 64·ln(4096/(2π))/(2 ln 1e4) = 22.51 → ceil 23
	//   v4:  64·ln(65536/(64π))/(2 ln 1.6e5) = 15.45 → 15;    64·ln(65536/(2π))/(2 ln 1.6e5) = 24.71 → 25
	tests := []struct {
		model     string
		low, high float64
		maxPos    int
	}{
		{ModelV32, 10, 23, 163840},
		{ModelV4, 15, 25, 1048576},
	}
	for _, tc := range tests {
		y, err := YarnOf(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		if lo, hi := y.Ramp(); lo != tc.low || hi != tc.high {
			t.Errorf("%s: Ramp() = (%v, %v), want (%v, %v)", tc.model, lo, hi, tc.low, tc.high)
		}
		if got := y.MaxPositions(); got != tc.maxPos {
			t.Errorf("%s: MaxPositions() = %d, want %d", tc.model, got, tc.maxPos)
		}
	}
	if _, err := YarnOf("v3"); err == nil {
		t.Error("YarnOf(v3) = nil error, want unknown model")
	}
}

func TestYarnFreq(t *testing.T) {
	tests := []struct {
		model  string
		j      int
		want   float64
		reason string
	}{
		{ModelV32, 0, 1, "θ^0 = 1, below the ramp: kept"},
		{ModelV32, 10, math.Pow(1e4, -20.0/64), "ramp start (r = 0): kept"},
		{ModelV32, 16, 0.0055, "θ^-½ = 0.01, r = 6/13: 0.01·(6/13/40 + 7/13) = 0.01·286/520"},
		{ModelV32, 23, math.Pow(1e4, -46.0/64) / 40, "ramp end (r = 1): divided by the factor"},
		{ModelV32, 31, math.Pow(1e4, -62.0/64) / 40, "above the ramp: divided by the factor"},
		{ModelV4, 0, 1, "θ^0 = 1"},
		{ModelV4, 15, math.Pow(1.6e5, -30.0/64), "ramp start: kept"},
		{ModelV4, 20, math.Pow(1.6e5, -40.0/64) * (0.5/16 + 0.5), "r = 5/10: half interpolated"},
		{ModelV4, 25, math.Pow(1.6e5, -50.0/64) / 16, "ramp end: divided by 16"},
	}
	for _, tc := range tests {
		y, _ := YarnOf(tc.model)
		if got := y.Freq(tc.j); math.Abs(got-tc.want) > 1e-15*tc.want {
			t.Errorf("%s Freq(%d) = %.17g, want %.17g (%s)", tc.model, tc.j, got, tc.want, tc.reason)
		}
	}
}

func TestFreqsTable(t *testing.T) {
	for _, model := range []string{ModelV32, ModelV4} {
		y, _ := YarnOf(model)
		long, err := FreqsTable(model, 70000)
		if err != nil {
			t.Fatal(err)
		}
		short, _ := FreqsTable(model, 3)
		for i, v := range short {
			if long[i] != v {
				t.Fatalf("%s: the 3-row table differs from the 70000-row table at %d", model, i)
			}
		}
		for j := 0; j < RopeDim/2; j++ {
			if long[2*j] != 1 || long[2*j+1] != 0 {
				t.Errorf("%s: position 0 pair %d = (%g, %g), want (1, 0)", model, j, long[2*j], long[2*j+1])
			}
		}
		// Every value is the f32 rounding of cos or sin of one f64 angle:
		// math.Cos and math.Sin (an independent implementation, within
		// about 1 f64 ULP) round to the same f32 except where the value
		// lies within 1e-15 of an f32 midpoint, and then one f32 ULP away.
		var freq [RopeDim / 2]float64
		for j := range freq {
			freq[j] = y.Freq(j)
		}
		flips := 0
		for p := 0; p < 70000; p++ {
			for j, f := range freq {
				a := float64(float64(p) * f)
				for k, want := range [2]float64{math.Cos(a), math.Sin(a)} {
					got := long[p*RopeDim+2*j+k]
					if got == float32(want) {
						continue
					}
					flips++
					lo, hi := math.Nextafter32(got, float32(math.Inf(-1))), math.Nextafter32(got, float32(math.Inf(1)))
					mid := (float64(got) + float64(lo)) / 2
					if float32(want) == hi {
						mid = (float64(got) + float64(hi)) / 2
					} else if float32(want) != lo {
						t.Fatalf("%s: position %d pair %d (%s) = %g, math gives %g: more than 1 f32 ULP apart", model, p, j, [2]string{"cos", "sin"}[k], got, want)
					}
					if math.Abs(want-mid) > 1e-15 {
						t.Fatalf("%s: position %d pair %d = %g, math gives %g, %g from the f32 midpoint", model, p, j, got, want, math.Abs(want-mid))
					}
				}
			}
		}
		t.Logf("%s: %d of %d values round the other way from math.Cos/Sin (all at f32 midpoints)", model, flips, 70000*RopeDim)
		c, s := long[69999*RopeDim+2*13], long[69999*RopeDim+2*13+1]
		if d := math.Abs(float64(c)*float64(c) + float64(s)*float64(s) - 1); d > 2e-7 {
			t.Errorf("%s: row 69999 pair 13: cos²+sin² − 1 = %g", model, d)
		}
	}
	for _, bad := range []int{0, 1<<24 + 1} {
		if _, err := FreqsTable(ModelV4, bad); err == nil {
			t.Errorf("FreqsTable(v4, %d) = nil error", bad)
		}
	}
}

// baseFreq is correctly rounded: where θ^(−j/32) is a short decimal (θ a
// fourth power: 10^4, 20^4 = 160000) it equals the double nearest that
// decimal, which 1/math.Pow misses by up to 2 ULP (j = 8: 0.09999999999999998).
func TestBaseFreqKnownAnswers(t *testing.T) {
	tests := []struct {
		theta float64
		j     int
		want  float64
	}{
		{10000, 0, 1}, {10000, 8, 0.1}, {10000, 16, 0.01}, {10000, 24, 0.001}, {10000, 32, 0.0001},
		{160000, 0, 1}, {160000, 8, 0.05}, {160000, 16, 0.0025}, {160000, 24, 0.000125},
	}
	for _, tc := range tests {
		if got := baseFreq(tc.theta, tc.j); got != tc.want {
			t.Errorf("baseFreq(%v, %d) = %.17g, want %.17g", tc.theta, tc.j, got, tc.want)
		}
	}
}
