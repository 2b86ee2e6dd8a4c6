package difftest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestWorstOrder checks the list by hand: ratio first, then key, then
// index, capped at MaxWorst, and Admits agreeing with Add.
func TestWorstOrder(t *testing.T) {
	var w Worst
	add := func(r float64, k0, k1 int, idx string) {
		it := WorstItem{Element: Element{Index: idx}, Ratio: r, Key: [2]int{k0, k1}}
		w.Add(it)
	}
	add(0.5, 3, 0, "a")
	add(2, 9, 9, "b")
	add(0.5, 1, 7, "c")
	add(0.5, 1, 7, "a")
	add(0.5, 1, 2, "d")
	var got []string
	for _, e := range w.Elements() {
		got = append(got, e.Index)
	}
	if want := []string{"b", "d", "a", "c", "a"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	for i := 0; i < 10; i++ {
		add(1, 5, i, fmt.Sprint(i))
	}
	if n := len(w.Items()); n != MaxWorst {
		t.Fatalf("%d items, want %d", n, MaxWorst)
	}
	// b (2), then the ratio-1 elements of keys (5,0)..(5,6).
	if last := w.Items()[MaxWorst-1]; last.Ratio != 1 || last.Key != [2]int{5, 6} {
		t.Fatalf("last %+v", last)
	}
	for _, c := range []struct {
		r    float64
		key  [2]int
		want bool
	}{{1, [2]int{5, 5}, true}, {1, [2]int{5, 6}, false}, {1, [2]int{5, 7}, false}, {1.5, [2]int{99, 0}, true}, {0.9, [2]int{0, 0}, false}} {
		if got := w.Admits(c.r, c.key); got != c.want {
			t.Errorf("Admits(%v, %v) = %v, want %v", c.r, c.key, got, c.want)
		}
	}
}

// TestWorstMergeAnySplit checks that merging chunks gives the list of the
// whole, whatever the split.
func TestWorstMergeAnySplit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	items := make([]WorstItem, 200)
	for i := range items {
		items[i] = WorstItem{Element: Element{Index: fmt.Sprint(i % 7)}, Ratio: float64(r.IntN(4)), Key: [2]int{r.IntN(5), r.IntN(5)}}
	}
	var whole Worst
	for _, it := range items {
		whole.Add(it)
	}
	for split := 1; split < 60; split += 7 {
		var total Worst
		for lo := len(items); lo > 0; lo -= split {
			var part Worst
			for _, it := range items[max(0, lo-split):lo] {
				part.Add(it)
			}
			total.Merge(&part)
		}
		if !slices.Equal(total.Items(), whole.Items()) {
			t.Fatalf("split %d: %v, want %v", split, total.Items(), whole.Items())
		}
	}
}

// Offer builds an element only when the list admits it, and sets its
// ratio: with the list full of ratio 2, a ratio 1 element is not built
// and a ratio 3 one is listed first with Ratio 3.
func TestWorstOffer(t *testing.T) {
	var w Worst
	for i := 0; i < MaxWorst; i++ {
		w.Offer(2, [2]int{i, 0}, func() Element { return Element{Index: fmt.Sprint(i)} })
	}
	built := 0
	w.Offer(1, [2]int{99, 0}, func() Element { built++; return Element{Index: "low"} })
	if built != 0 {
		t.Errorf("a ratio below the full list's last built its element")
	}
	w.Offer(3, [2]int{100, 0}, func() Element { built++; return Element{Index: "high"} })
	if built != 1 || len(w.Items()) != MaxWorst {
		t.Fatalf("built %d, listed %d; want 1, %d", built, len(w.Items()), MaxWorst)
	}
	if first := w.Items()[0]; first.Element.Index != "high" || first.Element.Ratio == nil || *first.Element.Ratio != 3 {
		t.Errorf("first listed %+v, want high with ratio 3", first.Element)
	}
}

// CheckOneOutput refuses a missing or extra output and an output its rule
// rejects, naming them, and accepts one good tensor each.
func TestCheckOneOutput(t *testing.T) {
	good := MustTensor("out", F32, 2)
	bad := MustTensor("out", I32, 2)
	rule := func(x *Tensor) error {
		if x.DType != F32 {
			return fmt.Errorf("out: dtype must be f32, got %s", x.DType)
		}
		return nil
	}
	for _, tc := range []struct {
		got, want []*Tensor
		msg       string
	}{
		{nil, []*Tensor{good}, "want 1 output (out), got 0"},
		{[]*Tensor{good}, []*Tensor{good, good}, "want 1 output (out), got 2"},
		{[]*Tensor{bad}, []*Tensor{good}, "out: dtype must be f32, got I32"},
		{[]*Tensor{good}, []*Tensor{good}, ""},
	} {
		r, ok := CheckOneOutput("out", tc.got, tc.want, rule)
		if ok != (tc.msg == "") || r.Message != tc.msg || (!ok && r.Class != BadOutput) {
			t.Errorf("CheckOneOutput = %+v, %v; want message %q", r, ok, tc.msg)
		}
	}
}

// TestTally records by hand: an exact pass, a pass within the bound, a
// mismatch and a non-finite mismatch past RatioCap, in two tallies merged:
// the counts, the capped largest ratio, the worst list without the exact
// pass, and the verdict naming the worst element.
func TestTally(t *testing.T) {
	el := func(i string) func() Element {
		return func() Element { return Element{Tensor: "y", Index: i, Got: "g" + i, Want: "w" + i} }
	}
	var a, b Tally
	a.Record([2]int{0, 0}, false, false, 0, func() Element { t.Fatal("an exact pass built its entry"); return Element{} })
	a.Record([2]int{0, 1}, false, false, 0.5, el("[1]"))
	var r Result
	if a.Verdict(&r) || r.Class != Pass || r.Message != "" {
		t.Fatalf("no mismatch: verdict %+v", r)
	}
	b.Record([2]int{1, 0}, true, false, 3, el("[2]"))
	b.Record([2]int{1, 1}, true, true, 2*RatioCap, el("[3]"))
	a.Merge(&b)
	if a.Elements != 4 || a.Mismatches != 2 || a.NonFinite != 1 || a.MaxRatio != RatioCap || len(a.Worst.Items()) != 3 {
		t.Fatalf("tally %d elements, %d mismatches, %d non-finite, max ratio %g, %d worst", a.Elements, a.Mismatches, a.NonFinite, a.MaxRatio, len(a.Worst.Items()))
	}
	if !a.Verdict(&r) || r.Class != NonFinite || r.Message != "y [3]: got g[3], want w[3] (ratio 1e+09); 2 of 4 elements mismatch" {
		t.Errorf("verdict %s %q", r.Class, r.Message)
	}
	b = Tally{}
	b.Record([2]int{0, 0}, true, false, 3, el("[0]"))
	if !b.Verdict(&r) || r.Class != Mismatch || r.Message != "y [0]: got g[0], want w[0] (ratio 3); 1 of 1 elements mismatch" {
		t.Errorf("verdict %s %q", r.Class, r.Message)
	}
}
