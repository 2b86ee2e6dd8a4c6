// Package logits is the Go contract of indexer_logits (docs/contracts/indexer_logits.md), the
// DeepSeek-V3.2/V4/V4.1 lightning indexer's scores over the paged FP8/BF16/FP4
// key cache that norm_rope_store writes (DeepGEMM fp8_paged_mqa_logits and
// fp8_fp4_paged_mqa_logits, decode form): its parameters, input validation, an f64 reference, the
// comparator with its derived tolerance, the input families, the mutant
// catalog of docs/contracts/indexer_logits.md, a binary32 model of the CUDA kernel, and the
// difftest.Kernel that registers them as "indexer_logits". The CUDA
// kernel is logits.cu (launch contract in logits.h).
//
// Tensors (contract names and order): q [B, H, 128] (u8 e4m3fn codes for
// the FP8 store, bf16 for the BF16 store) or [B, H, 68] (FP4: 64 packed
// e2m1 bytes, then 4 ue8m0 bytes), with next_n > 1 [B, next_n, H, ·];
// weights f32 [B·next_n, H], cache u8 [num_pages, page_stride] (tight:
// 132·P FP8, 256·P BF16, 68·P FP4), seq_lens i32 [B] or [B, next_n],
// page_table i32 [B, max_pages]; output logits f32 or bf16
// (logits_dtype) [B·next_n, stride]. For query row i = b·next_n + r and s
// < L_i, with slot = page_table[b][s >> log2 P]·P + (s & (P−1)) (64-bit),
//
//	logits[i][s] = scale(slot) · Σ_h weights[i][h] · ReLU(Σ_d q[i][h][d] · k(slot)[d])
//
// (FP8: k the e4m3fn values of the slot's codes, scale its f32 scale;
// BF16: k the bf16 values, scale 1; FP4: k_d = e2m1(code_d) · 2^(e − 127)
// with e the ue8m0 byte of d's 32-dim block, scale 1); for s ≥ L_i, −inf
// with clean and unspecified without. Pages sit page_stride bytes apart;
// the padding after a page's tight bytes is never read (generated cases
// poison it).
//
// Choices where the contract doc is silent, and where this package is stricter:
//
//   - Tolerance. A logit passes when |got − x| ≤ E, x the exact logit and
//     E the worst-case error of any binary32 evaluation (bound.go: γ_130
//     for each dot product, the ReLU 1-Lipschitz, γ_(H+2) for the
//     weighted head sum, one rounding for the scale), so any summation
//     order over dims and heads, FMA or not, and the scale multiplied at
//     the end, per head or into the key pass; a dot product rounded to
//     bf16 fails by a ratio of 50 to 250. max_ratio = max |got − x| / E
//     is a passing case's margin. −0 and +0 compare equal.
//   - accum_bits (default 24) declares a dot product that errs by up to
//     2^−accum_bits·Σ|q_d·k_d| beyond an f32 one: a result rounded once to
//     an accum_bits-bit significand (the PyTorch fallback that rounds each
//     dot product to bf16: 8), or additions keeping fewer bits (a chain of
//     128 additions keeping 14 bits: 7). The term is relative to Σ|q·k|,
//     not to |d|, because additions err relative to the partial sums.
//   - Don't care: a key with a NaN code (FP8), a non-finite value (BF16)
//     or a non-finite scale, and a position whose f32 evaluation may
//     overflow; Check skips them and Equivalent lets them differ between
//     runs. Every other position, the clean tail and the guards are still
//     checked, so a don't-care key that changes another position fails.
//   - The queries and weights must be finite (Validate): they are the
//     model's, not stored data. Stored keys may hold anything.
//   - Without clean the positions past L_b are unspecified: Written lists
//     [0, L_b) per row and Unspecified (difftest.Unspecifier) the rest, so
//     an implementation may write them (DeepGEMM scores its last block
//     whole) or not; only the guard bands around the tensor are checked.
//   - Page-table entries past a row's ceil(L_b / P) pages are not read and
//     not checked (generated cases hold −1 there, so a kernel that reads
//     them faults).
//   - H: the contract takes 1 to 128 heads; the CUDA kernel stages at most
//     64 (KD_LOGITS_MAX_HEADS), and its launcher rejects more.
//   - Inputs: keys are written by norm_rope_store's reference (preset v4
//     for FP8, v4-bf16 for BF16) from Gaussian bf16 tokens, so every slot
//     has its own scale, and every slot of a used page holds a key, also
//     past L_b. The tokens are vectors of a pool of up to 4096 N(0,1)
//     vectors with an independent random sign per dim (a 262,144-key row
//     draws in a second). FP8 queries are e4m3fn codes per (row, head)
//     with the head's scale folded into its weight, as DeepSeek quantises
//     them. Cache pages no row uses hold NaN codes and NaN scales.
//   - logits-offset-int32 needs a cache beyond 2 GiB: it is in
//     LargeMutants, not Mutants, caught by the opt-in large suite (and
//     its fault build by the emulated contract test on a lazily mapped
//     2.2 GB cache).
//   - bf16 logits: the f32 bound plus the bf16 rounding of the result,
//     E + 2^−8·(|x| + E) + 2^−134 (bound.go).
//   - next_n, page_stride and logits_dtype default to the V4 contract (1,
//     tight, f32), so cases that leave them out draw the same bytes; an
//     explicit next_n or page_stride of 0 is an error, not the default.
//   - Sizes: H ≤ 128, P ≤ 2^16, seq_lens and stride ≤ 2^24, B·next_n ≤
//     2^14, next_n ≤ 16, page padding ≤ 2^16 bytes, B·next_n·stride ≤
//     2^28, the cache ≤ 16 GiB (params.go), checked before anything is
//     allocated.
package logits
