// Semantic variants of norm_rope_store for the diagnosis of docs/failures.md: conversions and conventions that real implementations use in place
// of the contract's. Three of them are catalog mutants already (the same
// fault under the same name); the diagnosis runs the mutant and names it,
// so they are aliases here, listed for what real code does it. Three are
// new: the e4m3 codes rounded toward zero, and two FP4 packers of the
// field (one stage; ties toward zero).

package normrope

import (
	"bytes"
	"math"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// Names of the variants that are not catalog mutants.
const (
	variantE4M3Truncate    = "e4m3-truncate"           // e4m3 codes rounded toward zero
	variantFP4OneStage     = "fp4-one-stage"           // FP4: the packer alone, on the keys themselves
	variantFP4TiesDownPack = "fp4-one-stage-ties-down" // FP4: the packer alone, e2m1 ties toward zero
)

// Variants returns the store's semantic variants:
//
//   - bf16-truncate (alias of the mutant): f32 → bf16 by dropping the low
//     16 bits, as __float2bfloat16_rz, Triton's
//     .to(tl.bfloat16, fp_downcast_rounding="rtz") and hand-written
//     (bits >> 16) conversions do;
//
//   - e4m3-truncate: scaled values → e4m3fn rounded toward zero
//     (saturating at ±448, NaN → 0x7F), as Triton's
//     .to(tl.float8e4nv, fp_downcast_rounding="rtz") does;
//
//   - scale-no-floor (alias of the mutant): scale = amax/448 with no 1e-4
//     floor, as per-token quantisers written from the formula alone do
//     (an all-zero token gets scale 0 and NaN codes);
//
//   - fp4-one-stage: FP4 keys packed in one stage, s = ue8m0 ceiling of
//     max(amax/6, 1e-4) over z itself, codes e2m1(z/s) with ties to
//     even: the same values as the two-stage rule except below the floor,
//     but where a block's largest code is 3 it stores s and the codes
//     where the rule stores s/2 and doubled codes;
//
//   - fp4-one-stage-ties-down: that packer with e2m1 ties toward zero
//     (0.75 → 0.5, 1.75 → 1.5, 3.5 → 3), as DeepGEMM's
//     per_token_cast_to_fp4 and SGLang's quantize_fp4_indexer_tensor
//     (rne=False, its default) do;
//
//   - rope-style-swap (alias of the mutant): the other RoPE pairing,
//     GPT-J/interleaved (2j, 2j+1) where NeoX/rotate_half (j, j+32) is
//     asked and back, as a kernel ported between model families with the
//     wrong rotary convention does.
//
//   - intermediate=bf16 (a precision variant): passes the contract's
//     check with bf16 declared between the stages (Params.Intermediate);
//
//   - intermediate=bf16-once (a precision variant): passes it with one
//     bf16 rounding declared before the store (SGLang's fused V3.2
//     indexer_k).
//
// e4m3-truncate runs the binary32 kernel model (model32.go) with that one
// change, like the mutants; it returns the case's *InputError for an
// invalid case.
func Variants() []triage.Variant {
	return []triage.Variant{
		{Name: "bf16-truncate", Alias: "bf16-truncate", Doc: "f32 → bf16 by truncation, as __float2bfloat16_rz and Triton's fp_downcast_rounding=\"rtz\" do"},
		{Name: variantE4M3Truncate, Doc: "e4m3 codes rounded toward zero (saturating), as Triton's .to(tl.float8e4nv, fp_downcast_rounding=\"rtz\") does",
			Run: func(c *difftest.Case, outs []*difftest.Tensor) error {
				return runSim(c, outs, sim32{fault: variantE4M3Truncate})
			}},
		{Name: "scale-no-floor", Alias: "scale-no-floor", Doc: "scale = amax/448 without the 1e-4 floor on amax"},
		{Name: variantFP4OneStage, Doc: "FP4 keys packed in one stage (no fake quantisation first): scale from max(amax/6, 1e-4) of the keys, codes e2m1(z/scale) ties to even",
			Run: func(c *difftest.Case, outs []*difftest.Tensor) error {
				return runSim(c, outs, sim32{fault: variantFP4OneStage})
			}},
		{Name: variantFP4TiesDownPack, Doc: "FP4 keys packed in one stage with e2m1 ties toward zero, as DeepGEMM's per_token_cast_to_fp4 and SGLang's quantize_fp4_indexer_tensor(rne=False)",
			Run: func(c *difftest.Case, outs []*difftest.Tensor) error {
				return runSim(c, outs, sim32{fault: variantFP4TiesDownPack})
			}},
		{Name: "rope-style-swap", Alias: "rope-style-swap", Doc: "the other RoPE pairing: interleaved (GPT-J) where neox (rotate_half) is asked, and back"},
		{Name: VariantIntermediateBF16, Precision: true,
			Doc:     "bf16 between norm, RoPE, Hadamard and the store, as SGLang's unfused V3.2 path does",
			Accepts: acceptsAs(IntermediateBF16)},
		{Name: VariantIntermediateBF16Once, Precision: true,
			Doc:     "f32 through norm, RoPE and Hadamard, rounded to bf16 once before the store, as SGLang's fused V3.2 indexer_k does",
			Accepts: acceptsAs(IntermediateBF16Once)},
	}
}

// Precision variants: "passes as intermediate=…", the store's check with
// that Params.Intermediate declared, on a case that declares another.
const (
	// VariantIntermediateBF16 is "passes as intermediate=bf16": the bf16
	// chain (bf16 after the norm, RoPE and the Hadamard).
	VariantIntermediateBF16 = "intermediate=" + IntermediateBF16
	// VariantIntermediateBF16Once is "passes as intermediate=bf16-once":
	// one bf16 rounding of the values the store quantises.
	VariantIntermediateBF16Once = "intermediate=" + IntermediateBF16Once
)

// acceptsAs returns a precision variant's Accepts: the case's check with
// intermediate declared passes got, on a case that does not declare it
// already (its own check has failed) and whose declaration changes the
// check (not bf16-once with the BF16 store, the store's own rounding).
func acceptsAs(intermediate string) func(c *difftest.Case, got, want []*difftest.Tensor) bool {
	return func(c *difftest.Case, got, want []*difftest.Tensor) bool {
		p, err := paramsOf(c)
		if err != nil || p.Intermediate == intermediate || p.Stages == StagesStore {
			return false
		}
		p.Intermediate = intermediate
		if p.declared() == "" {
			return false
		}
		cc := *c
		cc.Params = p
		return !Check(&cc, got, want).Failed()
	}
}

// Variants returns the semantic variants (triage.VariantProvider); see
// Variants.
func (Kernel) Variants() []triage.Variant { return Variants() }

var (
	_ triage.VariantProvider = Kernel{}
	_ triage.Matcher         = Kernel{}
)

// e4m3Truncate returns the e4m3fn code of q rounded toward zero: the
// largest-magnitude code not above |q|, with q's sign; |q| ≥ 448 and ±inf
// saturate to ±448 (0x7E/0xFE), NaN gives 0x7F, ±0 keeps its sign.
func e4m3Truncate(q float32) uint8 {
	if q != q {
		return 0x7F
	}
	sign := uint8(math.Float32bits(q)>>24) & 0x80
	a := float32(math.Abs(float64(q)))
	if a >= numeric.E4M3Max {
		return sign | 0x7E
	}
	lo, hi := uint8(0), uint8(0x7E) // E4M3ToF32(lo) ≤ a < E4M3ToF32(hi)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if numeric.E4M3ToF32(mid) <= a {
			lo = mid
		} else {
			hi = mid
		}
	}
	return sign | lo
}

// scaleULPs is how far apart two plain FP8 scales may be and still match:
// the scale is an f32 quotient of amax, which another summation order (a
// GPU kernel against the Go model of a fault) moves by a few ULPs.
const scaleULPs = 4

// Match reports whether two implementations' caches are the same result
// for the diagnosis (triage.Matcher): every byte outside the written
// slots equal (canary kept, or changed alike); for each token with
// out_loc ≥ 0 whose values are specified (not "don't care", see Check),
// its BF16 values or FP8/FP4 codes equal byte for byte, and its FP8 scale
// equal (ue8m0) or within scaleULPs f32 ULPs of the same sign (plain), its
// four FP4 scale bytes equal.
// Don't-care tokens' slots are not compared. An invalid case or a cache
// of the wrong size does not match.
func (Kernel) Match(c *difftest.Case, a, b []*difftest.Tensor) bool {
	in, err := load(c)
	if err != nil || len(a) != 1 || len(b) != 1 || checkCache(in.p, a[0]) != nil || checkCache(in.p, b[0]) != nil {
		return false
	}
	p, x, y := in.p, a[0].Data, b[0].Data
	n := codeBytes(p)
	return in.matchSlots(x, y, func(_, codesAt, scaleAt int) bool {
		return bytes.Equal(x[codesAt:codesAt+n], y[codesAt:codesAt+n]) &&
			(scaleAt < 0 || sameScale(p.ScaleFmt, x[scaleAt:scaleAt+4], y[scaleAt:scaleAt+4]))
	})
}

// matchSlots walks two caches x and y of in's case as Match and
// MatchCandidate compare them: for every token with out_loc ≥ 0 whose
// values are specified (analyze: not don't care) it calls slot with the
// token and its slot's code and scale offsets (slotBytes: scaleAt −1
// where the store keeps no scale there), which reports whether they still
// match; then every byte outside the written slots (don't-care tokens'
// slots are written) must be equal in x and y. It returns false at the
// first mismatch.
func (in *inputs) matchSlots(x, y []byte, slot func(t, codesAt, scaleAt int) bool) bool {
	owned := make([]bool, len(x))
	n := codeBytes(in.p)
	var tb tokenBound
	for t := 0; t < in.n; t++ {
		s := in.loc.I64(t)
		if s < 0 {
			continue
		}
		codesAt, scaleAt := slotBytes(in.p, int(s))
		for i := codesAt; i < codesAt+n; i++ {
			owned[i] = true
		}
		if scaleAt >= 0 {
			for i := scaleAt; i < scaleAt+4; i++ {
				owned[i] = true
			}
		}
		in.analyze(t, &tb)
		if tb.dc != "" {
			continue
		}
		if !slot(t, codesAt, scaleAt) {
			return false
		}
	}
	for i := range x {
		if !owned[i] && x[i] != y[i] {
			return false
		}
	}
	return true
}

// sameScale compares two stored f32 scales: equal bits, or for a plain
// scale two finite values of one sign within scaleULPs ULPs.
func sameScale(scaleFmt string, a, b []byte) bool {
	u := uint32(a[0]) | uint32(a[1])<<8 | uint32(a[2])<<16 | uint32(a[3])<<24
	v := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
	if u == v {
		return true
	}
	if scaleFmt == ScaleUE8M0 || u>>31 != v>>31 {
		return false
	}
	fu, fv := math.Float32frombits(u), math.Float32frombits(v)
	if math.IsNaN(float64(fu)) || math.IsNaN(float64(fv)) || math.IsInf(float64(fu), 0) || math.IsInf(float64(fv), 0) {
		return false
	}
	d := int64(u&0x7FFFFFFF) - int64(v&0x7FFFFFFF)
	return d >= -scaleULPs && d <= scaleULPs
}
