// The run-length lists of the literal suite family (`difftest shrink`
// writes them): a case's inputs written out in its suite entry.

package difftest

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseRuns decodes a run-length list of integers: tokens separated by
// white space, each a value optionally followed by "*N" (N ≥ 1 copies).
// With digits > 0 a value is exactly that many hex digits, an unsigned bit
// pattern (f32 or bf16 bits); with digits 0 it is a signed decimal that
// fits in bits bits (32 or 64). It stops with an error past limit values,
// before allocating them, so a short string cannot ask for a huge list.
// Errors name the token and the rule.
func ParseRuns(s string, digits, bits, limit int) ([]int64, error) {
	var out []int64
	for _, tok := range strings.Fields(s) {
		val, rep, hasRep := strings.Cut(tok, "*")
		n := 1
		if hasRep {
			r, err := strconv.Atoi(rep)
			if err != nil || r < 1 {
				return nil, fmt.Errorf("token %q: the repeat count must be an integer ≥ 1", tok)
			}
			n = r
		}
		var x int64
		if digits > 0 {
			u, err := strconv.ParseUint(val, 16, 4*digits)
			if err != nil || len(val) != digits {
				return nil, fmt.Errorf("token %q: want %d hex digits", tok, digits)
			}
			x = int64(u)
		} else {
			v, err := strconv.ParseInt(val, 10, bits)
			if err != nil {
				return nil, fmt.Errorf("token %q: want a decimal int%d", tok, bits)
			}
			x = v
		}
		if n > limit-len(out) {
			return nil, fmt.Errorf("more than %d values", limit)
		}
		for range n {
			out = append(out, x)
		}
	}
	return out, nil
}

// RunLength encodes v as ParseRuns reads it, runs of equal values as
// "VALUE*N": with digits > 0 each value as that many hex digits (a
// non-negative bit pattern), else in decimal.
func RunLength(v []int64, digits int) string {
	var b strings.Builder
	for i := 0; i < len(v); {
		j := i + 1
		for j < len(v) && v[j] == v[i] {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if digits > 0 {
			fmt.Fprintf(&b, "%0*x", digits, v[i])
		} else {
			fmt.Fprintf(&b, "%d", v[i])
		}
		if j-i > 1 {
			fmt.Fprintf(&b, "*%d", j-i)
		}
		i = j
	}
	return b.String()
}
