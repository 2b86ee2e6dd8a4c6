// Package normrope is the Go contract of norm_rope_store (docs/contracts/norm_rope_store.md),
// the fused norm + RoPE + Hadamard + paged FP8/BF16/FP4 store of indexer
// keys in DeepSeek-V3.2/V4/V4.1-style sparse attention: its parameters and presets,
// real YaRN frequency tables, input validation, an f64 reference, the
// store comparator with its derived tolerance, the input families, the
// store mutants of docs/mutants.md, and the difftest.Kernel that registers
// them as "norm_rope_store".
//
// Tensors (contract names and order): x bf16 [N, x_stride ≥ 128], weight
// f32 [128], bias f32 [128], freqs f32 [max_pos, 64] ((cos_j, sin_j)
// interleaved), positions i64 [N], out_loc i64 [N]; output cache u8
// [num_pages, 132·P] (FP8), [num_pages, 256·P] (BF16) or [num_pages, 68·P]
// (FP4), in-out. The
// configuration travels as Params (JSON in capture files and exec
// metadata; the field names match the bridge's packer of normrope.h).
//
// Choices where the contract doc is silent, and where this package is stricter:
//
//   - Tolerance. A stored value is accepted when it is the round-to-nearest
//     image of some value within E_k of the exact result, E_k a worst-case
//     bound on the error of any binary32 evaluation of the formulas
//     (bound.go). That is "within 1 ULP / one e4m3 step" where rounding can
//     produce the neighbour (near a midpoint) and exact elsewhere; a plain
//     "≤ 1 ULP" or "≤ 1 step" rule would accept bf16 truncation and f16
//     double rounding, which are never more than one step off. Near zero E_k
//     spans several ULPs: the absolute floor of docs/contracts/norm_rope_store.md.
//   - LayerNorm variance: the bound covers two-pass and Welford variances,
//     as PyTorch's layer_norm and the DeepSeek kernels compute them. The
//     mean's error is one shift common to all 128 dims and is carried as a
//     vector through RoPE and the Hadamard (bound.go), so the bound grows
//     as |mean|/std while a one-pass E[x²] − mean² errs as (|mean|/std)²:
//     the "large-mean" family (|mean|/std about 2^7 to 2^11, the most the
//     bf16 grid allows) fails a one-pass kernel in every LayerNorm case of
//     the default and quick suites, and passes two-pass and Welford ones.
//   - Declared precision (Params.Intermediate): "bf16" is the chain that
//     rounds to bf16 after the norm, RoPE and the Hadamard (SGLang's
//     unfused V3.2 path); "bf16-once" computes those stages in f32 and
//     rounds the values to bf16 once, before the store quantises them
//     (SGLang's fused V3.2 indexer_k; after the Hadamard when it is on).
//     Each is checked with its own derived bound (bound.go: analyzeChain,
//     analyzeOnce) besides the contract's, so it admits exactly that
//     rounding; the reference stays f32.
//   - Tolerance ratio: the error a stored value needs before rounding, over
//     the bound (Check): 0 for the rounding of the exact value, at most 1
//     when accepted, so a passing case's max_ratio is its margin;
//     off_nearest counts accepted neighbours of the nearest rounding.
//   - FP8: codes are e4m3fn(z / s) with the exact scale s, the scale is
//     stored as f32(s); the amax floor is the f32 constant 1e-4f.
//   - FP4 (docs/contracts/norm_rope_store.md, "FP4 keys"; SGLang 0.5.23
//     fp4_indexer_rope.cuh): RMSNorm and RoPE as configured, the Hadamard
//     only when switched on (off in the v4-fp4 preset, as the real kernel),
//     then per 32-value block two stages: a fake quantisation (s₁ = ue8m0
//     ceiling of max(amax, 6·2^-126)/6, codes e2m1 of z/s₁) and the
//     packer (s₂ = ue8m0 ceiling of max(amax₂/6, 1e-4f) over the
//     fake-quantised values, codes e2m1 of v/s₂, −0 stored as 0x0); e2m1
//     rounds to nearest with ties to the even code (cvt.rn.satfinite) and
//     saturates at ±6. Dim 2i sits in the low nibble of payload byte i;
//     scale byte b is block b's. A page is [P × 64 code bytes][P × 4 scale
//     bytes]. The check admits either stage-1 scale where amax/6 lies
//     within the f32 bound of a power of two and either code where z/s₁
//     lies within it of a midpoint, and judges codes under the scale
//     actually stored (checkFP4).
//   - Don't care: tokens with NaN/inf inputs, or whose f32 sums (Σx²;
//     Σ|x| and Σ(x − mean)² for LayerNorm) can overflow in some summation
//     order, are skipped by Check; their slots are still in Written. A case
//     that writes tokens must check at least one (Validate), except in the
//     families made of don't-care tokens (nonfinite, bf16-max): there an
//     all-don't-care case passes on its canaries with a warning. A case
//     where no token writes is a canary-only case and is valid.
//   - Model constants must be finite: weight, bias, and the freqs rows the
//     tokens read (a NaN row is rejected, not turned into don't care).
//   - Sizes: N ≤ 2^22, x_stride ≤ 2^16, x ≤ 1 GiB, max_pos ≤ 2^21, P ≤ 2^16,
//     cache ≤ 1 GiB (limits.go), checked before anything is allocated, for
//     suites and captures alike, with overflow-free arithmetic.
//   - eps is checked as given (suite number, capture JSON text) before its
//     f32 rounding: it must be a positive normal f32. The BF16 store takes
//     scale_fmt "plain" only (ue8m0 is an FP8 scale format); the FP4 store
//     "ue8m0" only (its block scales are ue8m0 bytes).
//   - Preset label: Params.Preset names the preset the configuration
//     equals exactly (switches, eps, model; P and num_pages free), and is
//     empty otherwise; a capture whose label disagrees is rejected.
//   - YaRN: the ramp is always applied (the deployed configurations have
//     max_seq_len > original_seq_len). The "positions" family uses V3.2's
//     whole 163840-row table but V4's first 262144 rows (64 MiB) by
//     default; max_pos = 1048576 gives the whole V4 table (256 MiB).
//   - The last token of a generated case never gets out_loc −1, so a
//     kernel's tail handling is always exercised.
package normrope
