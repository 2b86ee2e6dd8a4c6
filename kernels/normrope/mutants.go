// The store half of the mutant catalog of docs/mutants.md: each mutant is
// the binary32 kernel model of model32.go with exactly one fault, modelled
// on a bug class seen in public kernels (wrong RoPE pairing or half, an
// off-by-one position, truncating or double-rounding conversions, missing
// saturation, a wrong scale rounding or floor, a wrong cache layout, a
// missing out_loc guard, a dropped tail iteration, a missing normalisation).

package normrope

import (
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
}

// Mutants returns the 12 store mutants of docs/mutants.md. Each Run writes
// outs[0] (the cache) like a correct binary32 kernel except for its fault;
// it returns the case's *InputError if the case is invalid.
func Mutants() []difftest.Mutant {
	ms := make([]difftest.Mutant, len(mutantFaults))
	for i, m := range mutantFaults {
		name := m.name
		ms[i] = difftest.Mutant{Name: name, Fault: m.fault, Run: func(c *difftest.Case, outs []*difftest.Tensor) error {
			return runSim(c, outs, sim32{fault: name})
		}}
	}
	return ms
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
