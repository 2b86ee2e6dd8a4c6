package topk

import (
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// floatOrders are top-k selections that rank by something coarser than
// key32: each maps a score's bits to the bits a kernel with that bug
// effectively compares, then ranks by key32 of those with ties broken by
// position. Each stands for a real way a radix-select or sort kernel
// loses key32 order, and the pseudotie family exists to catch it.
var floatOrders = []struct {
	name, bug string
	bits      func(x uint32) uint32
}{
	{"zero-equal", "compares floats with < and > (−0 == +0, ties by position) instead of key32, which ranks −0 < +0",
		func(x uint32) uint32 {
			if x == negZ {
				return 0
			}
			return x
		}},
	{"flush-to-zero", "loads scores with denormals flushed to zero (-ftz=true, DAZ), so a subnormal ties with the zero of its sign",
		func(x uint32) uint32 {
			if x&0x7F800000 == 0 {
				return x & 0x80000000
			}
			return x
		}},
	{"nan-canonical", "passes scores through arithmetic that returns the canonical NaN of the sign, so NaNs of one sign tie; key32 orders them by payload",
		func(x uint32) uint32 {
			if x&0x7FFFFFFF > 0x7F800000 {
				return x&0x80000000 | 0x7FC00000
			}
			return x
		}},
}

// floatOrderSelect is the selectFunc of a float order: selectRadix on the
// keys of the mapped bits.
func floatOrderSelect(bits func(uint32) uint32) selectFunc {
	return func(keys []uint32, k int, dst []int32, s *scratch) {
		mapped := make([]uint32, len(keys))
		for i, x := range keys {
			mapped[i] = numeric.Key32(bits(numeric.Key32Bits(x)))
		}
		selectRadix(mapped, k, dst, s)
	}
}

// runFloatOrder runs the reference's row loop with float order f.
func runFloatOrder(t testing.TB, c *difftest.Case, bits func(uint32) uint32) []*difftest.Tensor {
	t.Helper()
	outs := newOuts(c)
	if err := reference(c, outs, floatOrderSelect(bits)); err != nil {
		t.Fatal(err)
	}
	return outs
}

// TestFloatOrdersHand: one hand-worked row per bug, K = 2, P = 1, the
// identity table. The reference passes; the float order fails with the
// message derived here.
func TestFloatOrdersHand(t *testing.T) {
	tests := []struct {
		order, reason string
		row           []uint32
		want          string
	}{
		// [1, −0, +0, −0, +0]: key32 picks 1 and the first +0 {0, 2};
		// −0 == +0 picks the first zero by position {0, 1}.
		{"zero-equal", "−0 taken over +0", []uint32{fb(1), negZ, 0, negZ, 0},
			"row 0: position 1 (f32 0x80000000 = -0) is chosen but ranks below the K-th (f32 0x00000000 = 0)"},
		// [1, +0, 2^-149, +0]: key32 picks 1 and the subnormal {0, 2};
		// flushed, 2^-149 ties with +0 and position 1 wins.
		{"flush-to-zero", "+0 taken over the smallest subnormal", []uint32{fb(1), 0, 0x00000001, 0},
			"row 0: position 1 (f32 0x00000000 = 0) is chosen but ranks below the K-th (f32 0x00000001 = 1e-45)"},
		// [NaN 0x7fc00001, 1, NaN 0x7fc00000, NaN 0x7fc00002]: key32
		// picks the two largest payloads {0, 3}; canonical NaNs tie and
		// positions 0 and 2 win.
		{"nan-canonical", "the smaller +NaN payload taken", []uint32{0x7FC00001, fb(1), 0x7FC00000, 0x7FC00002},
			"row 0: position 3 (f32 0x7fc00002 = NaN) ranks above the K-th (f32 0x7fc00001 = NaN) but is not chosen"},
		// [−1, −NaN 0xffc00001, −NaN 0xffc00000, −2]: both orders keep
		// −1 and −2 ({0, 3}); every −NaN ranks below −inf either way.
		{"nan-canonical", "−NaNs below every number either way", []uint32{fb(-1), 0xFFC00001, 0xFFC00000, fb(-2)}, ""},
		// −NaN keys are the inverted bits, so a larger payload ranks
		// lower. [0xffc00001, 0xffc00000, 0xffc00002]: key32 drops
		// position 2, and so do canonical ties (last by position).
		{"nan-canonical", "the dropped −NaN happens to be last", []uint32{0xFFC00001, 0xFFC00000, 0xFFC00002}, ""},
		// [0xffc00002, 0xffc00000, 0xffc00001]: key32 keeps {1, 2} and
		// drops position 0; canonical ties keep {0, 1}.
		{"nan-canonical", "the largest −NaN payload kept", []uint32{0xFFC00002, 0xFFC00000, 0xFFC00001},
			"row 0: position 0 (f32 0xffc00002 = NaN) is chosen but ranks below the K-th (f32 0xffc00001 = NaN)"},
	}
	byName := map[string]func(uint32) uint32{}
	for _, o := range floatOrders {
		byName[o.name] = o.bits
	}
	for _, tt := range tests {
		t.Run(tt.order+"/"+tt.reason, func(t *testing.T) {
			L := len(tt.row)
			table := make([]int32, L)
			for i := range table {
				table[i] = int32(i)
			}
			c := handCase(t, 2, 1, true, [][]uint32{tt.row}, []int32{int32(L)}, [][]int32{table})
			want := runRef(t, c)
			if r := Check(c, want, want); r.Failed() {
				t.Fatalf("reference fails: %s", r.Message)
			}
			r := Check(c, runFloatOrder(t, c, byName[tt.order]), want)
			if r.Message != tt.want {
				t.Errorf("%s:\n got %q\nwant %q", tt.reason, r.Message, tt.want)
			}
		})
	}
}

// TestPseudoTieCatchesFloatOrders: every float order passes at least one
// case of each suite (so it is not trivially broken) and is caught by a
// pseudotie case of default and of quick, at seeds 1–3, while the
// reference passes those cases. The cases that catch each are logged: at
// seed 1 zero-equal and flush-to-zero are caught by pseudotie cases only
// (no other family puts a pseudo-tie at the K-th); nan-canonical also by
// specials.
func TestPseudoTieCatchesFloatOrders(t *testing.T) {
	for _, suite := range []string{"quick", "default"} {
		t.Run(suite, func(t *testing.T) {
			if suite == "default" && testing.Short() {
				t.Skip("default suite in -short mode")
			}
			specs := loadSuite(t, suite)
			seeds := []uint64{1, 2, 3}
			if suite == "default" {
				seeds = seeds[:1]
			}
			for _, seed := range seeds {
				caughtBy := make([][]string, len(floatOrders))
				byPseudo := make([]bool, len(floatOrders))
				passes := make([]int, len(floatOrders))
				for _, spec := range specs {
					c, err := NewCase(spec, seed, rng.CaseKey(seed, spec.ID()))
					if err != nil {
						t.Fatal(err)
					}
					want := runRef(t, c)
					if r := Check(c, runRef(t, c), want); r.Failed() {
						t.Errorf("seed %d %s: reference fails: %s", seed, spec.Name, r.Message)
					}
					for i, o := range floatOrders {
						if r := Check(c, runFloatOrder(t, c, o.bits), want); r.Failed() {
							caughtBy[i] = append(caughtBy[i], spec.Name)
							byPseudo[i] = byPseudo[i] || spec.Family == "pseudotie"
						} else {
							passes[i]++
						}
					}
				}
				for i, o := range floatOrders {
					if !byPseudo[i] {
						t.Errorf("%s seed %d: no pseudotie case catches %s (%s)", suite, seed, o.name, o.bug)
					}
					if passes[i] == 0 {
						t.Errorf("%s seed %d: %s fails every case", suite, seed, o.name)
					}
					t.Logf("%s seed %d: %-13s caught by %v", suite, seed, o.name, caughtBy[i])
				}
			}
		})
	}
}
