package rng

import "testing"

// TestSplitMix64Sequence: the first outputs from state 0, iterating
// state += 0x9E3779B97F4A7C15, as printed by testdata/known_answers.py and
// by Vigna's reference splitmix64.c.
func TestSplitMix64Sequence(t *testing.T) {
	want := []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f, 0xf88bb8a8724c81ec, 0x1b39896a51a8749b}
	var state uint64
	for i, w := range want {
		if got := SplitMix64(state); got != w {
			t.Errorf("output %d: SplitMix64(%016x) = %016x, want %016x", i, state, got, w)
		}
		state += golden
	}
}

// TestCaseKey pins the key derivation, a forever-stable part of the
// generator (values from testdata/known_answers.py), and checks that the
// seed and every byte of the id matter.
func TestCaseKey(t *testing.T) {
	tests := []struct {
		seed   uint64
		id     string
		want   uint64
		reason string
	}{
		{0, "", 0x5b21f68ffa77f14c, "empty id: SplitMix64(SplitMix64(0) ^ FNV offset basis)"},
		{1, "topk/gaussian-L1000", 0x101d89ce803db9db, "a typical case id"},
		{^uint64(0), "normrope/v4-bf16/N96", 0xa9880d021983445c, "largest seed"},
	}
	for _, tc := range tests {
		if got := CaseKey(tc.seed, tc.id); got != tc.want {
			t.Errorf("CaseKey(%d, %q) = %016x, want %016x: %s", tc.seed, tc.id, got, tc.want, tc.reason)
		}
	}
	base := CaseKey(1, "topk/a")
	for _, other := range []uint64{CaseKey(2, "topk/a"), CaseKey(1, "topk/b"), CaseKey(1, "topk/a "), CaseKey(1, "Topk/a")} {
		if other == base {
			t.Errorf("CaseKey collision with CaseKey(1, \"topk/a\") = %016x", base)
		}
	}
}
