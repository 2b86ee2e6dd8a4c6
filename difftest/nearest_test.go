package difftest

import "testing"

func TestNearest(t *testing.T) {
	kernels := []string{"indexer_logits", "norm_rope_store", "pipeline", "topk_transform"}
	for _, tc := range []struct{ name, want string }{
		{"topk_transfrom", "topk_transform"}, // two letters swapped: 2 edits
		{"topk_transform", "topk_transform"}, // itself
		{"norm_rope", ""},                    // 6 insertions away, past max(2, 9/3) = 3
		{"logits", ""},                       // 8 edits from indexer_logits
		{"pipelin", "pipeline"},
		{"", ""},
	} {
		if got := Nearest(tc.name, kernels); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"topk_transfrom", "topk_transform", 2}, {"flaw", "lawn", 2}} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}
