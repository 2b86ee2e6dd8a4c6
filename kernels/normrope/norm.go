// RMSNorm (B. Zhang, R. Sennrich, "Root Mean Square Layer Normalization",
// NeurIPS 2019) and LayerNorm (J. L. Ba, J. R. Kiros, G. E. Hinton, "Layer
// Normalization", 2016) over one 128-wide key, in f64, as docs/contracts/norm_rope_store.md
// step 1 states them and the DeepSeek reference code applies them
// (inference/model.py: RMSNorm.forward, F.layer_norm; biased variance).

package normrope

import "math"

// normF64 computes y = norm(x) in f64 and returns the factor r = 1/sqrt(v+eps):
//
//	rms:   v = mean(x²),           y_i = x_i · r · w_i
//	layer: v = mean((x − mean)²),  y_i = (x_i − mean) · r · w_i + b_i
//
// Every product is wrapped in float64() so the compiler cannot fuse it into
// an FMA (docs/running.md); the result is then the same on every host.
// Non-finite or overflowing inputs give non-finite or meaningless outputs;
// such tokens are "don't care" (see dontCare).
func normF64(norm string, x, w, b *[Dim]float64, eps float64, y *[Dim]float64) (r float64) {
	if norm == NormRMS {
		var s float64
		for _, v := range x {
			s += float64(v * v)
		}
		r = 1 / math.Sqrt(s/Dim+eps)
		for i, v := range x {
			y[i] = float64(float64(v*r) * w[i])
		}
		return r
	}
	var sum float64
	for _, v := range x {
		sum += v
	}
	mean := sum / Dim
	var ss float64
	for i, v := range x {
		d := v - mean
		y[i] = d
		ss += float64(d * d)
	}
	r = 1 / math.Sqrt(ss/Dim+eps)
	for i := range y {
		y[i] = float64(float64(y[i]*r)*w[i]) + b[i]
	}
	return r
}
