package topk

import (
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
)

func TestMinBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  bool
		want int64
	}{
		// Rows of 0, 5 and 1000 scores, K = 512, P = 64:
		//   0:    0 scores + 4 (length) + 0 pages            + 4·512 per output
		//   5:   20        + 4          + 4·⌈5/64⌉ = 4       + 4·512 per output
		//   1000: 4000     + 4          + 4·⌈512/64⌉ = 32    + 4·512 per output
		{"with raw_indices", true, 4 + 28 + 4036 + 3*2*2048},
		{"page_indices only", false, 4 + 28 + 4036 + 3*2048},
	} {
		spec := difftest.CaseSpec{Kernel: KernelName, Family: "gaussian", Name: "mb", Params: map[string]any{
			"K": int64(512), "P": int64(64), "lengths": []any{int64(0), int64(5), int64(1000)}, "raw": tc.raw}}
		c, err := NewCase(spec, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got := (Kernel{}).MinBytes(c); got != tc.want {
			t.Errorf("%s: MinBytes = %d, want %d", tc.name, got, tc.want)
		}
	}
}
