// The 128-point Walsh–Hadamard transform in natural (Sylvester, "Hadamard")
// order, z_k = 128^-½ · Σ_j (−1)^popcount(j & k) · y_j (docs/contracts/norm_rope_store.md
// step 3), by the fast in-place butterfly (the Sylvester construction
// H_2n = [[H_n, H_n], [H_n, −H_n]]; as in Dao-AILab fast-hadamard-transform,
// which DeepSeek's rotate_activation calls with scale 128^-½).

package normrope

import "math"

// hadamardScale is 128^-½, the normalisation that makes the transform
// orthonormal (and its own inverse).
var hadamardScale = 1 / math.Sqrt(Dim)

// hadamardF64 transforms y in place in f64: seven butterfly stages
// (a, b) → (a + b, a − b) at distances 1, 2, …, 64, then the 128^-½ scale.
// Applied twice it is the identity up to f64 rounding.
func hadamardF64(y *[Dim]float64) {
	for h := 1; h < Dim; h *= 2 {
		for i := 0; i < Dim; i += 2 * h {
			for j := i; j < i+h; j++ {
				a, b := y[j], y[j+h]
				y[j], y[j+h] = a+b, a-b
			}
		}
	}
	for i := range y {
		y[i] = float64(y[i] * hadamardScale)
	}
}
