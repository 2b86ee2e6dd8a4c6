// Size limits of the norm_rope_store contract as this package checks it:
// an upper bound on every size parameter, so a suite entry or a capture
// that asks for an absurd size is rejected with an error naming the
// parameter and the limit before anything is allocated, and no size
// product can overflow.

package normrope

import (
	"math"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// Upper bounds on the sizes of one case. They are far above what the
// DeepSeek-V3.2/V4 indexers and the serving engines use (P ≤ 256,
// prefill chunks of ≤ 16K tokens, contexts up to 1M positions) and low
// enough that the inputs, the two poisoned runs of the cache and the
// reference's cache fit in a few GiB on a CI machine. NewCase checks them
// before drawing (a suite error naming the case and the param, exit 2);
// Params.Check, ParseParams and Validate check them for captures (a
// *difftest.InputError, exit 2).
const (
	// MaxTokens bounds N, the rows of x: 2^22 = 4,194,304 tokens.
	MaxTokens = 1 << 22
	// MaxXStride bounds x_stride, the row stride of x in elements: 2^16
	// (a key sliced out of a fused activation row of up to 64K values).
	MaxXStride = 1 << 16
	// MaxXBytes bounds the x tensor, N·x_stride·2 bytes: 2^30 (1 GiB).
	MaxXBytes = 1 << 30
	// MaxPositions bounds max_pos, the rows of freqs: 2^21 = 2,097,152
	// positions, twice V4's 1,048,576-position context (a 512 MiB table).
	MaxPositions = 1 << 21
	// MaxPageSize bounds P, tokens per cache page: 2^16 (deployed kernels
	// use 1 to 256). With it, page_bytes ≤ 256·2^16 cannot overflow.
	MaxPageSize = 1 << 16
	// MaxCacheBytes bounds the cache, num_pages·page_bytes: 2^30 (1 GiB;
	// 8,134,407 FP8, 4,194,304 BF16 or 15,790,320 FP4 token slots).
	MaxCacheBytes = 1 << 30
)

// minNormalF32 is the smallest positive normal binary32 value, 2^-126.
const minNormalF32 = 0x1p-126

// checkEps reports whether e, the norm epsilon as given (a suite number or
// the JSON text of a capture, read as f64), is usable by an f32 kernel:
// finite, > 0, and a normal binary32 value after rounding to f32 (a
// subnormal eps reads as 0 in flush-to-zero builds; an eps that rounds to
// 0 or overflows to +inf is not the value asked for). The error names eps,
// the value given and its f32 rounding.
func checkEps(e float64) error {
	f := float32(e)
	var given any = e
	if float64(f) == e {
		given = f // an f32 value (Params.Eps): print its shortest form
	}
	switch {
	case math.IsNaN(e) || math.IsInf(e, 0) || e <= 0:
		return difftest.Inputf("eps", nil, "must be finite and > 0, got %g", given)
	case math.IsInf(float64(f), 0) || float64(f) < minNormalF32:
		return difftest.Inputf("eps", nil, "must be a normal f32 value in [2^-126, %g] (the kernel's type), got %g (as f32: %g)", float32(math.MaxFloat32), given, f)
	}
	return nil
}

// checkSizes checks the token count and x stride of a case against their
// limits and the x tensor against MaxXBytes; name is the tensor or
// parameter the error names ("N"/"x_stride" for suites, "x" for tensors).
func checkSizes(n, stride int, nName, strideName string) error {
	switch {
	case n < 1 || n > MaxTokens:
		return difftest.Inputf(nName, nil, "token count N must be in [1, %d] (MaxTokens), got %d", MaxTokens, n)
	case stride < Dim || stride > MaxXStride:
		return difftest.Inputf(strideName, nil, "row stride x_stride must be in [%d, %d] (MaxXStride), got %d", Dim, MaxXStride, stride)
	case n > MaxXBytes/2/stride:
		return difftest.Inputf(nName, nil, "x of N·x_stride = %d·%d bf16 values is %d bytes, over the limit of %d (MaxXBytes)", n, stride, 2*n*stride, MaxXBytes)
	}
	return nil
}

// checkMaxPos checks the row count of freqs; name is the parameter or
// tensor the error names.
func checkMaxPos(maxPos int, name string) error {
	if maxPos < 1 || maxPos > MaxPositions {
		return difftest.Inputf(name, nil, "max_pos (rows of freqs) must be in [1, %d] (MaxPositions), got %d", MaxPositions, maxPos)
	}
	return nil
}
