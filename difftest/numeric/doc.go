// Package numeric implements the number formats of the kernel contracts
// (docs/contracts/topk_transform.md and docs/contracts/norm_rope_store.md): bfloat16, IEEE binary16, OCP e4m3fn, ue8m0 scales,
// the key32 total order of f32 bit patterns, and ULP / code distances.
//
// Every conversion works on bit patterns with integer arithmetic and rounds
// exactly once, to nearest with ties to even, from the exact input value.
// No result depends on the host, the Go build (GOAMD64, FMA fusion) or the
// floating-point environment.
//
// # Verification and deliberate differences
//
// The conversions are checked bit for bit against tables made by numpy and
// ml_dtypes (testdata/gen_golden.py, versions recorded in the tables), and
// the float64 entry points against math/big rounding. They agree with
// ml_dtypes and numpy everywhere except, by design:
//
//   - E4M3FromF32/F64 saturate: |x| > 464 and ±inf give ±448 (0x7E, 0xFE),
//     as the kernels' satfinite conversion does; ml_dtypes gives NaN (0x7F,
//     0xFF). Up to 464 inclusive both round to 448.
//   - E4M3FromF32/F64 map every NaN to 0x7F (docs/contracts/norm_rope_store.md); ml_dtypes keeps
//     the sign (0xFF for a negative NaN).
//   - F16FromF32/F64 turn every NaN into the quiet NaN 0x7E00 with its sign;
//     numpy keeps the top 10 payload bits.
//   - The float64 entry points round once from the float64 value; ml_dtypes
//     converts float64 through float32 and so rounds twice (it maps
//     1 + 2^-8 + 2^-30 to bf16 1.0, where the correct result is
//     1 + 2^-7). The tables therefore hold float32 inputs only.
package numeric
