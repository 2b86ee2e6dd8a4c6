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
