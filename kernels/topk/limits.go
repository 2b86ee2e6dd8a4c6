// Size limits of the topk_transform contract as this package checks it:
// upper bounds on every size parameter, so a suite entry or a capture
// that asks for an absurd size is rejected with an error naming the
// parameter and the limit, before anything is allocated.

package topk

import (
	"github.com/kerneldiff/kerneldiff/difftest"
)

// Upper bounds on the sizes of one case. They are far above what the
// V3.2/V4 indexers use (K ≤ 2048, contexts up to 1M tokens, decode
// batches of a few hundred rows, prefill chunks of ≤ 16K query rows) and
// low enough that the inputs, two runs of poisoned outputs and the
// reference fit in a few GiB on a CI machine. Each is checked by NewCase
// (a suite error naming the case and the param, exit 2) and by Validate
// (a *difftest.InputError naming the param, exit 2 for a capture).
const (
	// MaxK bounds K (picks per row): 2^16, 32× the largest entry point.
	MaxK = 1 << 16
	// MaxSeqLen bounds every seq_lens[b] and the scores row stride (f32
	// elements): 2^24 = 16,777,216 tokens, 16× a 1M-token context.
	MaxSeqLen = 1 << 24
	// MaxBatch bounds the number of rows B.
	MaxBatch = 1 << 16
	// MaxPageSize bounds P (slots per page). With page ids below 2^31 the
	// 64-bit product id·P then cannot overflow.
	MaxPageSize = 1 << 20
	// MaxPages bounds max_pages, the page-table row width: a page holds at
	// least one token, so a table never needs more entries than MaxSeqLen.
	MaxPages = MaxSeqLen
	// MaxScores bounds B·stride, the scores tensor: 2^28 f32 = 1 GiB.
	MaxScores = 1 << 28
	// MaxTableEntries bounds B·max_pages, the page_table tensor: 2^28 i32.
	MaxTableEntries = 1 << 28
	// MaxOutputEntries bounds B·K, each output tensor: 2^26 i32 = 256 MiB
	// (the harness holds two runs of each output plus the reference's).
	MaxOutputEntries = 1 << 26
)

// checkLimits checks the size parameters of p against the bounds above
// and the lower bounds K ≥ 1, P ≥ 1 and a power of two, batch, stride,
// max_pages ≥ 0. The error is a *difftest.InputError whose Tensor is the
// parameter ("K", "P", "batch", "stride", "max_pages", or a product such
// as "batch·K") and whose Rule states the limit and the value, e.g.
//
//	K: exceeds the limit of 65536 picks per row: got 268435456
func checkLimits(p *Params) error {
	B, S, M, K := int64(p.Batch), int64(p.Stride), int64(p.MaxPages), int64(p.K)
	if K < 1 {
		return difftest.Inputf("K", nil, "must be ≥ 1, got %d", K)
	}
	if p.P < 1 || p.P&(p.P-1) != 0 {
		return difftest.Inputf("P", nil, "page size must be a power of two ≥ 1, got %d", p.P)
	}
	if err := difftest.NonNegative(difftest.Size{Name: "batch", V: B}, difftest.Size{Name: "stride", V: S}, difftest.Size{Name: "max_pages", V: M}); err != nil {
		return err
	}
	// The factors are bounded before the products are formed, so no
	// product overflows int64.
	return difftest.WithinLimits(
		difftest.AtMost("K", K, MaxK, "picks per row"),
		difftest.AtMost("P", int64(p.P), MaxPageSize, "slots per page"),
		difftest.AtMost("batch", B, MaxBatch, "rows"),
		difftest.AtMost("stride", S, MaxSeqLen, "scores per row"),
		difftest.AtMost("max_pages", M, MaxPages, "page-table entries per row"),
		difftest.AtMost("batch·stride", B*S, MaxScores, "scores"),
		difftest.AtMost("batch·max_pages", B*M, MaxTableEntries, "page-table entries"),
		difftest.AtMost("batch·K", B*K, MaxOutputEntries, "entries per output"),
	)
}
