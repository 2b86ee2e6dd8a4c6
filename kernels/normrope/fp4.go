// The FP4 store of docs/contracts/norm_rope_store.md ("FP4 keys"): per
// token, four 32-value blocks, each quantised in two stages as
// DeepSeek-V4.1's index keys are (SGLang 0.5.23, fp4_indexer_rope.cuh and
// fp4_fake_quant.py / fp4_indexer_quant.py):
//
//	stage 1, fake quantisation: a₁ = max|z| over the block;
//	  s₁ = 2^ceil(log2(max(a₁, 6·2^-126)/6)); g_k = e2m1(z_k/s₁) ∈ ±{0 … 6}
//	  (RNE, saturating); v_k = g_k·s₁ (exact)
//	stage 2, the packer: a₂ = max|v| over the block;
//	  s₂ = 2^ceil(log2(max(a₂/6, 1e-4f))), its ue8m0 byte clamped to
//	  [1, 254]; c_k = e2m1(v_k/s₂) (RNE, saturating), with −0 stored as
//	  +0 (0x0, never 0x8)
//
// Byte i of the token's 64 payload bytes holds c_2i in its low nibble and
// c_2i+1 in its high nibble; scale byte b is block b's s₂ as ue8m0
// (127 + log2 s₂).

package normrope

import (
	"math"

	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

const (
	// FP4Block is the number of values sharing one ue8m0 scale.
	FP4Block = 32
	// fp4Blocks is the number of blocks of a 128-wide key.
	fp4Blocks = Dim / FP4Block
	// fp4AmaxFloor1 is stage 1's amax floor, 6·2^-126 (SGLang
	// fp4_fake_quant.FP4_AMAX_FLOOR): s₁ ≥ 2^-126.
	fp4AmaxFloor1 = 6 * 0x1p-126
	// fp4ScaleFloor2 is stage 2's floor on a₂/6, the f32 constant 1e-4f
	// (ScaleFloor): s₂ ≥ 2^-13.
	fp4ScaleFloor2 = ScaleFloor
)

// fp4Stage1Scale returns s₁ = 2^ceil(log2(max(a, 6·2^-126)/6)) for a
// finite a ≥ 0.
func fp4Stage1Scale(a float64) float64 {
	s, _ := numeric.UE8M0Ceil(math.Max(a, fp4AmaxFloor1) / numeric.E2M1Max)
	return s
}

// fp4Stage2Scale returns s₂ = 2^ceil(log2(max(a/6, 1e-4f))) for a finite
// a ≥ 0.
func fp4Stage2Scale(a float64) float64 {
	s, _ := numeric.UE8M0Ceil(math.Max(a/numeric.E2M1Max, fp4ScaleFloor2))
	return s
}

// fp4Code returns the stored e2m1 code of q: RNE, saturating, −0 as +0.
func fp4Code(q float64) uint8 {
	c := numeric.E2M1FromF64(q)
	if c == 0x8 {
		return 0
	}
	return c
}

// ue8m0Byte returns the ue8m0 byte of a power of two s in [2^-127, 2^127].
func ue8m0Byte(s float64) uint8 {
	_, e := math.Frexp(s)
	return uint8(127 + e - 1)
}

// quantFP4 quantises one token z (f64) by the two-stage rule: codes[k]
// (one per value, 0x0–0xF) and the four scale bytes. NaN values make
// the block's scales and codes meaningless (the contract leaves such
// tokens unspecified); the result is still deterministic.
func quantFP4(z *[Dim]float64, codes *[Dim]uint8, scales *[fp4Blocks]uint8) {
	for b := 0; b < fp4Blocks; b++ {
		blk := z[b*FP4Block : (b+1)*FP4Block]
		a1 := 0.0
		for _, v := range blk {
			a1 = math.Max(a1, math.Abs(v))
		}
		if math.IsNaN(a1) || math.IsInf(a1, 0) {
			a1 = math.MaxFloat32
		}
		s1 := fp4Stage1Scale(a1)
		var g [FP4Block]float64
		a2 := 0.0
		for k, v := range blk {
			g[k] = numeric.E2M1Round(v/s1) * s1
			a2 = math.Max(a2, math.Abs(g[k]))
		}
		s2 := fp4Stage2Scale(a2)
		for k := range blk {
			codes[b*FP4Block+k] = fp4Code(g[k] / s2)
		}
		scales[b] = ue8m0Byte(s2)
	}
}

// storeFP4 writes token z to slot by quantFP4: 64 packed code bytes (dim
// 2i in the low nibble of byte i) and four ue8m0 scale bytes.
func storeFP4(p Params, cache []byte, slot int, z *[Dim]float64) {
	var codes [Dim]uint8
	var scales [fp4Blocks]uint8
	quantFP4(z, &codes, &scales)
	codesAt, scaleAt := slotBytes(p, slot)
	for i := 0; i < Dim/2; i++ {
		cache[codesAt+i] = codes[2*i] | codes[2*i+1]<<4
	}
	copy(cache[scaleAt:scaleAt+fp4Blocks], scales[:])
}

// e2m1Grid lists the 15 e2m1 values in increasing order (−0 and +0 are
// one point).
var e2m1Grid = [15]float64{-6, -4, -3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 4, 6}

// e2m1Down and e2m1Up return the e2m1 neighbours of a grid value v; past
// ±6 they return ±inf (saturation sends everything beyond to ±6).
func e2m1Down(v float64) float64 { return e2m1Step(v, -1) }
func e2m1Up(v float64) float64   { return e2m1Step(v, 1) }

func e2m1Step(v float64, dir int) float64 {
	for i, g := range e2m1Grid {
		if g == v {
			j := i + dir
			if j < 0 || j >= len(e2m1Grid) {
				return math.Inf(dir)
			}
			return e2m1Grid[j]
		}
	}
	return math.NaN()
}

// fp4Block is the analysis of one 32-value block under one stage-1 scale:
// for each value the e2m1 grid points its stage-1 code may take.
type fp4Block struct {
	s1     float64
	lo, hi [FP4Block]float64 // E2M1Round((z − E)/s₁), E2M1Round((z + E)/s₁)
	s2     []float64         // the stage-2 scales some choice of codes gives
}

// fp4Candidates returns the stage-1 scales a block may take, with the
// grid intervals and stage-2 scales under each (see checkFP4): s₁ from
// the ue8m0 ceilings of the ends of a₁'s interval, [max(|z| − E),
// max(|z| + E)], widened by 4u relative for the f32 product by 1/6
// (two roundings) and slack.
func fp4Candidates(z, e []float64) []fp4Block {
	a1lo, a1hi := 0.0, 0.0
	for k := range z {
		a1lo = math.Max(a1lo, math.Abs(z[k])-e[k])
		a1hi = math.Max(a1hi, math.Abs(z[k])+e[k])
	}
	var out []fp4Block
	for s1 := fp4Stage1Scale(a1lo * (1 - 4*u)); s1 <= fp4Stage1Scale(a1hi*(1+4*u)); s1 *= 2 {
		blk := fp4Block{s1: s1}
		mLo, mHi := 0.0, 0.0
		for k := range z {
			blk.lo[k] = numeric.E2M1Round((z[k] - e[k]) / s1)
			blk.hi[k] = numeric.E2M1Round((z[k] + e[k]) / s1)
			minAbs := math.Min(math.Abs(blk.lo[k]), math.Abs(blk.hi[k]))
			if blk.lo[k] <= 0 && blk.hi[k] >= 0 {
				minAbs = 0
			}
			mLo = math.Max(mLo, minAbs)
			mHi = math.Max(mHi, math.Max(math.Abs(blk.lo[k]), math.Abs(blk.hi[k])))
		}
		for _, m := range e2m1Grid[7:] {
			if m < mLo || m > mHi {
				continue
			}
			s2 := fp4Stage2Scale(m * s1)
			if len(blk.s2) == 0 || blk.s2[len(blk.s2)-1] != s2 {
				blk.s2 = append(blk.s2, s2)
			}
		}
		out = append(out, blk)
	}
	return out
}

// codeOK reports whether stored code c of value k is one the block
// admits under stage-2 scale s2: the packing of some stage-1 grid point g
// in [lo_k, hi_k] with |g|·s₁ ≤ 6·s₂ (a larger |g| would have made s₂
// larger).
func (blk *fp4Block) codeOK(k int, c uint8, s2 float64) bool {
	for _, g := range e2m1Grid {
		if g < blk.lo[k] || g > blk.hi[k] || math.Abs(g)*blk.s1 > numeric.E2M1Max*s2 {
			continue
		}
		if fp4Code(g*blk.s1/s2) == c {
			return true
		}
	}
	return false
}

func (blk *fp4Block) hasS2(s2 float64) bool {
	for _, s := range blk.s2 {
		if s == s2 {
			return true
		}
	}
	return false
}

// storeFP4 quantises one token in binary32 by the two-stage rule, as
// SGLang's index_rope_quant_pack does (stage 1: max(amax, 6·2^-126) times
// f32(1/6), or divided by 6 with fp4Div6; both stages multiply by the
// exact reciprocal of the power-of-two scale), with the variant's fault,
// and writes it.
func (s sim32) storeFP4(p Params, cache []byte, slot int, z *[Dim]float32) {
	var codes [Dim]uint8
	var exps [fp4Blocks]uint8
	const floor1 = float32(fp4AmaxFloor1)
	fmax := float32(numeric.E2M1Max)
	if s.fault == "fp4-amax-448" {
		fmax = numeric.E4M3Max
	}
	for b := 0; b < fp4Blocks; b++ {
		blk := z[b*FP4Block : (b+1)*FP4Block]
		var a1 float32
		for _, v := range blk {
			if a := float32(math.Abs(float64(v))); a > a1 {
				a1 = a
			}
		}
		var t1 float32
		if s.fp4Div6 {
			t1 = max(a1, floor1) / fmax
		} else {
			t1 = max(a1, floor1) * (1 / fmax)
		}
		e1 := numeric.UE8M0CeilF32(t1)
		s1 := math.Float32frombits(uint32(e1) << 23)
		inv1 := math.Float32frombits(uint32(254-int(e1)) << 23)
		var v [FP4Block]float32
		var a2 float32
		oneStage := s.fault == variantFP4OneStage || s.fault == variantFP4TiesDownPack
		for k, x := range blk {
			v[k] = float32(numeric.E2M1Round(float64(x*inv1))) * s1
			if oneStage {
				v[k] = x
			}
			if a := float32(math.Abs(float64(v[k]))); a > a2 {
				a2 = a
			}
		}
		e2 := numeric.UE8M0CeilF32(max(a2/fmax, float32(fp4ScaleFloor2)))
		inv2 := math.Float32frombits(uint32(254-int(e2)) << 23)
		for k := range blk {
			c := numeric.E2M1FromF32(v[k] * inv2)
			if s.fault == variantFP4TiesDownPack {
				c = e2m1TiesDown(v[k] * inv2)
			}
			if c == 0x8 {
				c = 0
			}
			codes[b*FP4Block+k] = c
		}
		exps[b] = e2
	}
	if s.fault == "fp4-scale-wrong-block" {
		exps[1], exps[2] = exps[2], exps[1]
	}
	codesAt, scaleAt := slotBytes(p, slot)
	if s.fault == "fp4-cache-interleaved" {
		page, off := slot>>p.Log2P(), slot&(p.PageSize-1)
		codesAt = page*p.PageBytes() + off*(Dim/2+fp4Blocks)
		scaleAt = codesAt + Dim/2
	}
	for i := 0; i < Dim/2; i++ {
		lo, hi := codes[2*i], codes[2*i+1]
		if s.fault == "fp4-nibble-swap" {
			lo, hi = hi, lo
		}
		cache[codesAt+i] = lo | hi<<4
	}
	copy(cache[scaleAt:scaleAt+fp4Blocks], exps[:])
}

// e2m1TiesDown returns the e2m1 code of q rounded to nearest with ties
// toward zero, saturating, sign kept: DeepGEMM's _quantize_to_fp4_e2m1
// (the index counts the midpoints 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5
// strictly below |q|).
func e2m1TiesDown(q float32) uint8 {
	a := math.Abs(float64(q))
	var idx uint8
	for _, m := range fp4Mids {
		if a > m {
			idx++
		}
	}
	if math.Signbit(float64(q)) {
		idx |= 8
	}
	return idx
}
