package logits

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// handCase builds the hand-worked case: one row, two heads, three keys in
// one page of P = 4, the fourth slot unused.
//
//	keys  k0 = (1, 2, 0, …)·0.5   k1 = (−1, 0.5, 0, …)·2   k2 = (2, 0, 1, …)·1
//	q     h0 = (1, 1, 0, …)       h1 = (−2, 0, 0.5, …)     w = (0.5, 2)
//
// dot products (h0, h1): k0 (3, −2), k1 (−0.5, 2), k2 (2, −3.5); after the
// ReLU and the weights S = 1.5, 4, 1; times the scales: 0.75, 8, 1 (BF16:
// scale 1, so 1.5, 4, 1). Position 3 is past L = 3: −inf (clean).
func handCase(store string) *difftest.Case {
	p := Params{Store: store, PageSize: 4, Heads: 2, Clean: true, AccumBits: 24, Batch: 1, Stride: 4, MaxPages: 1, NumPages: 1, Family: "hand"}
	q := difftest.MustTensor(NameQ, p.QDType(), 1, 2, Dim)
	w := difftest.MustTensor(NameWeights, difftest.F32, 1, 2)
	cache := difftest.MustTensor(NameCache, difftest.U8, 1, p.PageBytes())
	lens := difftest.MustTensor(NameSeqLens, difftest.I32, 1)
	table := difftest.MustTensor(NamePageTable, difftest.I32, 1, 1)
	lens.SetI32(0, 3)
	w.SetF32(0, 0.5)
	w.SetF32(1, 2)
	// e4m3fn codes: 0x38 = 1, 0x40 = 2, 0x30 = 0.5, 0xB8 = −1, 0xC0 = −2;
	// bf16: 0x3F80 = 1, 0x4000 = 2, 0x3F00 = 0.5, 0xBF80 = −1, 0xC000 = −2.
	code := map[float64][2]uint16{1: {0x38, 0x3F80}, 2: {0x40, 0x4000}, 0.5: {0x30, 0x3F00}, -1: {0xB8, 0xBF80}, -2: {0xC0, 0xC000}}
	set := func(t *difftest.Tensor, base int, vals map[int]float64) {
		for d, v := range vals {
			c := code[v]
			if store == StoreFP8 {
				t.Data[base+d] = byte(c[0])
			} else {
				binary.LittleEndian.PutUint16(t.Data[2*base+2*d:], c[1])
			}
		}
	}
	set(q, 0, map[int]float64{0: 1, 1: 1})
	set(q, Dim, map[int]float64{0: -2, 2: 0.5})
	keys := []map[int]float64{{0: 1, 1: 2}, {0: -1, 1: 0.5}, {0: 2, 2: 1}}
	scales := []uint32{0x3F000000, 0x40000000, 0x3F800000} // 0.5, 2, 1
	for s, k := range keys {
		set(cache, s*Dim, k) // FP8: codes at off·128; BF16: values at off·256 (set doubles the offset)
		if store == StoreFP8 {
			binary.LittleEndian.PutUint32(cache.Data[Dim*4+4*s:], scales[s]) // scales after the page's 4·128 codes
		}
	}
	return &difftest.Case{ID: "hand/" + store, Kernel: KernelName, Family: "hand", Params: p,
		Inputs: []*difftest.Tensor{q, w, cache, lens, table}, Outputs: p.Outputs()}
}

// TestHandWorked pins the reference's output bytes on the hand-worked
// case, for both stores, and every legitimate f32 variant and the CUDA
// order reproduce them exactly (all values are exact in f32).
func TestHandWorked(t *testing.T) {
	for _, tt := range []struct {
		store string
		want  [4]uint32
	}{
		{StoreFP8, [4]uint32{0x3F400000, 0x41000000, 0x3F800000, 0xFF800000}},  // 0.75, 8, 1, −inf
		{StoreBF16, [4]uint32{0x3FC00000, 0x40800000, 0x3F800000, 0xFF800000}}, // 1.5, 4, 1, −inf
	} {
		c := handCase(tt.store)
		if err := Validate(c); err != nil {
			t.Fatal(err)
		}
		got := reference(t, c)
		for i, w := range tt.want {
			if got.U32(i) != w {
				t.Errorf("%s: logits[0][%d] = 0x%08x (%g), want 0x%08x (%g)", tt.store, i, got.U32(i), got.F32(i), w, math.Float32frombits(w))
			}
		}
		for _, v := range append(legitimate, variant{"cuda", cudaOrder}) {
			out := newLogits(c)
			if err := runSim(c, []*difftest.Tensor{out}, v.sim); err != nil {
				t.Fatal(err)
			}
			for i, w := range tt.want {
				if out.U32(i) != w {
					t.Errorf("%s, variant %s: logits[0][%d] = 0x%08x, want 0x%08x", tt.store, v.name, i, out.U32(i), w)
				}
			}
		}
		r := Check(c, []*difftest.Tensor{got}, []*difftest.Tensor{got})
		if r.Failed() || r.Metrics["checked"] != 3 || r.Metrics["tail_checked"] != 1 || r.Metrics["zero_logits"] != 0 {
			t.Errorf("%s: self-check %v %s %v", tt.store, r.Class, r.Message, r.Metrics)
		}
	}
}

// A page table permuted together with its pages gives the same logits,
// bit for bit (the reference and the kernel model), on cases of both
// stores whose rows use several pages.
func TestPermutedPagesSameLogits(t *testing.T) {
	for _, store := range []string{StoreFP8, StoreBF16} {
		c := mustCase(t, "gaussian", map[string]any{"lengths": []any{int64(200), int64(5), int64(64)}, "H": int64(3), "store": store, "pages": PagesDistinct})
		p := c.Params.(Params)
		perm := []int{}
		for i := p.NumPages - 1; i >= 0; i-- { // reverse the pages: every id moves
			perm = append(perm, i)
		}
		d := permutePages(c, perm)
		for _, impl := range []struct {
			name string
			run  func(c *difftest.Case, out *difftest.Tensor) error
		}{
			{"reference", func(c *difftest.Case, out *difftest.Tensor) error { return Compute(c, out) }},
			{"cuda model", func(c *difftest.Case, out *difftest.Tensor) error {
				return runSim(c, []*difftest.Tensor{out}, cudaOrder)
			}},
		} {
			a, b := newLogits(c), newLogits(d)
			if err := impl.run(c, a); err != nil {
				t.Fatal(err)
			}
			if err := impl.run(d, b); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < a.Len(); i++ {
				if a.U32(i) != b.U32(i) {
					t.Fatalf("%s %s: logits element %d: 0x%08x with the pages in place, 0x%08x permuted", store, impl.name, i, a.U32(i), b.U32(i))
				}
			}
		}
	}
}

// permutePages returns a copy of c whose physical page i moved to perm[i],
// with the page table rewritten to match.
func permutePages(c *difftest.Case, perm []int) *difftest.Case {
	p := c.Params.(Params)
	d := *c
	d.Inputs = make([]*difftest.Tensor, len(c.Inputs))
	for i, t := range c.Inputs {
		d.Inputs[i] = t.Clone()
	}
	pb := p.PageBytes()
	src, dst := c.Input(NameCache).Data, d.Inputs[2].Data
	for i, j := range perm {
		copy(dst[j*pb:(j+1)*pb], src[i*pb:(i+1)*pb])
	}
	tbl := d.Inputs[4]
	for i := 0; i < tbl.Len(); i++ {
		if id := tbl.I32(i); id >= 0 {
			tbl.SetI32(i, int32(perm[id]))
		}
	}
	return &d
}

// Zero weights give zero logits: every position s < L exactly ±0 (the
// reference +0), whatever the keys and queries.
func TestZeroWeightsGiveZero(t *testing.T) {
	for _, store := range []string{StoreFP8, StoreBF16} {
		c := mustCase(t, "gaussian", map[string]any{"lengths": []any{int64(130), int64(1)}, "H": int64(4), "store": store})
		w := c.Input(NameWeights)
		for i := 0; i < w.Len(); i++ {
			w.SetF32(i, 0)
		}
		out := reference(t, c)
		lens := c.Input(NameSeqLens)
		p := c.Params.(Params)
		for b := 0; b < p.Batch; b++ {
			for s := 0; s < int(lens.I32(b)); s++ {
				if v := out.U32(b*p.Stride + s); v != 0 {
					t.Fatalf("%s: logits[%d][%d] = 0x%08x with zero weights, want +0", store, b, s, v)
				}
			}
		}
		r := Check(c, []*difftest.Tensor{out}, []*difftest.Tensor{out})
		if r.Failed() || r.Metrics["zero_logits"] != r.Metrics["checked"] {
			t.Errorf("%s: %v %v", store, r.Class, r.Metrics)
		}
	}
}

// The negative family makes every head's dot product negative for every
// key: every logit exactly 0.
func TestNegativeFamilyAllZero(t *testing.T) {
	for _, store := range []string{StoreFP8, StoreBF16} {
		c := mustCase(t, "negative", map[string]any{"lengths": []any{int64(1000), int64(65)}, "H": int64(16), "store": store})
		in, err := load(c)
		if err != nil {
			t.Fatal(err)
		}
		rc0, sc, pe := in.row(0), newScratch(16), posEval{}
		for b := 0; b < 2; b++ {
			rc := rc0
			if b == 1 {
				rc = in.row(1)
			}
			for s := 0; s < int(in.lens.I32(b)); s++ {
				in.eval(rc, b, s, sc, false, &pe)
				for h, d := range sc.d {
					if !(d < 0) {
						t.Fatalf("%s: row %d position %d head %d: dot product %g, want < 0", store, b, s, h, d)
					}
				}
			}
		}
	}
}

// The e4m3fn and bf16 queries the generator draws are exact in f32 and
// finite; FP8 heads use their full range (some code at ±448).
func TestQueryQuantisation(t *testing.T) {
	c := mustCase(t, "gaussian", map[string]any{"lengths": []any{int64(1)}, "H": int64(8)})
	q := c.Input(NameQ)
	for h := 0; h < 8; h++ {
		amax := 0.0
		for d := 0; d < Dim; d++ {
			amax = math.Max(amax, math.Abs(float64(numeric.E4M3ToF32(q.Data[h*Dim+d]))))
		}
		if amax != 448 {
			t.Errorf("head %d: largest |q| %g, want 448 (the head's amax quantised to the e4m3 maximum)", h, amax)
		}
	}
}
