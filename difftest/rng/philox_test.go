package rng

import "testing"

// TestPhilox4x32KnownAnswers: the known-answer vectors of docs/running.md,
// which are those of the Random123 distribution (kat_vectors,
// philox4x32_10), also reproduced by testdata/known_answers.py.
func TestPhilox4x32KnownAnswers(t *testing.T) {
	tests := []struct {
		ctr    [4]uint32
		key    [2]uint32
		want   [4]uint32
		reason string
	}{
		{[4]uint32{}, [2]uint32{}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}, "all zeros"},
		{[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}, "all ones: carries in the key schedule"},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}, "digits of pi: every word distinct"},
	}
	for _, tc := range tests {
		if got := Philox4x32(tc.ctr, tc.key); got != tc.want {
			t.Errorf("Philox4x32(%08x, %08x) = %08x, want %08x: %s", tc.ctr, tc.key, got, tc.want, tc.reason)
		}
	}
}
