package difftest

import (
	"fmt"
	"strings"
)

// Nearest returns the candidate closest to name by edit distance
// (Levenshtein: insertions, deletions and substitutions of bytes, each
// costing 1), for "did you mean" hints: "topk_transfrom" → "topk_transform".
// It returns "" when no candidate is within max(2, len(name)/3) edits (a
// guess that far off would mislead) or when candidates is empty; ties go
// to the earlier candidate.
func Nearest(name string, candidates []string) string {
	best, bestD := "", max(2, len(name)/3)+1
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b in bytes, by
// the two-row dynamic programme.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// KernelNames returns the registered kernels' names, sorted.
func KernelNames() []string {
	var names []string
	for _, k := range Kernels() {
		names = append(names, k.Name())
	}
	return names
}

// UnknownName is the text of an error for a name that is not among known
// (a kernel, a family): `unknown kernel "topk_transfrom" (did you mean
// "topk_transform"? known: indexer_logits, …)`, the hint only where
// Nearest finds one. what names the kind of thing ("kernel").
func UnknownName(what, name string, known []string) string {
	list := "none"
	if len(known) > 0 {
		list = strings.Join(known, ", ")
	}
	if n := Nearest(name, known); n != "" {
		return fmt.Sprintf("unknown %s %q (did you mean %q? known: %s)", what, name, n, list)
	}
	return fmt.Sprintf("unknown %s %q (known: %s)", what, name, list)
}
