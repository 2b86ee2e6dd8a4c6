// The store half of the mutant catalog of docs/mutants.md: each mutant is
// the binary32 kernel model of model32.go with exactly one fault, modelled
// on a bug class seen in public kernels (wrong RoPE pairing or half, an
// off-by-one position, truncating or double-rounding conversions, missing
// saturation, a wrong scale rounding or floor, a wrong cache layout, a
// missing out_loc guard, a dropped tail iteration, a missing normalisation;
// for FP4 keys a scale from the wrong block, the wrong format maximum,
// swapped nibbles, a per-token instead of per-page layout).

package normrope

import (
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// mutantFaults lists the catalog in docs/mutants.md order with one line each.
var mutantFaults = []struct{ name, fault string }{
	{"rope-style-swap", "pairs dims interleaved where neox is asked, and neox where interleaved is asked"},
	{"rope-half-swap", "rotates dims [64−off, 128−off), the other half of the key"},
	{"rope-position-off-by-one", "reads the freqs row of position + 1 (a row past the table reads as zeros)"},
	{"bf16-truncate", "converts f32 to bf16 by dropping the low 16 bits instead of rounding to nearest even"},
	{"fp8-double-round", "converts f32 to e4m3 through f16 (two roundings)"},
	{"fp8-no-saturate", "encodes values beyond ±448 after scaling as NaN (0x7F/0xFF) instead of ±448"},
	{"ue8m0-floor", "rounds the ue8m0 scale down to a power of two (2^floor(log2 s)) instead of up"},
	{"scale-no-floor", "omits the 1e-4 floor on amax, so an all-zero token gets scale 0 and NaN codes"},
	{"cache-scale-interleaved", "writes each token as [128 codes | scale] at off·132 instead of the page's codes then the page's scales"},
	{"write-negative-slot", "does not skip out_loc −1: writes that token to slot −1 wrapped modulo num_pages·P (the last slot)"},
	{"skip-tail-token", "drops the last token when N is not a multiple of 8"},
	{"hadamard-unscaled", "omits the 128^-½ normalisation of the Hadamard transform"},
	{"fp4-scale-wrong-block", "FP4: stores block 2's scale in byte 1 and block 1's in byte 2 (the four exponents gathered from the wrong lanes into the scale word)"},
	{"fp4-amax-448", "FP4: block scales from amax/448 (the e4m3 maximum) instead of amax/6, so every code lands near zero"},
	{"fp4-nibble-swap", "FP4: packs dim 2i in the high nibble and dim 2i+1 in the low one"},
	{"fp4-cache-interleaved", "FP4: writes each token as [64 code bytes | 4 scale bytes] at off·68 instead of the page's codes then the page's scales"},
}

// Mutants returns the 16 store mutants of docs/mutants.md (the last four
// FP4-only: on another store they are the correct kernel). Each Run writes
// outs[0] (the cache) like a correct binary32 kernel except for its fault;
// it returns the case's *InputError if the case is invalid.
func Mutants() []difftest.Mutant {
	ms := make([]difftest.Mutant, len(mutantFaults))
	for i, m := range mutantFaults {
		name := m.name
		ms[i] = difftest.Mutant{Name: name, Fault: m.fault, Run: func(c *difftest.Case, outs []*difftest.Tensor) error {
			return runSim(c, outs, sim32{fault: name})
		}}
		if strings.HasPrefix(name, "fp4-") {
			ms[i].Applies = fp4Spec
		}
	}
	return ms
}

// fp4Spec reports whether spec may be a case of the FP4 store: its store
// is "fp4", or its parameters do not decode here (a literal entry, a bad
// spec), where the selftest runs the case rather than guess.
func fp4Spec(spec difftest.CaseSpec) bool {
	if spec.Family == FamilyLiteral {
		return true
	}
	g, _, err := plan(spec)
	return err != nil || g.p.Store == StoreFP4
}

// runSim runs a binary32 kernel variant on a case.
func runSim(c *difftest.Case, outs []*difftest.Tensor, s sim32) error {
	in, err := load(c)
	if err != nil {
		return err
	}
	if len(outs) != 1 {
		return difftest.Inputf("outputs", nil, "want 1 (%s), got %d", NameCache, len(outs))
	}
	if err := checkCache(in.p, outs[0]); err != nil {
		return err
	}
	s.run(in, outs[0].Data)
	return nil
}
