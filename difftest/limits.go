package difftest

// Size is a named size of a case: a parameter ("batch") or a product of
// parameters ("batch·stride"), as an InputError names it.
type Size struct {
	Name string
	V    int64
}

// NonNegative returns an *InputError naming the first of sizes below 0
// ("batch: must be ≥ 0, got -1"), or nil.
func NonNegative(sizes ...Size) error {
	for _, s := range sizes {
		if s.V < 0 {
			return Inputf(s.Name, nil, "must be ≥ 0, got %d", s.V)
		}
	}
	return nil
}

// Limit is an upper bound on a size of a case: Max, and What the size
// counts ("rows", "page-table entries"), for the message.
type Limit struct {
	Size
	Max  int64
	What string
}

// AtMost is the Limit of size name, of value v, at most max; what names
// what it counts.
func AtMost(name string, v, max int64, what string) Limit {
	return Limit{Size: Size{Name: name, V: v}, Max: max, What: what}
}

// WithinLimits returns an *InputError naming the first of limits whose
// size exceeds its Max ("batch·stride: exceeds the limit of 268435456
// scores: got 268435457"), or nil. A kernel lists the factors before
// their products: a product of unbounded factors may have overflowed
// int64, and the factor's error comes first.
func WithinLimits(limits ...Limit) error {
	for _, l := range limits {
		if l.V > l.Max {
			return Inputf(l.Name, nil, "exceeds the limit of %d %s: got %d", l.Max, l.What, l.V)
		}
	}
	return nil
}
