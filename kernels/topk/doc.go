// Package topk is the Go contract of topk_transform (docs/contracts/topk_transform.md): the
// per-row top-K selection over indexer logits with the page-table
// transform used by DeepSeek-V3.2/V4 sparse attention. It registers the
// kernel "topk_transform" with the difftest harness at init.
//
// Tensors (contract names, in order): inputs scores f32 [B, stride] (bf16
// or f16 with Params.ScoreDType, suite param dtype),
// seq_lens i32 [B], page_table i32 [B, max_pages]; outputs page_indices
// i32 [B, K] and, when Params.ReturnRaw, raw_indices i32 [B, K].
//
// What the package chose where the contract doc is silent:
//
//   - Order is key32 (numeric.Key32): −NaN < −inf < … < −0 < +0 < … < +inf
//     < +NaN; ties are equal bit patterns. PyTorch's topk fallback differs
//     (every NaN largest, −inf picks emitted as −1); kernels are checked
//     against key32.
//   - 16-bit scores (scores16.go; docs/contracts/topk_transform.md,
//     "16-bit scores") rank by numeric.Key16 — NaNs ordered like key32,
//     +NaN highest — computed as key32 of the exact f32 widening, so the
//     reference, check, variants and mutants share the f32 code. SGLang's
//     topk_transform_bf16_small never selects a NaN (−1 in its slots);
//     that rule is not a parameter but the diagnosis variant
//     VariantNaNNeverSelected, because one order serves every dtype, the
//     rule changes the number of picks, and the past-length canary needs
//     +NaN to rank highest. The families ties16, oneexp and nan16 draw
//     16-bit patterns (default dtype bf16); every other family narrows
//     its f32 draws. The topk16-* mutants are exact on f32 scores.
//   - The reference resolves ties at the K-th key to the lowest positions
//     and writes picks in ascending position order. Check accepts any tie
//     resolution and any order for L > K.
//   - Validate accepts any K in [1, MaxK] so tests and mutants can use
//     small K; the CUDA launcher rejects K ∉ {512, 1024, 2048}
//     (CheckEntryPointK).
//   - Size limits (limits.go), generous for real use and checked before
//     anything is allocated, by NewCase (suite error, exit 2) and by
//     FromTensors and Validate (*difftest.InputError, exit 2): K ≤ 2^16,
//     every seq_len and the stride ≤ 2^24 tokens, batch ≤ 2^16, P ≤ 2^20,
//     max_pages ≤ 2^24, batch·stride ≤ 2^28 scores, batch·max_pages ≤
//     2^28, batch·K ≤ 2^26 output entries. Nothing is clamped: a value
//     out of range is an error naming the parameter and the limit.
//   - Family count parameters (straddle above/tied, relu positives,
//     masked finite, pseudotie above) default to a documented value
//     derived per row; an explicit value must be ≥ 0 and fit every row the
//     batch draws, else NewCase fails naming the case, the param and the
//     rule. Row b of a case has length lengths[b mod len(lengths)].
//   - The pseudotie family puts the K-th value inside a band of values
//     that compare equal as floats but not as key32 (−0/+0, subnormals
//     next to zeros, NaN payloads), to catch kernels that rank with float
//     comparisons, flush subnormals to zero or canonicalize NaNs.
//   - Check reports one counter per rule (padding, out_of_range,
//     wrong_slots, duplicates, out_of_order, missing, extra) and the rule
//     of its message as failed_rule; Kernel.KeyMetric shows that counter
//     in the human table (e.g. wrong_slots=64).
//   - Only the used part of a page-table row, j < ceil(L_b/P), is checked
//     (ids ≥ 0, slots within int32, injective when raw_indices is not
//     returned); the generator writes −1 after it.
//   - Generated rows hold +NaN (even positions) and +inf (odd) past L_b,
//     the two highest keys, so any read past L_b changes the selection.
//
// Files, one algorithm each: params.go (Params, FromTensors), scores16.go
// (16-bit dtypes and keys), families16.go, mutants16.go and variants16.go
// (their 16-bit parts), limits.go
// (size bounds), validate.go (preconditions), reference.go (radix
// select), check.go (validity rule and diagnostics), generate.go and
// families.go (seeded inputs), mutants.go (the catalog of docs/mutants.md), kernel.go
// (difftest.Kernel).
package topk
