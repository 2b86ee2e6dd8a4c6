// Package numeric implements the number formats of the kernel contracts
// (DESIGN.md §3, §4): bfloat16, IEEE binary16, OCP e4m3fn, ue8m0 scales,
// the key32 total order of f32 bit patterns, and ULP / code distances.
//
// Every conversion works on bit patterns with integer arithmetic and rounds
// exactly once, to nearest with ties to even, from the exact input value.
// No result depends on the host, the Go build (GOAMD64, FMA fusion) or the
// floating-point environment.
package numeric
