package difftest

import (
	"fmt"
	"sort"
)

// MaxWorst is how many elements a comparator lists in Result.Worst.
const MaxWorst = 8

// RatioCap stands in for an unbounded tolerance ratio (a non-finite value
// where a finite one is due) in Element.Ratio and a max_ratio metric: JSON
// has no +Inf.
const RatioCap = 1e9

// WorstItem is one compared element a comparator may report: its report
// entry, its tolerance ratio, and Key, its place in the output (row or
// token, then position), which orders elements of equal ratio.
type WorstItem struct {
	Element Element
	Ratio   float64
	Key     [2]int
}

// Worst keeps the MaxWorst elements of highest ratio; among equal ratios
// the lower Key, then the lower Element.Index, comes first. The order is
// total, so the list is the same for any split of a comparison into
// chunks merged in any order (comparators tally rows in parallel). The
// zero value is an empty list.
type Worst struct {
	items []WorstItem
}

// worstLess orders a before b: higher ratio, then lower key, then lower
// index.
func worstLess(a, b WorstItem) bool {
	if a.Ratio != b.Ratio {
		return a.Ratio > b.Ratio
	}
	if a.Key != b.Key {
		if a.Key[0] != b.Key[0] {
			return a.Key[0] < b.Key[0]
		}
		return a.Key[1] < b.Key[1]
	}
	return a.Element.Index < b.Element.Index
}

// Admits reports whether an element of that ratio and key would enter the
// list, so that its report entry need only be built then. An element with
// the key of the last listed one and the same ratio is not admitted.
func (w *Worst) Admits(ratio float64, key [2]int) bool {
	if len(w.items) < MaxWorst {
		return true
	}
	last := w.items[MaxWorst-1]
	return worstLess(WorstItem{Ratio: ratio, Key: key, Element: Element{Index: last.Element.Index}}, last)
}

// Add puts it in the list if it ranks among the MaxWorst first.
func (w *Worst) Add(it WorstItem) {
	if len(w.items) == MaxWorst && !worstLess(it, w.items[MaxWorst-1]) {
		return
	}
	w.items = append(w.items, it)
	sort.Slice(w.items, func(i, j int) bool { return worstLess(w.items[i], w.items[j]) })
	if len(w.items) > MaxWorst {
		w.items = w.items[:MaxWorst]
	}
}

// Merge adds every element of o.
func (w *Worst) Merge(o *Worst) {
	for _, it := range o.items {
		w.Add(it)
	}
}

// Items returns the listed elements, worst first.
func (w *Worst) Items() []WorstItem { return w.items }

// Elements returns the listed report entries, worst first (Result.Worst).
func (w *Worst) Elements() []Element {
	var els []Element
	for _, it := range w.items {
		els = append(els, it.Element)
	}
	return els
}

// Offer lists the element that mk builds, at that ratio and key, when the
// list admits it (Admits); mk is called only then, and the element's
// Ratio is set to RatioOf(ratio).
func (w *Worst) Offer(ratio float64, key [2]int, mk func() Element) {
	if !w.Admits(ratio, key) {
		return
	}
	el := mk()
	el.Ratio = RatioOf(ratio)
	w.Add(WorstItem{Element: el, Ratio: ratio, Key: key})
}

// Tally counts a comparator's compared elements: how many (Elements), how
// many mismatch, how many of those are non-finite, the largest tolerance
// ratio (capped at RatioCap) and the worst elements. A comparator that
// compares chunks in parallel Merges their tallies; one with counters of
// its own embeds a Tally in its tally. The zero value is empty.
type Tally struct {
	Elements, Mismatches, NonFinite int
	MaxRatio                        float64
	Worst                           Worst
}

// Record counts one compared element: whether it failed, whether a failed
// one is non-finite (class NonFinite), its tolerance ratio (capped at
// RatioCap) and key, its place in the output (Worst). mk builds its
// report entry, called only when the element enters the worst list; a
// passing element of ratio 0 (the exact value) never does.
func (t *Tally) Record(key [2]int, failed, nonFinite bool, ratio float64, mk func() Element) {
	t.Elements++
	if failed {
		t.Mismatches++
		if nonFinite {
			t.NonFinite++
		}
	}
	ratio = min(ratio, RatioCap)
	t.MaxRatio = max(t.MaxRatio, ratio)
	if ratio == 0 && !failed {
		return
	}
	t.Worst.Offer(ratio, key, mk)
}

// Merge adds o's counts and worst elements.
func (t *Tally) Merge(o *Tally) {
	t.Elements += o.Elements
	t.Mismatches += o.Mismatches
	t.NonFinite += o.NonFinite
	t.MaxRatio = max(t.MaxRatio, o.MaxRatio)
	t.Worst.Merge(&o.Worst)
}

// Verdict sets r's class and message when an element mismatched, and
// reports whether one did: class NonFinite when a mismatch is non-finite,
// else Mismatch; the message names the worst element and the count, as
// "logits [1][0]: got 5.3e+16, want 4.78 (ratio 1e+09); 429 of 1500
// elements mismatch".
func (t *Tally) Verdict(r *Result) bool {
	if t.Mismatches == 0 {
		return false
	}
	r.Class = Mismatch
	if t.NonFinite > 0 {
		r.Class = NonFinite
	}
	w := t.Worst.Items()[0]
	r.Message = fmt.Sprintf("%s %s: got %s, want %s (ratio %.3g); %d of %d elements mismatch",
		w.Element.Tensor, w.Element.Index, w.Element.Got, w.Element.Want, w.Ratio, t.Mismatches, t.Elements)
	return true
}
