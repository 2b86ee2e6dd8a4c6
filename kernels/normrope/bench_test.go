package normrope

import (
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
)

func TestMinBytes(t *testing.T) {
	for _, tc := range []struct {
		name, preset string
		want         int64
	}{
		// Four tokens, out_loc [0, −1, 2, 5], positions [3, 3, 7, 9]:
		// 8·4 out_loc + 512 weight, then tokens 0, 2, 3 each 256 (x) + 8
		// (position) + the slot, and the freqs rows of 3, 7, 9 (256 each).
		{"v4: RMSNorm, FP8 slots of 132 bytes", "v4", 32 + 512 + 3*(256+8+132) + 3*256},
		{"v32: LayerNorm (bias too), FP8", "v32", 32 + 1024 + 3*(256+8+132) + 3*256},
		{"v4-bf16: BF16 slots of 256 bytes", "v4-bf16", 32 + 512 + 3*(256+8+256) + 3*256},
	} {
		spec := difftest.CaseSpec{Kernel: KernelName, Family: "gaussian", Name: "mb", Params: map[string]any{"preset": tc.preset, "N": int64(4), "P": int64(64)}}
		c, err := Kernel{}.NewCase(spec, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		loc, pos := c.Input(NameOutLoc), c.Input(NamePositions)
		for i, v := range []int64{0, -1, 2, 5} {
			loc.SetI64(i, v)
		}
		for i, v := range []int64{3, 3, 7, 9} {
			pos.SetI64(i, v)
		}
		if got := (Kernel{}).MinBytes(c); got != tc.want {
			t.Errorf("%s: MinBytes = %d, want %d", tc.name, got, tc.want)
		}
	}
}
