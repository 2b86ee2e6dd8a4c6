package topk

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// TestReferenceHandWorked: K = 4, P = 2, four rows worked out by hand.
//
//	row 0, L = 6: [0.5, 3, −1, 2, 2, 7 | NaN, inf]; top 4 = 7@5, 3@1,
//	  2@3, 2@4 → raw [1 3 4 5]; table [5 2 9 0]: slot(1) = 5·2+1 = 11,
//	  slot(3) = 2·2+1 = 5, slot(4) = 9·2 = 18, slot(5) = 9·2+1 = 19.
//	row 1, L = 3 ≤ K: raw [0 1 2 −1]; table [7 3]: 14, 15, 6, −1.
//	row 2, L = 5: [+0, −0, −inf, +0, −NaN]; key32 order −NaN < −inf < −0
//	  < +0, so the top 4 leave out only the −NaN at 4 → raw [0 1 2 3];
//	  table [1 4 6]: 2, 3, 8, 9.
//	row 3, L = 8: [1 1 NaN 1 1 1 5 1]; +NaN ranks above everything, then
//	  5, then two of the six tied 1.0s (the reference takes the lowest
//	  positions, 0 and 1) → raw [0 1 2 6]; table [10 11 12 13]: 20, 21,
//	  22, 26.
func TestReferenceHandWorked(t *testing.T) {
	scores := [][]uint32{
		{fb(0.5), fb(3), fb(-1), fb(2), fb(2), fb(7), posNaN, posInf},
		{negZ, 0, negInf},
		{0, negZ, negInf, 0, negNaN},
		{fb(1), fb(1), posNaN, fb(1), fb(1), fb(1), fb(5), fb(1)},
	}
	lens := []int32{6, 3, 5, 8}
	table := [][]int32{{5, 2, 9, 0}, {7, 3}, {1, 4, 6}, {10, 11, 12, 13}}
	wantRaw := [][]int32{{1, 3, 4, 5}, {0, 1, 2, -1}, {0, 1, 2, 3}, {0, 1, 2, 6}}
	wantPage := [][]int32{{11, 5, 18, 19}, {14, 15, 6, -1}, {2, 3, 8, 9}, {20, 21, 22, 26}}
	for _, raw := range []bool{true, false} {
		c := handCase(t, 4, 2, raw, scores, lens, table)
		outs := runRef(t, c)
		for b := range lens {
			if got := rowI32(outs[0], b, 4); !slices.Equal(got, wantPage[b]) {
				t.Errorf("raw=%v row %d: page_indices %v, want %v", raw, b, got, wantPage[b])
			}
			if raw {
				if got := rowI32(outs[1], b, 4); !slices.Equal(got, wantRaw[b]) {
					t.Errorf("row %d: raw_indices %v, want %v", b, got, wantRaw[b])
				}
			}
		}
		if r := Check(c, outs, outs); r.Failed() {
			t.Errorf("raw=%v: reference fails its own check: %s", raw, r.Message)
		}
		// Another tie-break of row 3 ({NaN, 5, 1@3, 1@7}, any order) is
		// just as valid.
		alt := runRef(t, c)
		setRow(alt[0], 3, 4, []int32{26, 22, 27, 23})
		if raw {
			setRow(alt[1], 3, 4, []int32{6, 2, 7, 3})
		}
		if r := Check(c, alt, outs); r.Failed() {
			t.Errorf("raw=%v: alternative tie-break rejected: %s", raw, r.Message)
		}
	}
}

// TestPublicBugShapes runs each public-bug input shape of docs/contracts/topk_transform.md on
// the reference at K = 2048 and states the expected selection.
func TestPublicBugShapes(t *testing.T) {
	const K = 2048
	type want func(c *difftest.Case, raw []int32) error
	tests := []struct {
		name, reason string
		family       string
		spec         map[string]any
		check        want
	}{
		{"relu-8320", "ReLU-degenerate row: 100 positives and 1948 of the 8220 zeros", "relu",
			map[string]any{"K": int64(K), "P": int64(64), "lengths": []any{int64(8320)}},
			func(c *difftest.Case, raw []int32) error {
				pos := 0
				for _, i := range raw {
					if s := c.Inputs[0].F32(int(i)); s > 0 {
						pos++
					} else if fb(s) != 0 {
						return fmt.Errorf("pick %d holds %v, want +0", i, s)
					}
				}
				if pos != 100 {
					return fmt.Errorf("%d positives chosen, want all 100", pos)
				}
				return nil
			}},
		{"masked-3000", "1024 finite values, 1024 of the 1976 −inf positions must be picked, never −1", "masked",
			map[string]any{"K": int64(K), "P": int64(64), "lengths": []any{int64(3000)}, "finite": int64(1024)},
			func(c *difftest.Case, raw []int32) error {
				inf := 0
				for _, i := range raw {
					if i < 0 {
						return fmt.Errorf("−1 among the picks")
					}
					if c.Inputs[0].U32(int(i)) == negInf {
						inf++
					}
				}
				if inf != K-1024 {
					return fmt.Errorf("%d −inf picks, want %d", inf, K-1024)
				}
				return nil
			}},
		{"needle-22000", "the planted maximum at L/3 = 7333 is chosen", "needle",
			map[string]any{"K": int64(K), "P": int64(64), "lengths": []any{int64(22000)}},
			func(c *difftest.Case, raw []int32) error {
				if !slices.Contains(raw, 7333) {
					return fmt.Errorf("needle at 7333 not chosen")
				}
				return nil
			}},
		{"lowcontrast-coarse", "16384 distinct values in [1, 1.25): exactly the 2048 largest bit patterns", "lowcontrast",
			map[string]any{"K": int64(K), "P": int64(64), "lengths": []any{int64(16384)}, "span": "coarse"},
			func(c *difftest.Case, raw []int32) error {
				// Values are 0x3F800000 + r·128 for ranks r; the top K
				// are r ≥ 16384 − 2048.
				for _, i := range raw {
					if r := (c.Inputs[0].U32(int(i)) - 0x3F800000) / 128; r < 16384-K {
						return fmt.Errorf("position %d has rank %d, below the top %d", i, r, K)
					}
				}
				return nil
			}},
		{"straddle-5000", "all 1536 values above 1.0 and 512 of the 1024 tied 1.0s", "straddle",
			map[string]any{"K": int64(K), "P": int64(64), "lengths": []any{int64(5000)}},
			func(c *difftest.Case, raw []int32) error {
				var above, tied int
				for _, i := range raw {
					switch s := c.Inputs[0].F32(int(i)); {
					case s > 1:
						above++
					case s == 1:
						tied++
					default:
						return fmt.Errorf("pick %d holds %v < 1", i, s)
					}
				}
				if above != 3*K/4 || tied != K/4 {
					return fmt.Errorf("%d above and %d tied, want %d and %d", above, tied, 3*K/4, K/4)
				}
				return nil
			}},
		{"equal-3000", "an all-equal row: the reference takes positions 0..K-1", "equal",
			map[string]any{"K": int64(K), "P": int64(64), "lengths": []any{int64(3000)}},
			func(c *difftest.Case, raw []int32) error {
				for j, i := range raw {
					if i != int32(j) {
						return fmt.Errorf("entry %d is %d", j, i)
					}
				}
				return nil
			}},
		{"lowcontrast-high", "16384 distinct values ≥ 65520 (fp16 +inf): the 2048 largest bit patterns", "lowcontrast",
			map[string]any{"K": int64(K), "P": int64(64), "lengths": []any{int64(16384)}, "span": "high"},
			func(c *difftest.Case, raw []int32) error {
				for _, i := range raw {
					if r := (c.Inputs[0].U32(int(i)) - 0x477FF000) / 1024; r < 16384-K {
						return fmt.Errorf("position %d has rank %d", i, r)
					}
				}
				return nil
			}},
		{"lowcontrast-tiny", "16384 distinct values in [0, 1.5e-5), subnormals included: the largest 2048", "lowcontrast",
			map[string]any{"K": int64(K), "P": int64(64), "lengths": []any{int64(16384)}, "span": "tiny"},
			func(c *difftest.Case, raw []int32) error {
				const step = 0x377BA882 / 16384
				for _, i := range raw {
					if r := c.Inputs[0].U32(int(i)) / step; r < 16384-K {
						return fmt.Errorf("position %d has rank %d", i, r)
					}
				}
				return nil
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := difftest.CaseSpec{Kernel: KernelName, Family: tt.family, Name: tt.name, Params: tt.spec}
			c, err := NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
			if err != nil {
				t.Fatal(err)
			}
			outs := runRef(t, c)
			if err := tt.check(c, rowI32(outs[1], 0, K)); err != nil {
				t.Errorf("%s: %v", tt.reason, err)
			}
		})
	}
}

// TestRadixMatchesSort checks the radix path against the plain full sort,
// byte for byte, on random rows drawn from small alphabets (heavy ties),
// full-range bit patterns (NaN of both signs, ±inf, ±0, subnormals) and
// every K from 1 to L−1 for short rows.
func TestRadixMatchesSort(t *testing.T) {
	st := rng.NewStream(42, 0, 0)
	sp := rng.SpecialsF32()
	draws := []struct {
		name string
		draw func() uint32
	}{
		{"bits", func() uint32 { return st.Uint32() }},
		{"specials", func() uint32 { return sp[st.Intn(len(sp))] }},
		{"alphabet4", func() uint32 { return []uint32{0, negZ, fb(1), fb(-1)}[st.Intn(4)] }},
		{"gaussian-specials", func() uint32 {
			if st.Intn(4) == 0 {
				return sp[st.Intn(len(sp))]
			}
			return fb(float32(st.Normal()))
		}},
		{"narrow", func() uint32 { return 0x3F800000 + uint32(st.Intn(300)) }},
	}
	var s scratch
	for _, d := range draws {
		for trial := 0; trial < 60; trial++ {
			L := 2 + st.Intn(3000)
			keys := make([]uint32, L)
			for i := range keys {
				keys[i] = numeric.Key32(d.draw())
			}
			k := 1 + st.Intn(L-1)
			fast, slow := make([]int32, k), make([]int32, k)
			selectRadix(keys, k, fast, &s)
			selectSort(keys, k, slow, nil)
			if !slices.Equal(fast, slow) {
				t.Fatalf("%s trial %d (L=%d k=%d): radix %v… differs from sort %v…", d.name, trial, L, k, fast[:min(k, 8)], slow[:min(k, 8)])
			}
		}
	}
}

// TestReferenceFastEqualsSortCases runs whole generated cases both ways.
func TestReferenceFastEqualsSortCases(t *testing.T) {
	for _, fam := range Families() {
		spec := difftest.CaseSpec{Kernel: KernelName, Family: fam, Name: fam + "/x", Params: map[string]any{
			"K": int64(64), "P": int64(2), "lengths": []any{int64(0), int64(63), int64(64), int64(65), int64(300), int64(1000)},
		}}
		if f, _ := familyByName(fam); f.bits16 {
			spec.Params["dtype"] = ScoreF16
		}
		c, err := NewCase(spec, 7, rng.CaseKey(7, spec.ID()))
		if err != nil {
			t.Fatal(err)
		}
		fast := runRef(t, c)
		slow := newOuts(c)
		if err := reference(c, slow, selectSort); err != nil {
			t.Fatal(err)
		}
		for i := range fast {
			if !slices.Equal(fast[i].Data, slow[i].Data) {
				t.Errorf("%s: %s differs between radix and sort", fam, fast[i].Name)
			}
		}
	}
}

// TestPermutationProperty: permuting a row's scores together with its
// page table (whole pages, so each score keeps its slot) gives the same
// set of slots.
func TestPermutationProperty(t *testing.T) {
	const K, P, pages = 16, 4, 40
	st := rng.NewStream(9, 0, 0)
	for trial := 0; trial < 20; trial++ {
		L := P * pages
		scores := make([]uint32, L)
		for i := range scores {
			scores[i] = fb(float32(st.Intn(20))) // many ties
		}
		table := make([]int32, pages)
		for j, id := range st.Perm(pages) {
			table[j] = int32(100 + id)
		}
		perm := st.Perm(pages)
		pScores := make([]uint32, L)
		pTable := make([]int32, pages)
		for j, from := range perm {
			copy(pScores[j*P:(j+1)*P], scores[from*P:(from+1)*P])
			pTable[j] = table[from]
		}
		a := runRef(t, handCase(t, K, P, false, [][]uint32{scores}, []int32{int32(L)}, [][]int32{table}))
		b := runRef(t, handCase(t, K, P, false, [][]uint32{pScores}, []int32{int32(L)}, [][]int32{pTable}))
		// Ties make the slot sets differ legitimately; compare the
		// multiset of selected scores and, where the K-th is unique, the
		// slot sets themselves.
		sa, sb := rowI32(a[0], 0, K), rowI32(b[0], 0, K)
		valOf := func(sc []uint32, tab []int32, slot int32) uint32 {
			for j, id := range tab {
				if slot/P == id {
					return sc[j*P+int(slot%P)]
				}
			}
			t.Fatalf("slot %d not in table", slot)
			return 0
		}
		va, vb := make([]uint32, K), make([]uint32, K)
		for j := range sa {
			va[j], vb[j] = valOf(scores, table, sa[j]), valOf(pScores, pTable, sb[j])
		}
		slices.Sort(va)
		slices.Sort(vb)
		if !slices.Equal(va, vb) {
			t.Fatalf("trial %d: selected values differ after permutation", trial)
		}
		if r := Check(handCase(t, K, P, false, [][]uint32{pScores}, []int32{int32(L)}, [][]int32{pTable}), b, b); r.Failed() {
			t.Fatal(r.Message)
		}
	}
	// Distinct values: the slot sets must be identical.
	scores := make([]uint32, P*pages)
	for i, r := range st.Perm(len(scores)) {
		scores[i] = fb(float32(r))
	}
	table := make([]int32, pages)
	for j := range table {
		table[j] = int32(3 * j)
	}
	perm := st.Perm(pages)
	pScores, pTable := make([]uint32, len(scores)), make([]int32, pages)
	for j, from := range perm {
		copy(pScores[j*P:(j+1)*P], scores[from*P:(from+1)*P])
		pTable[j] = table[from]
	}
	a := rowI32(runRef(t, handCase(t, K, P, false, [][]uint32{scores}, []int32{int32(len(scores))}, [][]int32{table}))[0], 0, K)
	b := rowI32(runRef(t, handCase(t, K, P, false, [][]uint32{pScores}, []int32{int32(len(scores))}, [][]int32{pTable}))[0], 0, K)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Errorf("slot sets differ: %v vs %v", a, b)
	}
}

// BenchmarkReference64x262144K2048 is the sizing benchmark of the issue:
// 64 rows of 262,144 Gaussian f32 scores, K = 2048, P = 64.
func BenchmarkReference64x262144K2048(b *testing.B) {
	lengths := []any{int64(262144)}
	spec := difftest.CaseSpec{Kernel: KernelName, Family: "gaussian", Name: "bench", Params: map[string]any{
		"K": int64(2048), "P": int64(64), "lengths": lengths, "batch": int64(64),
	}}
	c, err := NewCase(spec, 1, rng.CaseKey(1, spec.ID()))
	if err != nil {
		b.Fatal(err)
	}
	outs := newOuts(c)
	b.SetBytes(int64(len(c.Inputs[0].Data)))
	b.ResetTimer()
	for b.Loop() {
		if err := Reference(c, outs); err != nil {
			b.Fatal(err)
		}
	}
}
