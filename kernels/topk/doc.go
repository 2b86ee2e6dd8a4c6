// Package topk is the Go contract of topk_transform (DESIGN.md §3): the
// per-row top-K selection over indexer logits with the page-table
// transform used by DeepSeek-V3.2/V4 sparse attention. It registers the
// kernel "topk_transform" with the difftest harness at init.
//
// Tensors (contract names, in order): inputs scores f32 [B, stride],
// seq_lens i32 [B], page_table i32 [B, max_pages]; outputs page_indices
// i32 [B, K] and, when Params.ReturnRaw, raw_indices i32 [B, K].
//
// What the package chose where DESIGN.md is silent:
//
//   - Order is key32 (numeric.Key32): −NaN < −inf < … < −0 < +0 < … < +inf
//     < +NaN; ties are equal bit patterns. PyTorch's topk fallback differs
//     (every NaN largest, −inf picks emitted as −1); kernels are checked
//     against key32.
//   - The reference resolves ties at the K-th key to the lowest positions
//     and writes picks in ascending position order. Check accepts any tie
//     resolution and any order for L > K.
//   - Validate accepts any K ≥ 1 so tests and mutants can use small K;
//     the CUDA launcher rejects K ∉ {512, 1024, 2048} (CheckEntryPointK).
//   - Only the used part of a page-table row, j < ceil(L_b/P), is checked
//     (ids ≥ 0, slots within int32, injective when raw_indices is not
//     returned); the generator writes −1 after it.
//   - Generated rows hold +NaN (even positions) and +inf (odd) past L_b,
//     the two highest keys, so any read past L_b changes the selection.
//
// Files, one algorithm each: params.go (Params, FromTensors), validate.go
// (preconditions), reference.go (radix select), check.go (validity rule
// and diagnostics), generate.go and families.go (seeded inputs),
// mutants.go (the §8 catalog), kernel.go (difftest.Kernel).
package topk
