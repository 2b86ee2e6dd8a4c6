package difftest

import (
	"math"
	"testing"
)

// DiffInput names the first changed element by its row-major index, its
// value before and after, and how many elements changed.
func TestDiffInput(t *testing.T) {
	f32 := MustTensor("scores", F32, 2, 3)
	for i := range 6 {
		f32.SetF32(i, float32(i))
	}
	i32 := MustTensor("page_table", I32, 2, 2)
	for i := range 4 {
		i32.SetI32(i, int32(10*i))
	}
	bf := MustTensor("x", BF16, 4)
	bf.SetU16(2, 0x3f80) // 1.0
	u8 := MustTensor("cache", U8, 3)
	edit := func(t *Tensor, f func(*Tensor)) []byte {
		c := t.Clone()
		f(c)
		return c.Data
	}
	for _, tc := range []struct {
		name  string
		t     *Tensor
		after []byte
		want  string // "" when unchanged
	}{
		{"unchanged", f32, f32.Clone().Data, ""},
		{"one f32, row 1 col 2 (flat 5)", f32, edit(f32, func(c *Tensor) { c.SetF32(5, -5) }),
			"input scores changed during the run: scores[1][2] was 0x40a00000 (5), now 0xc0a00000 (-5); 1 of 6 elements changed"},
		{"the sign bit of scores[0][0]: -0 differs from +0", f32, edit(f32, func(c *Tensor) { c.SetF32(0, float32(math.Copysign(0, -1))) }),
			"input scores changed during the run: scores[0][0] was 0x00000000 (0), now 0x80000000 (-0); 1 of 6 elements changed"},
		{"two elements, the first named", f32, edit(f32, func(c *Tensor) { c.SetF32(1, 9); c.SetF32(4, 9) }),
			"input scores changed during the run: scores[0][1] was 0x3f800000 (1), now 0x41100000 (9); 2 of 6 elements changed"},
		{"one byte of an element is the element", i32, edit(i32, func(c *Tensor) { c.Data[13] = 1 }),
			"input page_table changed during the run: page_table[1][1] was 0x0000001e (30), now 0x0000011e (286); 1 of 4 elements changed"},
		{"bf16 value", bf, edit(bf, func(c *Tensor) { c.SetU16(2, 0xbf80) }),
			"input x changed during the run: x[2] was 0x3f80 (1), now 0xbf80 (-1); 1 of 4 elements changed"},
		{"u8 bytes", u8, []byte{0, 0, 0xff},
			"input cache changed during the run: cache[2] was 0x00, now 0xff; 1 of 3 elements changed"},
		{"shorter read-back", u8, []byte{0, 0},
			"input cache changed during the run: cache[2] was 0x00, now absent; 1 of 3 elements changed"},
	} {
		ch := DiffInput(tc.t, tc.after)
		got := ""
		if ch != nil {
			got = ch.String()
		}
		if got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
