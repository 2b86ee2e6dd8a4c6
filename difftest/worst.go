package difftest

import "sort"

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
