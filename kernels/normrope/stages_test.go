package normrope

import (
	"encoding/binary"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// TestStoreOnlyHand: with stages = store the key is x itself, whatever
// the norm, RoPE and Hadamard switches say. Token 0 is 448, 1, −0.5,
// 2^-9 (the smallest e4m3 subnormal), 3.125 (the midpoint of the e4m3
// values 3.0, code 0x44, and 3.25, 0x45: ties to the even code 0x44) and
// zeros: amax 448, scale 448/448 = 1, codes e4m3(x) = 0x7E, 0x38, 0xB0,
// 0x01, 0x44, 0x00…, the scale f32 1.0 (0x3F800000). The same
// token through the BF16 store is its own bits. A LayerNorm with a bias
// and a rotation of 90° would move every value: they are ignored.
func TestStoreOnlyHand(t *testing.T) {
	x := [][]float64{{448, 1, -0.5, 0x1p-9, 3.125}}
	b := make([]float32, Dim)
	for i := range b {
		b[i] = 7
	}
	p := config(NormLayer, StyleInterleaved, 0, true, StoreFP8, ScalePlain, 1, 1)
	p.Stages = StagesStore
	c := handCase(p, x, nil, b, [][]float32{rotRow(0, 1)}, []int64{0}, []int64{0})
	cache := reference(t, c)
	want := []byte{0x7E, 0x38, 0xB0, 0x01, 0x44}
	for k := 0; k < Dim; k++ {
		w := byte(0)
		if k < len(want) {
			w = want[k]
		}
		if cache.Data[k] != w {
			t.Errorf("code %d = %#02x, want %#02x", k, cache.Data[k], w)
		}
	}
	if got := binary.LittleEndian.Uint32(cache.Data[Dim:]); got != 0x3F800000 {
		t.Errorf("scale bits %#08x, want 0x3F800000 (1.0)", got)
	}
	if r := Check(c, []*difftest.Tensor{cache}, []*difftest.Tensor{cache}); r.Failed() {
		t.Errorf("the reference fails its own check: %s", r.Message)
	}
	// One code off by one step fails; so does the full pipeline's output.
	bad := newCache(c)
	copy(bad.Data, cache.Data)
	bad.Data[1] = 0x39
	if r := Check(c, []*difftest.Tensor{bad}, []*difftest.Tensor{cache}); !r.Failed() {
		t.Error("code 1 one step off (0x39 for 1.0) passes")
	}
	full := p
	full.Stages = ""
	fc := handCase(full, x, nil, b, [][]float32{rotRow(0, 1)}, []int64{0}, []int64{0})
	fullCache := reference(t, fc)
	if r := Check(c, []*difftest.Tensor{fullCache}, []*difftest.Tensor{cache}); !r.Failed() {
		t.Error("the full pipeline's bytes pass a store-only case")
	}

	p.Store, p.Stages = StoreBF16, StagesStore
	c = handCase(p, x, nil, b, [][]float32{rotRow(0, 1)}, []int64{0}, []int64{0})
	cache = reference(t, c)
	for k, v := range []uint16{0x43E0, 0x3F80, 0xBF00, 0x3B00, 0x4048} {
		if got := binary.LittleEndian.Uint16(cache.Data[2*k:]); got != v {
			t.Errorf("bf16 value %d = %#04x, want %#04x", k, got, v)
		}
	}
}

// TestStoreOnlyParams: stages takes "all" (stored as absent) or "store";
// store-only has no preset and no intermediate; the JSON form round-trips.
func TestStoreOnlyParams(t *testing.T) {
	p, err := Preset(PresetV4, 64)
	if err != nil {
		t.Fatal(err)
	}
	p.Preset = ""
	p.Stages = "norm"
	if err := p.Check(); err == nil || !strings.Contains(err.Error(), "stages") {
		t.Errorf("stages %q: error %v, want one naming stages", p.Stages, err)
	}
	p.Stages = StagesStore
	if err := p.Check(); err != nil {
		t.Errorf("stages store: %v", err)
	}
	if got := MatchPreset(p); got != "" {
		t.Errorf("MatchPreset of a store-only v4 configuration = %q, want none", got)
	}
	for _, im := range []string{IntermediateBF16, IntermediateBF16Once} {
		p.Intermediate = im
		if err := p.Check(); err == nil || !strings.Contains(err.Error(), "intermediate") {
			t.Errorf("store-only with intermediate %s: error %v, want one naming intermediate", im, err)
		}
	}
	p.Intermediate = ""
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseParams(raw)
	if err != nil || back.Stages != StagesStore {
		t.Errorf("round trip of %s: stages %q, err %v", raw, back.Stages, err)
	}
	spec := difftest.CaseSpec{Kernel: KernelName, Family: "gaussian", Name: "s", Params: map[string]any{"stages": "all", "N": int64(3)}}
	c, err := NewCase(spec, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := paramsOf(c); got.Stages != "" || got.Preset != PresetV4 {
		t.Errorf(`stages = "all": Stages %q, preset %q; want absent and v4`, got.Stages, got.Preset)
	}
}

// TestStoreOnlySuite runs every case of the default suite with stages =
// store: the binary32 model (which then only stores) passes each, with
// division or a reciprocal product; a model that runs the whole pipeline
// anyway fails some; and the catalog mutants of the store itself are all
// caught, while those of the skipped steps (RoPE, the Hadamard scale) have
// nothing to act on and pass, as does bf16-truncate: a BF16 store of keys
// that are bf16 already rounds nothing.
func TestStoreOnlySuite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the default suite")
	}
	skipped := []string{"rope-style-swap", "rope-half-swap", "rope-position-off-by-one", "hadamard-unscaled", "bf16-truncate"}
	caught := map[string]bool{}
	fullFails := 0
	for _, spec := range loadSuite(t, "default") {
		s := withParam(spec, "stages", StagesStore)
		if s.Params["intermediate"] != nil {
			continue
		}
		c, err := NewCase(s, 1, rng.CaseKey(1, spec.ID()))
		if err != nil {
			t.Fatalf("%s: %v", s.ID(), err)
		}
		want := reference(t, c)
		v := newVerdicts(c, want) // the skipped steps' mutants write the model's bytes: judged once
		for _, m := range []sim32{{}, {recip: true}} {
			if f, why := v.of(t, func(o []*difftest.Tensor) error { return runSim(c, o, m) }); f {
				t.Errorf("%s: the store-only model (recip %v) fails: %s", c.ID, m.recip, why)
			}
		}
		full := func(o []*difftest.Tensor) error {
			fc := *c
			p, _ := paramsOf(c)
			p.Stages = ""
			fc.Params = p
			return runSim(&fc, o, sim32{})
		}
		if f, _ := v.of(t, full); f {
			fullFails++
		}
		for _, m := range Mutants() {
			if !caught[m.Name] {
				if f, _ := v.of(t, func(o []*difftest.Tensor) error { return m.Run(c, o) }); f {
					caught[m.Name] = true
				}
			}
		}
	}
	if fullFails == 0 {
		t.Error("a kernel that norms and rotates a store-only case's keys passes every case")
	}
	for _, m := range Mutants() {
		if caught[m.Name] == slices.Contains(skipped, m.Name) {
			t.Errorf("mutant %s: caught = %v with stages store", m.Name, caught[m.Name])
		}
	}
}
