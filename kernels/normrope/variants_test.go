package normrope

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// TestE4M3Truncate: round toward zero over the e4m3fn range, by edge
// class (codes from the OCP FP8 spec: 1.0 = 0x38, 128 = 0x70, 144 = 0x71,
// 448 = 0x7E, 2^-9 = 0x01, the smallest subnormal).
func TestE4M3Truncate(t *testing.T) {
	for _, tc := range []struct {
		q    float32
		want uint8
		why  string
	}{
		{1, 0x38, "exact"},
		{1.1, 0x38, "below 1.125: RNE gives 0x39, truncation 0x38"},
		{1.12499, 0x38, "just below the next code"},
		{-1.1, 0xB8, "negative: toward zero"},
		{140, 0x70, "between 128 and 144, nearer 144"},
		{447.9, 0x7D, "below the largest finite (416)"},
		{448, 0x7E, "the largest finite"},
		{1e6, 0x7E, "saturates"},
		{float32(math.Inf(-1)), 0xFE, "−inf saturates to −448"},
		{float32(math.NaN()), 0x7F, "NaN"},
		{0.003, 0x01, "subnormal 2^-9 (0.00195) below 2·2^-9"},
		{0.0019, 0x00, "below the smallest subnormal: +0"},
		{float32(math.Copysign(0, -1)), 0x80, "−0 keeps its sign"},
	} {
		if got := e4m3Truncate(tc.q); got != tc.want {
			t.Errorf("%s: e4m3Truncate(%v) = 0x%02X, want 0x%02X", tc.why, tc.q, got, tc.want)
		}
		// Truncation is never above the exact magnitude.
		if g := tc.q; g == g && !math.IsInf(float64(g), 0) && math.Abs(float64(numeric.E4M3ToF32(e4m3Truncate(g)))) > math.Abs(float64(g)) {
			t.Errorf("%s: |e4m3Truncate(%v)| above |q|", tc.why, g)
		}
	}
}

// oneToken builds a one-token case at position 0 with the identity
// rotation (or a quarter turn, c = 0, s = 1), x and weight as given.
func oneToken(p Params, x []float64, w []float32, quarter bool) *difftest.Case {
	row := rotRow(1, 0)
	if quarter {
		row = rotRow(0, 1)
	}
	return handCase(p, [][]float64{x}, w, nil, [][]float32{row}, []int64{0}, []int64{0})
}

// runNamed runs the named variant (or, for an alias, the mutant it names)
// on c and returns its cache.
func runNamed(t *testing.T, c *difftest.Case, name string) *difftest.Tensor {
	t.Helper()
	run := func(*difftest.Case, []*difftest.Tensor) error { return nil }
	for _, v := range Variants() {
		if v.Name == name {
			run = v.Run
			if v.Alias != "" {
				for _, m := range Mutants() {
					if m.Name == v.Alias {
						run = m.Run
					}
				}
			}
		}
	}
	out := newCache(c)
	if err := run(c, []*difftest.Tensor{out}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVariantsKnownAnswers: each variant on a hand-built token where the
// answer is known, against the reference on the same token.
func TestVariantsKnownAnswers(t *testing.T) {
	ones := make([]float64, Dim)
	for i := range ones {
		ones[i] = 1
	}
	// x all ones under RMSNorm: y = w·(1 + 1e-6)^-½, so z ≈ w.
	t.Run("e4m3-truncate", func(t *testing.T) {
		p := config(NormRMS, StyleNeox, 0, false, StoreFP8, ScalePlain, 1, 1)
		w := make([]float32, Dim)
		w[0], w[1], w[2] = 1, 0.3125, -0.3125 // q = 448, 140, −140
		c := oneToken(p, ones, w, false)
		got, want := runNamed(t, c, variantE4M3Truncate), reference(t, c)
		codes, scaleAt := slotBytes(p, 0)
		for k, tc := range []struct{ got, ref uint8 }{{0x7E, 0x7E}, {0x70, 0x71}, {0xF0, 0xF1}, {0x00, 0x00}} {
			if got.Data[codes+k] != tc.got || want.Data[codes+k] != tc.ref {
				t.Errorf("code %d: variant 0x%02X, reference 0x%02X, want 0x%02X and 0x%02X", k, got.Data[codes+k], want.Data[codes+k], tc.got, tc.ref)
			}
		}
		if s := math.Float32frombits(binary.LittleEndian.Uint32(got.Data[scaleAt:])); math.Abs(float64(s)*448-1) > 1e-6 {
			t.Errorf("scale %v, want ≈ 1/448", s)
		}
	})
	t.Run("bf16-truncate", func(t *testing.T) {
		p := config(NormRMS, StyleNeox, 0, false, StoreBF16, ScalePlain, 1, 1)
		w := make([]float32, Dim)
		w[0], w[1] = 1.005859375, -1.005859375 // 1 + 0.75·2^-7: RNE up to 0x3F81, truncation 0x3F80
		c := oneToken(p, ones, w, false)
		got, want := runNamed(t, c, "bf16-truncate"), reference(t, c)
		at, _ := slotBytes(p, 0)
		for k, tc := range []struct{ got, ref uint16 }{{0x3F80, 0x3F81}, {0xBF80, 0xBF81}, {0x0000, 0x0000}} {
			g, r := binary.LittleEndian.Uint16(got.Data[at+2*k:]), binary.LittleEndian.Uint16(want.Data[at+2*k:])
			if g != tc.got || r != tc.ref {
				t.Errorf("value %d: variant 0x%04X, reference 0x%04X, want 0x%04X and 0x%04X", k, g, r, tc.got, tc.ref)
			}
		}
	})
	t.Run("scale-no-floor", func(t *testing.T) {
		// An all-zero token: amax = 0; the contract floors it at 1e-4, the
		// variant divides 0 by a zero scale.
		p := config(NormRMS, StyleNeox, 0, false, StoreFP8, ScalePlain, 1, 1)
		c := oneToken(p, make([]float64, Dim), nil, false)
		got, want := runNamed(t, c, "scale-no-floor"), reference(t, c)
		codes, scaleAt := slotBytes(p, 0)
		if s := binary.LittleEndian.Uint32(got.Data[scaleAt:]); s != 0 {
			t.Errorf("variant scale bits 0x%08X, want 0", s)
		}
		if s := math.Float32frombits(binary.LittleEndian.Uint32(want.Data[scaleAt:])); s != float32(ScaleFloor/448) {
			t.Errorf("reference scale %v, want 1e-4/448", s)
		}
		if got.Data[codes] != 0x7F || want.Data[codes] != 0x00 {
			t.Errorf("code 0: variant 0x%02X, reference 0x%02X, want 0x7F (NaN) and 0x00", got.Data[codes], want.Data[codes])
		}
	})
	t.Run("rope-style-swap", func(t *testing.T) {
		// Only dim 1 is non-zero and the rotation is a quarter turn:
		// neox pairs (1, 33) move it to +dim 33; the interleaved pairs
		// (0, 1) to −dim 0.
		p := config(NormRMS, StyleNeox, 0, false, StoreBF16, ScalePlain, 1, 1)
		x := make([]float64, Dim)
		x[1] = 1
		c := oneToken(p, x, nil, true)
		got, want := runNamed(t, c, "rope-style-swap"), reference(t, c)
		at, _ := slotBytes(p, 0)
		val := func(cache *difftest.Tensor, k int) float32 {
			return numeric.BF16ToF32(binary.LittleEndian.Uint16(cache.Data[at+2*k:]))
		}
		if !(val(got, 0) < -1 && val(got, 33) == 0 && val(want, 33) > 1 && val(want, 0) == 0) {
			t.Errorf("variant dims 0, 33 = %v, %v; reference %v, %v; want (−√128·…, 0) and (0, +…)", val(got, 0), val(got, 33), val(want, 0), val(want, 33))
		}
	})
}

// TestVariantCatalog: every alias names a catalog mutant of the same
// name, the three new variants are not mutants, each has a doc line.
func TestVariantCatalog(t *testing.T) {
	mutants := map[string]bool{}
	for _, m := range Mutants() {
		mutants[m.Name] = true
	}
	var names []string
	for _, v := range Variants() {
		names = append(names, v.Name)
		if v.Doc == "" {
			t.Errorf("%s: no doc", v.Name)
		}
		switch {
		case v.Alias != "":
			if !mutants[v.Alias] || v.Alias != v.Name || v.Run != nil {
				t.Errorf("%s: alias %q is not the mutant of that name, or it has its own Run", v.Name, v.Alias)
			}
		case mutants[v.Name] || v.Run == nil && (v.Accepts == nil || !v.Precision):
			t.Errorf("%s: named like a mutant without being its alias, or no Run", v.Name)
		}
	}
	if !slices.Equal(names, []string{"bf16-truncate", variantE4M3Truncate, "scale-no-floor", variantFP4OneStage, variantFP4TiesDownPack, "rope-style-swap", VariantIntermediateBF16, VariantIntermediateBF16Once}) {
		t.Errorf("variants %v", names)
	}
	cands := triage.Candidates(Kernel{})
	if len(cands) != len(Mutants())+5 || cands[len(cands)-5].Name != variantE4M3Truncate || cands[len(cands)-3].Name != variantFP4TiesDownPack ||
		cands[len(cands)-2].Name != VariantIntermediateBF16 || cands[len(cands)-1].Name != VariantIntermediateBF16Once {
		t.Errorf("%d candidates, the last %q; want the mutants then %s, %s, %s, %s, %s", len(cands), cands[len(cands)-1].Name, variantE4M3Truncate, variantFP4OneStage, variantFP4TiesDownPack, VariantIntermediateBF16, VariantIntermediateBF16Once)
	}
}

// TestMatch: bytes of don't-care tokens and a plain scale a few ULPs off
// still match; a code, an untouched byte or a scale further off do not.
func TestMatch(t *testing.T) {
	c := genCase(t, "nonfinite", map[string]any{"preset": "v4", "N": int64(16), "P": int64(4)})
	in, err := load(c)
	if err != nil {
		t.Fatal(err)
	}
	dc, ok := -1, -1
	var tb tokenBound
	for tok := 0; tok < in.n; tok++ {
		if in.loc.I64(tok) < 0 {
			continue
		}
		if in.analyze(tok, &tb); tb.dc != "" && dc < 0 {
			dc = tok
		} else if tb.dc == "" && ok < 0 {
			ok = tok
		}
	}
	if dc < 0 || ok < 0 {
		t.Fatalf("the case has no don't-care token (%d) or no checked one (%d)", dc, ok)
	}
	base := reference(t, c)
	k := Kernel{}
	change := func(f func(b []byte)) []*difftest.Tensor {
		o := base.Clone()
		f(o.Data)
		return []*difftest.Tensor{o}
	}
	dcCodes, _ := slotBytes(in.p, int(in.loc.I64(dc)))
	okCodes, okScale := slotBytes(in.p, int(in.loc.I64(ok)))
	bump := func(b []byte, n int32) {
		binary.LittleEndian.PutUint32(b[okScale:], uint32(int32(binary.LittleEndian.Uint32(b[okScale:]))+n))
	}
	owned := make([]bool, len(base.Data))
	for _, r := range k.Written(c)[0] {
		for i := r.Off; i < r.Off+r.Len; i++ {
			owned[i] = true
		}
	}
	untouched := slices.Index(owned, false)
	for _, tc := range []struct {
		why  string
		f    func(b []byte)
		same bool
	}{
		{"a don't-care token's code", func(b []byte) { b[dcCodes] ^= 1 }, true},
		{"the scale 4 ULPs up", func(b []byte) { bump(b, 4) }, true},
		{"the scale 5 ULPs down", func(b []byte) { bump(b, -5) }, false},
		{"a checked token's code", func(b []byte) { b[okCodes+3] ^= 1 }, false},
		{"an untouched byte", func(b []byte) { b[untouched] ^= 1 }, false},
	} {
		if got := k.Match(c, []*difftest.Tensor{base}, change(tc.f)); got != tc.same {
			t.Errorf("%s: Match = %v, want %v", tc.why, got, tc.same)
		}
	}
	if untouched < 0 {
		t.Fatal("no untouched byte")
	}
}

// TestE4M3TruncateDiagnosed: the variant, run as the implementation on
// the quick suite, fails its first FP8 case and is diagnosed as itself
// and nothing else (not fp8-double-round, the other wrong e4m3 rounding).
func TestE4M3TruncateDiagnosed(t *testing.T) {
	var v triage.Variant
	for _, x := range Variants() {
		if x.Name == variantE4M3Truncate {
			v = x
		}
	}
	impl := difftest.MutantImpl{Kernel: KernelName, Mutant: difftest.Mutant{Name: v.Name, Run: v.Run}}
	for _, spec := range loadSuite(t, "quick") {
		c := kerneltest.Draw(t, Kernel{}, spec, 1)
		rec, out := kerneltest.RunCase(t, Kernel{}, impl, c)
		if !rec.Failed() {
			continue
		}
		d := triage.Diagnose(context.Background(), Kernel{}, c, out.Got, out.Want, 0)
		if !slices.Equal(d.Matches, []string{variantE4M3Truncate}) {
			t.Errorf("%s: diagnosed as %v", spec.ID(), d.Matches)
		}
		return
	}
	t.Fatal("e4m3-truncate passes the quick suite")
}
