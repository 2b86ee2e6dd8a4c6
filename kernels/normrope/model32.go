// A binary32 model of a norm_rope_store kernel: the contract's formulas
// evaluated in float32 with no intermediate widening, as a CUDA kernel
// does (docs/contracts/norm_rope_store.md: "the kernel computes in f32"). The mutant catalog is
// built on it (each fault switched on alone), and the tests run its
// fault-free variants, with several legitimate summation orders, through
// Check to show the tolerance absorbs rounding and nothing more.

package normrope

import (
	"encoding/binary"
	"math"

	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// sim32 selects one binary32 kernel variant. The zero value is a plain
// kernel: left-to-right sums, butterfly Hadamard scaled at the end,
// correctly rounded 1/sqrt, division by the scale.
type sim32 struct {
	tree     bool   // pairwise (tree) sums, as warp shuffles form them
	direct   bool   // Hadamard as 128 signed dot products, left to right
	preScale bool   // scale by 128^-½ before the transform instead of after
	rsqrtULP int    // move 1/sqrt(v) by this many f32 ULPs (rsqrtf is within 2)
	recip    bool   // codes as z·(1/scale) instead of z/scale
	fp4Div6  bool   // FP4 stage 1: amax/6 by division instead of the product by f32(1/6)
	welford  bool   // LayerNorm mean and variance by Welford's running update (as PyTorch's layer_norm kernels)
	onePass  bool   // LayerNorm variance as E[x²] − mean² (one pass; not a legitimate kernel: it cancels when |mean| ≫ std)
	fault    string // a mutant name of mutants.go, a variant name of variants.go, or ""
	// bf16Stages rounds the 128 values to bf16 (RNE) after the norm,
	// after RoPE and after the Hadamard transform, as a chain of separate
	// bf16 ops does (SGLang's unfused V3.2 path): Params.Intermediate
	// "bf16" declares it.
	bf16Stages bool
	// bf16Once rounds the 128 values to bf16 (RNE) once, after the last
	// stage (the Hadamard when on), before the store quantises them, as
	// SGLang's fused V3.2 indexer_k does: Params.Intermediate
	// "bf16-once" declares it.
	bf16Once bool
}

// roundStage rounds z to bf16 in place when s.bf16Stages: to nearest
// even, or by truncation for the bf16-truncate fault (that chain's every
// f32 → bf16 conversion truncates).
func (s sim32) roundStage(z *[Dim]float32) {
	if s.bf16Stages {
		s.roundBF16(z)
	}
}

// roundOnce rounds z to bf16 in place when s.bf16Once, as roundStage does.
func (s sim32) roundOnce(z *[Dim]float32) {
	if s.bf16Once {
		s.roundBF16(z)
	}
}

// roundBF16 rounds z to bf16 in place: to nearest even, or by truncation
// for the bf16-truncate fault.
func (s sim32) roundBF16(z *[Dim]float32) {
	for i, v := range z {
		b := numeric.BF16FromF32(v)
		if s.fault == "bf16-truncate" {
			b = uint16(math.Float32bits(v) >> 16)
		}
		z[i] = numeric.BF16ToF32(b)
	}
}

// sum32 adds v in float32, left to right or pairwise.
func sum32(v []float32, tree bool) float32 {
	if !tree {
		var s float32
		for _, x := range v {
			s += x
		}
		return s
	}
	if len(v) == 1 {
		return v[0]
	}
	h := len(v) / 2
	return sum32(v[:h], true) + sum32(v[h:], true)
}

// rsqrt32 returns 1/sqrt(v) rounded to f32, moved by ulps ULPs.
func rsqrt32(v float32, ulps int) float32 {
	r := float32(1 / math.Sqrt(float64(v)))
	for ; ulps > 0; ulps-- {
		r = math.Nextafter32(r, float32(math.Inf(1)))
	}
	for ; ulps < 0; ulps++ {
		r = math.Nextafter32(r, 0)
	}
	return r
}

// token computes token t's pre-store vector in binary32 (x itself with
// stages "store").
func (s sim32) token(in *inputs, t int, z *[Dim]float32) {
	if in.p.Stages == StagesStore {
		in.row32(t, z) // store only: the key is x
		return
	}
	defer s.roundOnce(z) // after every stage, the Hadamard's included
	var x [Dim]float32
	in.row32(t, &x)
	var tmp [Dim]float32
	eps := in.p.Eps
	if in.p.Norm == NormRMS {
		for i, v := range x {
			tmp[i] = v * v
		}
		r := rsqrt32(sum32(tmp[:], s.tree)*(1.0/Dim)+eps, s.rsqrtULP)
		for i, v := range x {
			z[i] = v * r * in.w32[i]
		}
	} else {
		mean := sum32(x[:], s.tree) * (1.0 / Dim)
		var d [Dim]float32
		for i, v := range x {
			d[i] = v - mean
			tmp[i] = d[i] * d[i]
		}
		if s.onePass {
			for i, v := range x {
				tmp[i] = v * v
			}
		}
		v := sum32(tmp[:], s.tree) * (1.0 / Dim)
		if s.onePass {
			v -= float32(mean * mean) // rounded: no fused multiply-add
		}
		if s.welford {
			mean, v = welford32(&x)
			for i, xv := range x {
				d[i] = xv - mean
			}
		}
		r := rsqrt32(v+eps, s.rsqrtULP)
		for i := range d {
			z[i] = d[i]*r*in.w32[i] + in.b32[i]
		}
	}

	s.roundStage(z)
	style, off, pos := in.p.RopeStyle, in.p.RopeOffset, in.pos.I64(t)
	switch s.fault {
	case "rope-style-swap":
		style = map[string]string{StyleNeox: StyleInterleaved, StyleInterleaved: StyleNeox}[style]
	case "rope-half-swap":
		off = RopeDim - off
	case "rope-position-off-by-one":
		pos++
	}
	cs := make([]float32, RopeDim) // a row past the table reads as zeros
	if pos < int64(in.maxPos) {
		cs = in.cosSin(pos)
	}
	for j := 0; j < RopeDim/2; j++ {
		ia, ib := ropePair(style, off, j)
		c, sn := cs[2*j], cs[2*j+1]
		a, b := z[ia], z[ib]
		z[ia] = a*c - b*sn
		z[ib] = a*sn + b*c
	}

	s.roundStage(z)
	if !in.p.Hadamard {
		return
	}
	defer s.roundStage(z)
	h := float32(hadamardScale)
	if s.fault == "hadamard-unscaled" {
		h = 1
	}
	if s.preScale {
		for i := range z {
			z[i] *= h
		}
	}
	if s.direct {
		var out [Dim]float32
		for k := range out {
			for j := range tmp {
				tmp[j] = z[j]
				if popParity(j & k) {
					tmp[j] = -z[j]
				}
			}
			out[k] = sum32(tmp[:], s.tree)
		}
		*z = out
	} else {
		for w := 1; w < Dim; w *= 2 {
			for i := 0; i < Dim; i += 2 * w {
				for j := i; j < i+w; j++ {
					a, b := z[j], z[j+w]
					z[j], z[j+w] = a+b, a-b
				}
			}
		}
	}
	if !s.preScale {
		for i := range z {
			z[i] *= h
		}
	}
}

// welford32 returns the mean and the biased variance of x by Welford's
// running update in float32 (B. P. Welford, "Note on a Method for
// Calculating Corrected Sums of Squares and Products", Technometrics 4(3),
// 1962): δ = x − m; m += δ/n; M2 += δ·(x − m); variance M2/n.
func welford32(x *[Dim]float32) (mean, variance float32) {
	var m, m2 float32
	for i, v := range x {
		delta := v - m
		m += delta / float32(i+1)
		m2 += float32(delta * (v - m)) // rounded: no fused multiply-add
	}
	return m, m2 * (1.0 / Dim)
}

// popParity reports whether v has an odd number of one bits.
func popParity(v int) bool {
	v ^= v >> 4
	v ^= v >> 2
	v ^= v >> 1
	return v&1 == 1
}

// run computes every token into cache, with the variant's fault.
func (s sim32) run(in *inputs, cache []byte) {
	p := in.p
	slots := p.NumSlots()
	each := forTokens
	if s.fault == "write-negative-slot" {
		each = func(n int, f func(lo, hi int)) { f(0, n) } // two tokens may share a slot: keep token order
	}
	each(in.n, func(lo, hi int) {
		var z [Dim]float32
		for t := lo; t < hi; t++ {
			slot := int(in.loc.I64(t))
			if slot < 0 {
				if s.fault != "write-negative-slot" {
					continue
				}
				slot = ((slot % slots) + slots) % slots // −1 wrapped: the last slot
			}
			if s.fault == "skip-tail-token" && in.n%8 != 0 && t == in.n-1 {
				continue
			}
			s.token(in, t, &z)
			if p.Store == StoreBF16 {
				at, _ := slotBytes(p, slot)
				for k, v := range z {
					b := numeric.BF16FromF32(v)
					if s.fault == "bf16-truncate" {
						b = uint16(math.Float32bits(v) >> 16)
					}
					binary.LittleEndian.PutUint16(cache[at+2*k:], b)
				}
				continue
			}
			if p.Store == StoreFP4 {
				s.storeFP4(p, cache, slot, &z)
				continue
			}
			s.storeFP8(p, cache, slot, &z)
		}
	})
}

// storeFP8 quantises one token in binary32 and writes it.
func (s sim32) storeFP8(p Params, cache []byte, slot int, z *[Dim]float32) {
	var amax float32
	for _, v := range z {
		if a := float32(math.Abs(float64(v))); a > amax || a != a {
			amax = a
		}
	}
	if s.fault != "scale-no-floor" && !(amax >= float32(ScaleFloor)) && amax == amax {
		amax = float32(ScaleFloor)
	}
	scale := amax / float32(numeric.E4M3Max)
	if p.ScaleFmt == ScaleUE8M0 && scale > 0 && !math.IsInf(float64(scale), 0) {
		frac, e := math.Frexp(float64(scale))
		if s.fault == "ue8m0-floor" {
			e-- // 2^floor(log2 s): frac·2^e with frac in [0.5, 1) floors to 2^(e−1)
		} else if frac == 0.5 {
			e--
		}
		scale = float32(math.Ldexp(1, e))
	}
	codesAt, scaleAt := slotBytes(p, slot)
	if s.fault == "cache-scale-interleaved" {
		page, off := slot>>p.Log2P(), slot&(p.PageSize-1)
		codesAt = page*p.PageBytes() + off*(Dim+4)
		scaleAt = codesAt + Dim
	}
	inv := 1 / scale
	for k, v := range z {
		q := v / scale
		if s.recip {
			q = v * inv
		}
		var code uint8
		switch {
		case s.fault == "fp8-double-round":
			code = numeric.E4M3FromF32(numeric.F16ToF32(numeric.F16FromF32(q)))
		case s.fault == "fp8-no-saturate" && math.Abs(float64(q)) > numeric.E4M3Max:
			code = 0x7F | uint8(math.Float32bits(q)>>24)&0x80
		case s.fault == variantE4M3Truncate:
			code = e4m3Truncate(q)
		default:
			code = numeric.E4M3FromF32(q)
		}
		cache[codesAt+k] = code
	}
	binary.LittleEndian.PutUint32(cache[scaleAt:], math.Float32bits(scale))
}
