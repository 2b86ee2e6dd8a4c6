// Silent coercions of suite params (issue 9 item 10): each of these was
// taken as something the user did not write; now each is an error naming
// the file, the case, the parameter, what was written and the rule.

package topk

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest/suite"
)

// suiteWith is a one-case topk suite whose [case.params] is params.
func suiteWith(params string) string {
	return "[[case]]\nkernel = \"topk_transform\"\nfamily = \"gaussian\"\nname = \"c\"\n[case.params]\n" + params + "\n"
}

func TestSuiteParamsNotCoerced(t *testing.T) {
	const id = "suite s.toml: case topk_transform/c: "
	long := strings.TrimSuffix(strings.Repeat("7, ", MaxBatch+1), ", ")
	for _, tc := range []struct {
		reason, params, want string
	}{
		{"a single length is not an array", "K = 8\nlengths = 5",
			`param "lengths": must be an array of integers, got the integer 5 (write [5])`},
		{"K = 512.0 is a float", "K = 512.0\nlengths = [600]",
			`param "K": must be an integer, got the float 512.0 (TOML reads 512.0 and 1e3 as floats; write 512)`},
		{"K = 1e3 is a float", "K = 1e3\nlengths = [600]",
			`param "K": must be an integer, got the float 1000.0 (TOML reads 512.0 and 1e3 as floats; write 1000)`},
		{"a fractional K", "K = 8.5\nlengths = [600]",
			`param "K": must be an integer, got the float 8.5`},
		{"a float length", "K = 8\nlengths = [600, 2e3]",
			`param "lengths": element 1 must be an integer, got the float 2000.0 (TOML reads 512.0 and 1e3 as floats; write 2000)`},
		{"a string length", "K = 8\nlengths = [\"600\"]",
			`param "lengths": element 0 must be an integer, got the string "600"`},
		{"batch 1 would drop lengths 20 and 30", "K = 8\nlengths = [10, 20, 30]\nbatch = 1",
			`param "batch": 1 rows cannot hold the 3 lengths given (row b has lengths[b mod 3], so lengths[1:] would never be drawn): give batch ≥ 3, or fewer lengths`},
		{"too many lengths names lengths, not batch", fmt.Sprintf("K = 8\nlengths = [%s]", long),
			`param "lengths": has 65537 elements, above the limit of 65536 rows (MaxBatch; row b has lengths[b mod len(lengths)])`},
		{"raw as a string", "K = 8\nlengths = [10]\nraw = \"false\"",
			`param "raw": must be true or false, got the string "false"`},
		{"pages as an array", "K = 8\nlengths = [10]\npages = [\"perm\"]",
			`param "pages": must be a string, got the array ["perm"]`},
	} {
		_, err := suite.ParseSuite("s.toml", []byte(suiteWith(tc.params)))
		if err == nil || err.Error() != id+tc.want {
			t.Errorf("%s:\n\tgot  %v\n\twant %s", tc.reason, err, id+tc.want)
		}
	}
	// What the user meant, written as the rules say, is accepted: one
	// length as an array, integers, and a batch that cycles the lengths.
	for _, params := range []string{
		"K = 8\nlengths = [5]",
		"K = 512\nlengths = [600]",
		"K = 8\nlengths = [10, 20, 30]\nbatch = 3",
		"K = 8\nlengths = [10, 20, 30]\nbatch = 7",
		"K = 8\nlengths = [10]\nbatch = 1\nstride = 30",
	} {
		if _, err := suite.ParseSuite("s.toml", []byte(suiteWith(params))); err != nil {
			t.Errorf("%q: %v", params, err)
		}
	}
}

// TestBatchDropsNoLength: with batch ≥ len(lengths) every length is drawn
// (row b has lengths[b mod len(lengths)]), and the stride is the longest.
func TestBatchDropsNoLength(t *testing.T) {
	c := gen(t, "gaussian", "cycle", map[string]any{"K": int64(4), "lengths": ints(10, 20, 30), "batch": int64(7)})
	lens := c.Input(TensorSeqLens)
	var got []int32
	for b := 0; b < lens.Len(); b++ {
		got = append(got, lens.I32(b))
	}
	if fmt.Sprint(got) != "[10 20 30 10 20 30 10]" || c.Params.(*Params).Stride != 30 {
		t.Errorf("seq_lens %v stride %d, want [10 20 30 10 20 30 10] and 30", got, c.Params.(*Params).Stride)
	}
}
