// The logits part of the mutant catalog (docs/contracts/indexer_logits.md): each mutant is
// the binary32 kernel model of model32.go, in logits.cu's evaluation
// order, with exactly one fault, modelled on a public bug or on a
// hypothesis the seed story had to clear.

package logits

import (
	"github.com/kerneldiff/kerneldiff/difftest"
)

// mutantFaults lists the catalog in docs/contracts/indexer_logits.md order with one line each.
var mutantFaults = []struct{ name, fault string }{
	{"logits-grid-cap", "a grid sized for 2048 pages: positions on pages ≥ 2048 are never scored (nor set to −inf)"},
	{"logits-scale-interleaved", "reads each slot as a [128 codes | scale] record at off·132 instead of the page's codes then its scales (vLLM #50576)"},
	{"logits-one-scale-per-page", "applies the page's first scale to every key of the page"},
	{"logits-no-relu", "adds each head's dot product without the ReLU"},
	{"logits-weights-ignored", "sums the heads with weight 1 instead of weights[b][h]"},
	{"logits-page-row0", "maps every row's positions through page-table row 0"},
	{"logits-bf16-dot", "rounds each dot product to bf16 before the ReLU (a PyTorch fallback's rounding, under accum_bits 24)"},
	{"logits-past-length", "with clean, scores the row's last page whole: positions in [L_b, ceil(L_b/P)·P) get a logit instead of −inf"},
	{"logits-tight-stride", "reads page j at j·page_bytes (the tight 132·P, 256·P or 68·P) instead of j·page_stride: padded pages are read shifted, into the poisoned padding"},
	{"logits-fp4-nibble-swap", "FP4: reads dim 2i from the high nibble and 2i+1 from the low one (the packed byte's order reversed)"},
	{"logits-fp4-one-scale", "FP4: scales all 128 dims of a key by its block-0 scale instead of one ue8m0 scale per 32 dims"},
	{"logits-mtp-shared-len", "next_n > 1: every row of a request scored up to the request's last row's length (a 1-D context_lens), so earlier rows score keys past their own length instead of −inf"},
	{"logits-bf16-truncate", "bf16 logits: the f32 result truncated to bf16 instead of rounded to nearest even"},
}

// largeOnly is the mutant only the large suite can catch: a cache beyond
// 2 GiB is needed for a 32-bit byte offset to wrap.
var largeOnly = struct{ name, fault string }{
	"logits-offset-int32", "forms cache byte offsets in 32-bit signed arithmetic: past 2 GiB they wrap and the key reads as zeros (vLLM #52109)",
}

// Mutants returns the 13 logits mutants the default suite must catch (the
// catalog of docs/contracts/indexer_logits.md without logits-offset-int32, which needs a
// cache beyond 2 GiB: LargeMutants). Each Run writes outs[0] like
// logits.cu except for its fault; it returns the case's *InputError if
// the case is invalid.
func Mutants() []difftest.Mutant {
	ms := make([]difftest.Mutant, len(mutantFaults))
	for i, m := range mutantFaults {
		ms[i] = mutant(m.name, m.fault)
	}
	return ms
}

// LargeMutants returns LargeMutants: the fault-list test of bridge finds
// them through the registered Kernel.
func (Kernel) LargeMutants() []difftest.Mutant { return LargeMutants() }

// LargeMutants returns the catalog mutants that only the large suite's
// cache beyond 2 GiB exposes: logits-offset-int32. They are not part of
// Kernel.Mutants, so `difftest selftest` on the default suite does not
// expect them caught; tests run them on the large suite's shapes.
func LargeMutants() []difftest.Mutant {
	return []difftest.Mutant{mutant(largeOnly.name, largeOnly.fault)}
}

func mutant(name, fault string) difftest.Mutant {
	return difftest.Mutant{Name: name, Fault: fault, Run: func(c *difftest.Case, outs []*difftest.Tensor) error {
		s := cudaOrder
		s.fault = name
		return runSim(c, outs, s)
	}, Applies: appliesV41[name]}
}

// appliesV41 says, for the mutants of a DeepSeek-V4.1 layout, on which
// cases their fault can show (difftest.Mutant.Applies): elsewhere each is
// the correct kernel. A spec whose params do not decode here is run.
var appliesV41 = map[string]func(difftest.CaseSpec) bool{
	"logits-tight-stride":    specWhere(func(p Params) bool { return p.PageStride != 0 && p.PageStride != p.PageBytes() }),
	"logits-fp4-nibble-swap": specWhere(func(p Params) bool { return p.Store == StoreFP4 }),
	"logits-fp4-one-scale":   specWhere(func(p Params) bool { return p.Store == StoreFP4 }),
	"logits-mtp-shared-len":  specWhere(func(p Params) bool { return p.N() > 1 }),
	"logits-bf16-truncate":   specWhere(func(p Params) bool { return p.BF16Out() }),
}

// specWhere turns a predicate on the params into one on the suite spec.
func specWhere(pred func(Params) bool) func(difftest.CaseSpec) bool {
	return func(spec difftest.CaseSpec) bool {
		g, err := decode(spec)
		return err != nil || pred(g.Params)
	}
}
