package topk

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/internal/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/digests.golden")

func ints(xs ...int) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = int64(x)
	}
	return out
}

// gen draws a case at seed 1 and validates it (kerneltest.Draw).
func gen(t testing.TB, family, name string, params map[string]any) *difftest.Case {
	t.Helper()
	return kerneltest.Draw(t, Kernel{}, difftest.CaseSpec{Kernel: KernelName, Family: family, Name: name, Params: params}, 1)
}

// params64 returns the params of a K = 64, P = 4 case with rows of the
// given lengths, plus extra.
func params64(extra map[string]any, lengths ...int) map[string]any {
	m := map[string]any{"K": int64(64), "P": int64(4), "lengths": ints(lengths...)}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// rowBits returns scores[b][0:L].
// (16-bit scores: the bf16 or f16 patterns).
func rowBits(c *difftest.Case, b int) []uint32 {
	p := c.Params.(*Params)
	L := int(c.Inputs[1].I32(b))
	out := make([]uint32, L)
	for i := range out {
		if p.wide16() {
			out[i] = uint32(c.Inputs[0].U16(b*p.Stride + i))
			continue
		}
		out[i] = c.Inputs[0].U32(b*p.Stride + i)
	}
	return out
}

// TestDigestsPinned: the same seed and case id give the same input bytes
// on every run, host and build. The digests are in testdata/digests.golden
// (rewrite with -update, and review the diff: a change means the generator
// version must be bumped).
func TestDigestsPinned(t *testing.T) {
	specs := []difftest.CaseSpec{
		{Kernel: KernelName, Family: "gaussian", Name: "pin/gaussian", Params: map[string]any{"K": int64(8), "P": int64(4), "lengths": ints(0, 7, 8, 9, 40)}},
		{Kernel: KernelName, Family: "needle", Name: "pin/needle", Params: map[string]any{"K": int64(16), "P": int64(2), "lengths": ints(1000), "pages": "perm"}},
		{Kernel: KernelName, Family: "specials", Name: "pin/specials", Params: map[string]any{"K": int64(4), "P": int64(1), "lengths": ints(33, 5), "pages": "large", "raw": false}},
		{Kernel: KernelName, Family: "straddle", Name: "pin/straddle", Params: map[string]any{"K": int64(8), "P": int64(64), "lengths": ints(100), "batch": int64(3)}},
		{Kernel: KernelName, Family: "pseudotie", Name: "pin/pseudotie-zeros", Params: map[string]any{"K": int64(8), "P": int64(4), "lengths": ints(9, 40), "band": "zeros"}},
		{Kernel: KernelName, Family: "pseudotie", Name: "pin/pseudotie-subnormals", Params: map[string]any{"K": int64(8), "P": int64(4), "lengths": ints(9, 40), "band": "subnormals"}},
		{Kernel: KernelName, Family: "pseudotie", Name: "pin/pseudotie-nans", Params: map[string]any{"K": int64(8), "P": int64(4), "lengths": ints(9, 40), "band": "nans", "above": int64(3)}},
	}
	var b strings.Builder
	for _, spec := range specs {
		for _, seed := range []uint64{1, 2} {
			c, err := NewCase(spec, seed, rng.CaseKey(seed, spec.ID()))
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range c.Inputs {
				d := in.Digest()
				fmt.Fprintf(&b, "%s seed=%d %s %s\n", spec.ID(), seed, in.Name, hex.EncodeToString(d[:]))
			}
		}
	}
	golden.Check(t, filepath.Join("testdata", "digests.golden"), b.String(), *update,
		"a generator change bumps difftest.GeneratorVersion and rewrites it with -update")
	// And twice in one process.
	c1, c2 := gen(t, "gaussian", "again", map[string]any{"K": int64(8), "lengths": ints(500, 3)}), gen(t, "gaussian", "again", map[string]any{"K": int64(8), "lengths": ints(500, 3)})
	for i := range c1.Inputs {
		if c1.Inputs[i].Digest() != c2.Inputs[i].Digest() {
			t.Errorf("%s differs between two draws", c1.Inputs[i].Name)
		}
	}
}

// TestFamilies checks what each family promises.
func TestFamilies(t *testing.T) {
	const K = 64 // params64's
	base := params64
	tests := []struct {
		family string
		params map[string]any
		check  func(c *difftest.Case, b int, row []uint32) error
	}{
		{"needle", base(nil, 1000, 3, 0), func(c *difftest.Case, b int, row []uint32) error {
			at := c.Params.(*Params).Needles[b]
			if len(row) == 0 {
				if at != -1 {
					return fmt.Errorf("needle %d in an empty row", at)
				}
				return nil
			}
			if at != len(row)/3 {
				return fmt.Errorf("needle at %d, want L/3 = %d", at, len(row)/3)
			}
			for i, x := range row {
				if i != at && math.Float32frombits(x) >= math.Float32frombits(row[at]) {
					return fmt.Errorf("position %d (%v) not below the needle", i, math.Float32frombits(x))
				}
			}
			return nil
		}},
		{"equal", base(nil, 300), func(_ *difftest.Case, _ int, row []uint32) error {
			for _, x := range row {
				if x != row[0] {
					return fmt.Errorf("not all equal")
				}
			}
			return nil
		}},
		{"straddle", base(nil, 300), func(_ *difftest.Case, _ int, row []uint32) error {
			var above, tied int
			for _, x := range row {
				switch f := math.Float32frombits(x); {
				case f > 1:
					above++
				case f == 1:
					tied++
				}
			}
			if above != 3*K/4 || tied != K/2 {
				return fmt.Errorf("above %d tied %d, want %d, %d", above, tied, 3*K/4, K/2)
			}
			return nil
		}},
		{"relu", base(map[string]any{"positives": int64(10)}, 8320), func(_ *difftest.Case, _ int, row []uint32) error {
			pos := 0
			for _, x := range row {
				if x != 0 && math.Float32frombits(x) <= 0 {
					return fmt.Errorf("value %#x neither +0 nor positive", x)
				}
				if x != 0 {
					pos++
				}
			}
			if pos != 10 {
				return fmt.Errorf("%d positives, want 10", pos)
			}
			return nil
		}},
		{"lowcontrast", base(map[string]any{"span": "coarse"}, 16384), bandCheck(1.0, 1.25)},
		{"lowcontrast", base(map[string]any{"span": "high"}, 16384), bandCheck(65520, float32(math.Inf(1)))},
		{"lowcontrast", base(map[string]any{"span": "tiny"}, 16384), bandCheck(0, 1.5e-5)},
		{"masked", base(map[string]any{"finite": int64(20)}, 200), func(_ *difftest.Case, _ int, row []uint32) error {
			fin := 0
			for _, x := range row {
				if x != negInf {
					fin++
				}
			}
			if fin != 20 {
				return fmt.Errorf("%d finite values, want 20", fin)
			}
			return nil
		}},
		{"specials", base(nil, 4000), func(_ *difftest.Case, _ int, row []uint32) error {
			for _, want := range []uint32{posNaN, negNaN, posInf, negInf, 0, negZ, 1, 0x80000001} {
				if !slices.Contains(row, want) {
					return fmt.Errorf("no %#08x in 4000 values", want)
				}
			}
			return nil
		}},
		{"pseudotie", base(map[string]any{"band": BandZeros}, 3000, 65, 10), pseudoTieCheck(K, BandZeros)},
		{"pseudotie", base(map[string]any{"band": BandSubnormals}, 3000, 65, 10), pseudoTieCheck(K, BandSubnormals)},
		{"pseudotie", base(map[string]any{"band": BandNaNs}, 3000, 65, 10), pseudoTieCheck(K, BandNaNs)},
		{"pseudotie", base(map[string]any{"band": BandZeros, "above": int64(7)}, 3000, 65, 10), pseudoTieAbove(7, BandZeros)},
	}
	for _, tt := range tests {
		t.Run(tt.family, func(t *testing.T) {
			c := gen(t, tt.family, tt.family+"/t", tt.params)
			p := c.Params.(*Params)
			for b := 0; b < p.Batch; b++ {
				if err := tt.check(c, b, rowBits(c, b)); err != nil {
					t.Errorf("row %d: %v", b, err)
				}
				L := int(c.Inputs[1].I32(b))
				for i := L; i < p.Stride; i++ {
					want := uint32(pastEvenBits)
					if i%2 == 1 {
						want = pastOddBits
					}
					if got := c.Inputs[0].U32(b*p.Stride + i); got != want {
						t.Fatalf("row %d position %d past L = %d holds %#x, want %#x", b, i, L, got, want)
					}
				}
			}
		})
	}
}

// pseudoTieCheck requires min(K/2, L) values above the band and the rest
// in it, with both signs present in rows of ≥ 1000 band values.
func pseudoTieCheck(K int, band string) func(*difftest.Case, int, []uint32) error {
	return func(c *difftest.Case, b int, row []uint32) error {
		return checkPseudoTieRow(row, min(K/2, len(row)), band)
	}
}

// pseudoTieAbove is pseudoTieCheck with an explicit above count.
func pseudoTieAbove(above int, band string) func(*difftest.Case, int, []uint32) error {
	return func(c *difftest.Case, b int, row []uint32) error {
		return checkPseudoTieRow(row, min(above, len(row)), band)
	}
}

// inBand reports whether x is a value of band (pseudotie family).
func inBand(band string, x uint32) bool {
	mag := x & 0x7FFFFFFF
	switch band {
	case BandZeros:
		return mag == 0
	case BandSubnormals:
		return mag < 0x00800000
	case BandNaNs:
		return mag > 0x7F800000
	}
	return false
}

func checkPseudoTieRow(row []uint32, above int, band string) error {
	var n, neg, pos int
	for _, x := range row {
		switch {
		case inBand(band, x):
			if x&0x80000000 != 0 {
				neg++
			} else {
				pos++
			}
		case band != BandNaNs && math.Float32frombits(x) < 0.5:
			return fmt.Errorf("value %#08x neither in the %s band nor ≥ 0.5", x, band)
		default:
			n++
		}
	}
	if n != above {
		return fmt.Errorf("%d values above the band, want %d", n, above)
	}
	if len(row)-above >= 1000 && (neg < 400 || pos < 400) {
		return fmt.Errorf("band of %d values has %d negative and %d positive", len(row)-above, neg, pos)
	}
	return nil
}

// TestPseudoTieSuites: in every pseudotie case of default and quick the
// K-th value of a row lies in the band, and the case's rows put it in
// every part of the band listed for its kind (both zeros; −subnormal, −0,
// +0, +subnormal; −NaN and +NaN), so each pseudo-tie is met at the cut.
func TestPseudoTieSuites(t *testing.T) {
	parts := map[string][]string{
		BandZeros:      {"-0", "+0"},
		BandSubnormals: {"-sub", "-0", "+0", "+sub"},
		BandNaNs:       {"-nan", "+nan"},
	}
	part := func(x uint32) string {
		sign := "+"
		if x&0x80000000 != 0 {
			sign = "-"
		}
		switch mag := x & 0x7FFFFFFF; {
		case mag == 0:
			return sign + "0"
		case mag < 0x00800000:
			return sign + "sub"
		case mag > 0x7F800000:
			return sign + "nan"
		}
		return "outside"
	}
	for _, suite := range []string{"quick", "default"} {
		n := 0
		for _, spec := range loadSuite(t, suite) {
			if spec.Family != "pseudotie" {
				continue
			}
			n++
			for seed := uint64(1); seed <= 3; seed++ {
				c, err := NewCase(spec, seed, rng.CaseKey(seed, spec.ID()))
				if err != nil {
					t.Fatal(err)
				}
				p := c.Params.(*Params)
				band, _ := spec.Params["band"].(string)
				seen := map[string]bool{}
				var s scratch
				for b := 0; b < p.Batch; b++ {
					row := rowBits(c, b)
					if len(row) <= p.K {
						continue
					}
					keys := make([]uint32, len(row))
					for i, x := range row {
						keys[i] = numeric.Key32(x)
					}
					kth, _ := threshold(keys, p.K, &s)
					seen[part(numeric.Key32Bits(kth))] = true
				}
				for _, want := range parts[band] {
					if !seen[want] {
						t.Errorf("%s %s seed %d: no row has its K-th value in %s (seen %v)", suite, spec.Name, seed, want, seen)
					}
				}
				if seen["outside"] && band != BandNaNs {
					t.Errorf("%s %s seed %d: a row's K-th value lies outside the band", suite, spec.Name, seed)
				}
			}
		}
		if n < 3 {
			t.Errorf("%s: %d pseudotie cases, want one per band", suite, n)
		}
	}
}

// bandCheck requires distinct values in [lo, hi).
func bandCheck(lo, hi float32) func(*difftest.Case, int, []uint32) error {
	return func(_ *difftest.Case, _ int, row []uint32) error {
		seen := map[uint32]bool{}
		for _, x := range row {
			f := math.Float32frombits(x)
			if !(f >= lo && f < hi) || seen[x] {
				return fmt.Errorf("value %v outside [%v, %v) or repeated", f, lo, hi)
			}
			seen[x] = true
		}
		return nil
	}
}

// TestPageTables: every kind is injective per row over the used range, −1
// past it; distinct and large rows share no page; large reaches the top of
// the int32 slot range and still validates.
func TestPageTables(t *testing.T) {
	for _, kind := range []string{PagesIdentity, PagesPerm, PagesDistinct, PagesLarge} {
		for _, P := range []int{1, 2, 64, 256} {
			c := gen(t, "gaussian", fmt.Sprintf("pages/%s/P=%d", kind, P), map[string]any{
				"K": int64(4), "P": int64(P), "lengths": ints(1000, 0, 513, 1), "batch": int64(5), "pages": kind, "raw": false,
			})
			p := c.Params.(*Params)
			seen := map[int32]int{}
			top := int32(-1)
			for b := 0; b < p.Batch; b++ {
				used := (int(c.Inputs[1].I32(b)) + P - 1) / P
				for j := 0; j < p.MaxPages; j++ {
					id := c.Inputs[2].I32(b*p.MaxPages + j)
					if j >= used {
						if id != -1 {
							t.Fatalf("%s P=%d: page_table[%d][%d] = %d past the used range", kind, P, b, j, id)
						}
						continue
					}
					top = max(top, id)
					if kind == PagesIdentity && id != int32(j) {
						t.Fatalf("identity: page_table[%d][%d] = %d", b, j, id)
					}
					if prev, dup := seen[id]; dup && (prev == b || kind == PagesDistinct || kind == PagesLarge) {
						t.Fatalf("%s P=%d: page id %d in rows %d and %d", kind, P, id, prev, b)
					}
					seen[id] = b
				}
			}
			if kind == PagesLarge && int64(top)*int64(P)+int64(P)-1 != math.MaxInt32 {
				t.Errorf("large P=%d: top page %d does not reach the int32 slot limit", P, top)
			}
			// The checker accepts the reference through the inverted table.
			out := runRef(t, c)
			if r := Check(c, out, out); r.Failed() {
				t.Errorf("%s P=%d: %s", kind, P, r.Message)
			}
		}
	}
}

// TestNewCaseErrors: bad suite entries are errors naming case and param,
// with the rule; nothing is clamped or silently replaced by a default.
// Each row is also run through difftest.GenerateCase, which must return a
// *difftest.SuiteError (exit 2), never panic or allocate the absurd size.
func TestNewCaseErrors(t *testing.T) {
	const maxInt64 = int64(math.MaxInt64)
	tests := []struct {
		family, reason string
		params         map[string]any
		want           string
	}{
		// The suite file itself.
		{"nope", "unknown family", map[string]any{"K": int64(4), "lengths": ints(3)}, `case topk_transform/e: unknown family "nope" (known: [equal gaussian literal lowcontrast masked nan16 needle oneexp pseudotie relu specials straddle ties16])`},
		{"gaussian", "a typo is not ignored", map[string]any{"K": int64(4), "lengths": ints(3), "colour": "red"}, "case topk_transform/e: unknown param(s) colour"},
		{"gaussian", "K is required", map[string]any{"lengths": ints(3)}, `case topk_transform/e: param "K": required, must be ≥ 1, got 0`},
		{"gaussian", "P is a power of two", map[string]any{"K": int64(4), "P": int64(6), "lengths": ints(3)}, `case topk_transform/e: param "P": must be a power of two ≥ 1, got 6`},
		{"gaussian", "lengths ≥ 0", map[string]any{"K": int64(4), "lengths": ints(3, -2)}, `case topk_transform/e: param "lengths": element 1 must be in [0, 16777216], got -2`},
		{"gaussian", "stride holds every row", map[string]any{"K": int64(4), "lengths": ints(30), "stride": int64(20)}, `case topk_transform/e: param "stride": must be ≥ the longest length 30, got 20`},
		{"gaussian", "page kinds", map[string]any{"K": int64(4), "lengths": ints(3), "pages": "random"}, `case topk_transform/e: param "pages": must be one of identity, perm, distinct, large, got "random"`},
		{"lowcontrast", "spans", map[string]any{"K": int64(4), "lengths": ints(3), "span": "wide"}, `case topk_transform/e: param "span": must be one of coarse, high, tiny, got "wide"`},
		// Size limits (limits.go): the review's crashes and minute-long runs.
		{"gaussian", "K = 2^63−1 panicked in makeslice", map[string]any{"K": maxInt64, "lengths": ints(1000)}, `case topk_transform/e: param "K": exceeds the limit of 65536 picks per row: got 9223372036854775807`},
		{"gaussian", "K = 2^28 ran for minutes", map[string]any{"K": int64(1 << 28), "lengths": ints(1000)}, `case topk_transform/e: param "K": exceeds the limit of 65536 picks per row: got 268435456`},
		{"gaussian", "K just above the limit", map[string]any{"K": int64(MaxK + 1), "lengths": ints(1000)}, `case topk_transform/e: param "K": exceeds the limit of 65536 picks per row: got 65537`},
		{"gaussian", "a length past MaxSeqLen", map[string]any{"K": int64(4), "lengths": ints(MaxSeqLen + 1)}, `case topk_transform/e: param "lengths": element 0 must be in [0, 16777216], got 16777217`},
		{"gaussian", "batch", map[string]any{"K": int64(4), "lengths": ints(3), "batch": int64(MaxBatch + 1)}, `case topk_transform/e: param "batch": must be in [1, 65536], got 65537`},
		{"gaussian", "stride past MaxSeqLen", map[string]any{"K": int64(4), "lengths": ints(3), "stride": int64(MaxSeqLen + 1)}, `case topk_transform/e: param "stride": exceeds the limit of 16777216 scores per row: got 16777217`},
		{"gaussian", "stride = 2^63−1 (ceil(stride/P) must not overflow)", map[string]any{"K": int64(4), "lengths": ints(3), "stride": maxInt64}, `case topk_transform/e: param "stride": exceeds the limit of 16777216 scores per row: got 9223372036854775807`},
		{"gaussian", "P past MaxPageSize", map[string]any{"K": int64(4), "lengths": ints(3), "P": int64(1 << 21)}, `case topk_transform/e: param "P": exceeds the limit of 1048576 slots per page: got 2097152`},
		{"gaussian", "batch·stride", map[string]any{"K": int64(4), "lengths": ints(4097), "batch": int64(65536), "pages": "perm"}, `case topk_transform/e: param "batch·stride": exceeds the limit of 268435456 scores: got 268500992`},
		{"gaussian", "batch·K", map[string]any{"K": int64(2048), "lengths": ints(1), "batch": int64(65536), "pages": "perm"}, `case topk_transform/e: param "batch·K": exceeds the limit of 67108864 entries per output: got 134217728`},
		// Family parameters: explicit values are checked, never clamped.
		{"relu", "positives = −5 became 0", map[string]any{"K": int64(4), "lengths": ints(100), "positives": int64(-5)}, `case topk_transform/e: param "positives": must be ≥ 0, got -5`},
		{"relu", "positives beyond a row", map[string]any{"K": int64(4), "lengths": ints(8320, 50), "positives": int64(100)}, `case topk_transform/e: param "positives": positives must fit in every row: row 1 has seq_len 50, room for 50, got 100`},
		{"masked", "finite = −5 fell back to K/2", map[string]any{"K": int64(4), "lengths": ints(100), "finite": int64(-5)}, `case topk_transform/e: param "finite": must be ≥ 0, got -5`},
		{"masked", "finite beyond a row", map[string]any{"K": int64(4), "lengths": ints(100), "finite": int64(101)}, `case topk_transform/e: param "finite": finite values must fit in every row: row 0 has seq_len 100, room for 100, got 101`},
		{"straddle", "tied = −3 fell back to K/2", map[string]any{"K": int64(4), "lengths": ints(100), "tied": int64(-3)}, `case topk_transform/e: param "tied": must be ≥ 0, got -3`},
		{"straddle", "above = 99999 was clamped to L", map[string]any{"K": int64(4), "lengths": ints(1000), "above": int64(99999)}, `case topk_transform/e: param "above": above values must fit in every row: row 0 has seq_len 1000, room for 1000, got 99999`},
		{"straddle", "above + tied beyond a row", map[string]any{"K": int64(4), "lengths": ints(2000, 1000), "above": int64(900), "tied": int64(101)}, `case topk_transform/e: param "tied": above + tied values must fit in every row: row 1 has seq_len 1000, room for 100, got 101`},
		{"straddle", "explicit tied against the default above = 3K/4", map[string]any{"K": int64(8), "lengths": ints(10), "tied": int64(5)}, `case topk_transform/e: param "tied": above + tied values must fit in every row: row 0 has seq_len 10, room for 4, got 5`},
		{"lowcontrast", "a row longer than the band has distinct values", map[string]any{"K": int64(4), "lengths": ints(3, 1<<21+1), "span": "coarse"}, `case topk_transform/e: param "lengths": span "coarse" holds 2097152 distinct f32 values; row 1 has seq_len 2097153`},
		{"pseudotie", "bands", map[string]any{"K": int64(4), "lengths": ints(3), "band": "ones"}, `case topk_transform/e: param "band": must be one of zeros, subnormals, nans, got "ones"`},
		{"pseudotie", "above ≥ 0", map[string]any{"K": int64(4), "lengths": ints(30), "above": int64(-1)}, `case topk_transform/e: param "above": must be ≥ 0, got -1`},
		{"pseudotie", "above beyond a row", map[string]any{"K": int64(4), "lengths": ints(30, 3), "above": int64(4)}, `case topk_transform/e: param "above": above values must fit in every row: row 1 has seq_len 3, room for 3, got 4`},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		if tt.reason == "" || seen[tt.reason] {
			t.Fatalf("row %q: empty or duplicate reason", tt.reason)
		}
		seen[tt.reason] = true
		spec := difftest.CaseSpec{Kernel: KernelName, Family: tt.family, Name: "e", Params: tt.params}
		_, err := NewCase(spec, 1, 1)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s:\n got %v\nwant %s", tt.reason, err, tt.want)
		}
		_, _, err = difftest.GenerateCase(difftest.Item{Seed: 1, SuiteCase: difftest.SuiteCase{File: "t.toml", Spec: spec}})
		var se *difftest.SuiteError
		if !errors.As(err, &se) {
			t.Errorf("%s: GenerateCase returned %T %v, want a *difftest.SuiteError (exit 2)", tt.reason, err, err)
		}
	}
}

// TestNewCaseAtLimits: values at the limits are accepted. (A batch
// smaller than len(lengths), which would leave lengths undrawn, is an
// error: TestBatchDropsNoLength.)
func TestNewCaseAtLimits(t *testing.T) {
	tests := []struct {
		family, reason string
		params         map[string]any
	}{
		{"gaussian", "K = MaxK on a short row", map[string]any{"K": int64(MaxK), "lengths": ints(3)}},
		{"gaussian", "batch·K = MaxOutputEntries", map[string]any{"K": int64(1024), "lengths": ints(0), "batch": int64(MaxBatch), "pages": "perm"}},
		{"relu", "positives = L", map[string]any{"K": int64(4), "lengths": ints(100, 300), "positives": int64(100)}},
		{"straddle", "above + tied = L", map[string]any{"K": int64(4), "lengths": ints(100), "above": int64(60), "tied": int64(40)}},
		{"masked", "finite = 0", map[string]any{"K": int64(4), "lengths": ints(100), "finite": int64(0)}},
	}
	for _, tt := range tests {
		c := gen(t, tt.family, "limits", tt.params)
		if err := checkLimits(c.Params.(*Params)); err != nil {
			t.Errorf("%s: %v", tt.reason, err)
		}
	}
}

// TestFromTensorsRoundTrip: a case rebuilt from its tensors and params
// JSON has the same inputs and the same reference outputs.
func TestFromTensorsRoundTrip(t *testing.T) {
	c := gen(t, "needle", "rt", map[string]any{"K": int64(8), "P": int64(2), "lengths": ints(100, 5), "raw": false})
	js, m := kerneltest.Captured(t, c)
	r := kerneltest.RoundTrip(t, Kernel{}, c)
	a, b := runRef(t, c), runRef(t, r)
	if len(a) != 1 || len(b) != 1 || !slices.Equal(a[0].Data, b[0].Data) {
		t.Errorf("reference differs after the round trip")
	}
	if got := r.Params.(*Params); !slices.Equal(got.Needles, c.Params.(*Params).Needles) || got.Family != "needle" {
		t.Errorf("params %+v", got)
	}
	delete(m, TensorPageTable)
	if _, err := FromTensors(c.ID, js, m); err == nil || err.Error() != "invalid input: page_table: missing from the capture" {
		t.Errorf("missing tensor: %v", err)
	}
	if _, err := FromTensors(c.ID, json.RawMessage(`{"K": 8, "P": 2, "extra": 1}`), m); err == nil || !strings.Contains(err.Error(), `unknown field "extra"`) {
		t.Errorf("unknown field: %v", err)
	}
}
