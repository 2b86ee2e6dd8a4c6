package topk

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/kerneltest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// handCase16 builds a one-row case of 16-bit scores (dtype bf16 or f16),
// identity page table with P = 1, raw_indices returned.
func handCase16(t testing.TB, dtype string, K int, row []uint16) *difftest.Case {
	t.Helper()
	L := len(row)
	p := &Params{K: K, P: 1, ReturnRaw: true, Batch: 1, Stride: L, MaxPages: L, Family: "hand", ScoreDType: dtype}
	s := difftest.MustTensor(TensorScores, p.scoresDType(), 1, L)
	l := difftest.MustTensor(TensorSeqLens, difftest.I32, 1)
	pt := difftest.MustTensor(TensorPageTable, difftest.I32, 1, L)
	for i, x := range row {
		s.SetU16(i, x)
		pt.SetI32(i, int32(i))
	}
	l.SetI32(0, int32(L))
	return &difftest.Case{ID: "topk_transform/hand16", Kernel: KernelName, Family: "hand", Params: p,
		Inputs: []*difftest.Tensor{s, l, pt}, Outputs: p.Outputs()}
}

// sortedRaw returns the raw_indices row 0 of outs, sorted.
func sortedRaw(outs []*difftest.Tensor, K int) []int32 {
	r := rowI32(outs[1], 0, K)
	slices.Sort(r)
	return r
}

// The Key16 order on hand-picked bf16 and f16 rows: +NaN > +inf > 1 > +0 >
// −0 > −1 > −inf > −NaN, so each K takes a known prefix of that order.
func TestReference16KeyOrder(t *testing.T) {
	rows := map[string][]uint16{
		// −0, +0, +NaN, −NaN, +inf, 1, −1, −inf
		ScoreBF16: {0x8000, 0x0000, 0x7FC0, 0xFFC0, 0x7F80, 0x3F80, 0xBF80, 0xFF80},
		ScoreF16:  {0x8000, 0x0000, 0x7E00, 0xFE00, 0x7C00, 0x3C00, 0xBC00, 0xFC00},
	}
	want := map[int][]int32{
		1: {2},
		3: {2, 4, 5},
		4: {1, 2, 4, 5},
		5: {0, 1, 2, 4, 5},
		7: {0, 1, 2, 4, 5, 6, 7},
	}
	for dt, row := range rows {
		for K, w := range want {
			c := handCase16(t, dt, K, row)
			got := runRef(t, c)
			if r := rowI32(got[1], 0, K); !slices.Equal(r, w) {
				t.Errorf("%s K=%d: raw %v, want %v", dt, K, r, w)
			}
			if r := Check(c, got, got); r.Failed() {
				t.Errorf("%s K=%d: reference fails its own check: %s", dt, K, r.Message)
			}
		}
	}
}

// The check is tie-aware under Key16: from bf16 [2, 2, 2, 3] with K = 2,
// {3, any 2} passes and {2, 2} is missing position 3. Equal values of
// different bit patterns do not tie: −0 and +0 are ranked apart.
func TestCheck16Ties(t *testing.T) {
	c := handCase16(t, ScoreBF16, 2, []uint16{0x4000, 0x4000, 0x4000, 0x4040})
	want := runRef(t, c)
	for _, pick := range [][]int32{{3, 1}, {2, 3}, {0, 3}} {
		got := newOuts(c)
		setRow(got[0], 0, 2, pick)
		setRow(got[1], 0, 2, pick)
		if r := Check(c, got, want); r.Failed() {
			t.Errorf("picks %v: %s", pick, r.Message)
		}
	}
	got := newOuts(c)
	setRow(got[0], 0, 2, []int32{0, 1})
	setRow(got[1], 0, 2, []int32{0, 1})
	r := Check(c, got, want)
	if !r.Failed() || r.Metrics["failed_rule"] != "missing" || !strings.Contains(r.Message, "position 3 (bf16 0x4040 = 3) ranks above the K-th (bf16 0x4000 = 2)") {
		t.Errorf("{2, 2}: %v %q", r.Metrics["failed_rule"], r.Message)
	}
	z := handCase16(t, ScoreF16, 1, []uint16{0x0000, 0x8000})
	zw := runRef(t, z)
	zg := newOuts(z)
	setRow(zg[0], 0, 1, []int32{1})
	setRow(zg[1], 0, 1, []int32{1})
	if r := Check(z, zg, zw); !r.Failed() || !strings.Contains(r.Message, "f16 0x8000 = -0") {
		t.Errorf("−0 picked over +0: %q", r.Message)
	}
}

// Each 16-bit mutant on the smallest row its fault bites, K = 1: the
// mutant's pick and the reference's.
func TestMutants16Hand(t *testing.T) {
	cases := []struct {
		mutant      string
		dtype       string
		row         []uint16
		got, wanted int32
	}{
		{"topk16-raw-bits", ScoreBF16, []uint16{0xBF80, 0x3F00}, 0, 1},         // −1 above 0.5
		{"topk16-one-pass", ScoreBF16, []uint16{0x3F80, 0x3F81}, 0, 1},         // 1 and 1.0078 share the high digit
		{"topk16-raw-low-digit", ScoreBF16, []uint16{0xBF81, 0xBF80}, 0, 1},    // −1.0078 above −1
		{"topk16-raw-low-digit", ScoreBF16, []uint16{0x3F80, 0x3F81}, 1, 1},    // positives unharmed
		{"topk16-f16-bf16-key", ScoreF16, []uint16{0x3C00, 0x3C01}, 0, 1},      // 1 and 1 + 2^-10 tie at bf16 precision
		{"topk16-f16-bf16-key", ScoreBF16, []uint16{0x3F80, 0x3F81}, 1, 1},     // bf16 is exact
		{"topk16-raw-bits", ScoreF16, []uint16{0x3C00, 0x3C01}, 1, 1},          // positives unharmed
		{"topk16-one-pass", ScoreF16, []uint16{0x3C00, 0x3D00}, 1, 1},          // different high digits
		{"topk16-raw-bits", ScoreBF16, []uint16{0xFFC0, 0x7F80, 0x0000}, 0, 1}, // −NaN above +inf
	}
	for _, tc := range cases {
		m := kerneltest.Mutant(t, Kernel{}, tc.mutant)
		c := handCase16(t, tc.dtype, 1, tc.row)
		want := runRef(t, c)
		if w := want[1].I32(0); w != tc.wanted {
			t.Errorf("%s %s %#04x: reference picks %d, want %d", tc.mutant, tc.dtype, tc.row, w, tc.wanted)
		}
		got := newOuts(c)
		if err := m.Run(c, got); err != nil {
			t.Fatal(err)
		}
		if g := got[1].I32(0); g != tc.got {
			t.Errorf("%s %s %#04x: picks %d, want %d", tc.mutant, tc.dtype, tc.row, g, tc.got)
		}
		if r := Check(c, got, want); r.Failed() != (tc.got != tc.wanted) {
			t.Errorf("%s %s %#04x: check failed = %v: %s", tc.mutant, tc.dtype, tc.row, r.Failed(), r.Message)
		}
	}
}

// A 16-bit mutant is the reference on f32 scores.
func TestMutants16ExactOnF32(t *testing.T) {
	c := gen(t, "specials", "f32", map[string]any{"K": int64(16), "P": int64(4), "lengths": ints(100, 37, 16, 3)})
	want := runRef(t, c)
	for _, m := range Mutants() {
		if !strings.HasPrefix(m.Name, "topk16-") {
			continue
		}
		got := newOuts(c)
		if err := m.Run(c, got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if !slices.Equal(got[i].Data, want[i].Data) {
				t.Errorf("%s differs from the reference on f32 scores (%s)", m.Name, got[i].Name)
			}
		}
	}
}

// Generation: the dtype param sets the tensor dtype and Params.ScoreDType,
// narrows f32 families by round to nearest even, fills past L with +NaN
// and +inf of the format; 16-bit families refuse f32; a bad dtype is an
// error naming the param.
func TestGenerate16(t *testing.T) {
	for _, dt := range []string{ScoreBF16, ScoreF16} {
		c := gen(t, "gaussian", dt, map[string]any{"dtype": dt, "K": int64(4), "P": int64(8), "lengths": ints(5, 3), "stride": int64(8)})
		p, _ := paramsOf(c)
		s := c.Input(TensorScores)
		if p.ScoreDType != dt || s.DType != p.scoresDType() || len(s.Data) != 2*2*8 {
			t.Fatalf("%s: score_dtype %q, tensor %s of %d bytes", dt, p.ScoreDType, s.DType, len(s.Data))
		}
		f32c := gen(t, "gaussian", dt, map[string]any{"K": int64(4), "P": int64(8), "lengths": ints(5, 3), "stride": int64(8)})
		for i := 0; i < 5; i++ {
			x := f32c.Input(TensorScores).F32(i)
			w := numeric.BF16FromF32(x)
			if dt == ScoreF16 {
				w = numeric.F16FromF32(x)
			}
			if g := s.U16(i); g != w {
				t.Errorf("%s: scores[0][%d] = %#04x, want %#04x (narrowed %g)", dt, i, g, w, x)
			}
		}
		nan, inf := uint16(0x7FC0), uint16(0x7F80)
		if dt == ScoreF16 {
			nan, inf = 0x7E00, 0x7C00
		}
		if s.U16(6) != nan || s.U16(7) != inf || s.U16(8+3) != inf || s.U16(8+4) != nan {
			t.Errorf("%s: past-length fill %#04x %#04x %#04x %#04x", dt, s.U16(6), s.U16(7), s.U16(11), s.U16(12))
		}
		if js, _ := json.Marshal(p); !strings.Contains(string(js), `"score_dtype":"`+dt+`"`) {
			t.Errorf("%s: params JSON %s", dt, js)
		}
	}
	f := gen(t, "gaussian", "f32", map[string]any{"K": int64(4), "lengths": ints(5)})
	if js, _ := json.Marshal(f.Params); strings.Contains(string(js), "score_dtype") || f.Input(TensorScores).DType != difftest.F32 {
		t.Errorf("f32 case: params %s, scores %s", js, f.Input(TensorScores).DType)
	}
	for _, bad := range []struct {
		family string
		params map[string]any
		msg    string
	}{
		{"oneexp", map[string]any{"K": int64(4), "lengths": ints(5), "dtype": "f32"}, `param "dtype": family oneexp draws 16-bit scores`},
		{"gaussian", map[string]any{"K": int64(4), "lengths": ints(5), "dtype": "f8"}, `"dtype"`},
	} {
		spec := difftest.CaseSpec{Kernel: KernelName, Family: bad.family, Name: "bad", Params: bad.params}
		if _, err := NewCase(spec, 1, rng.CaseKey(1, spec.ID())); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s %v: error %v, want one containing %q", bad.family, bad.params, err, bad.msg)
		}
	}
}

// The 16-bit families draw what they promise: oneexp one binade of one
// sign per row, ties16 five adjacent keys, nan16 NaNs of both signs.
func TestFamilies16(t *testing.T) {
	for _, dt := range []string{ScoreBF16, ScoreF16} {
		params := map[string]any{"dtype": dt, "K": int64(64), "P": int64(8), "lengths": ints(4000), "batch": int64(8)}
		one := gen(t, "oneexp", dt, params)
		lo, hi := uint16(0x3F80), uint16(0x3FFF) // [1, 2)
		if dt == ScoreF16 {
			lo = 0x3C00
		}
		signs := map[uint16]bool{}
		for b := 0; b < 8; b++ {
			s0 := one.Input(TensorScores).U16(b*4000) & 0x8000
			signs[s0] = true
			for i := 0; i < 4000; i++ {
				x := one.Input(TensorScores).U16(b*4000 + i)
				if x&0x8000 != s0 || x&0x7FFF < lo || x&0x7FFF > hi {
					t.Fatalf("%s oneexp row %d [%d] = %#04x outside one binade of one sign", dt, b, i, x)
				}
			}
		}
		if len(signs) != 2 {
			t.Errorf("%s oneexp: rows of one sign only over 8 rows (%v)", dt, signs)
		}
		ties := gen(t, "ties16", dt, params)
		keys := map[uint16]int{}
		for i := 0; i < 4000; i++ {
			keys[numeric.Key16(ties.Input(TensorScores).U16(i))]++
		}
		var ks []uint16
		for k := range keys {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		if len(ks) != 5 || ks[4]-ks[0] != 4 || (ks[2])%256 != 0 {
			t.Errorf("%s ties16 keys %#04x, want five adjacent around a multiple of 256", dt, ks)
		}
		nan := gen(t, "nan16", dt, params)
		var pos, neg int
		for i := 0; i < 4000; i++ {
			x := nan.Input(TensorScores).U16(i)
			isNaN := numeric.BF16IsNaN(x)
			if dt == ScoreF16 {
				isNaN = x&0x7C00 == 0x7C00 && x&0x3FF != 0
			}
			if isNaN && x&0x8000 == 0 {
				pos++
			} else if isNaN {
				neg++
			}
		}
		if pos < 150 || neg < 150 {
			t.Errorf("%s nan16: %d +NaN and %d −NaN in 4000, want about 250 each (1/16 of the positions)", dt, pos, neg)
		}
	}
}

// Validate and FromTensors check the scores dtype against score_dtype.
func TestValidate16DType(t *testing.T) {
	c := handCase16(t, ScoreBF16, 1, []uint16{0x3F80, 0x4000})
	p, _ := paramsOf(c) // a copy: each change is set back into the case
	p.ScoreDType = ScoreF16
	c.Params = p
	if err := Validate(c); err == nil || !strings.Contains(err.Error(), "scores") {
		t.Errorf("BF16 tensor under score_dtype f16: %v", err)
	}
	p.ScoreDType = "f8"
	c.Params = p
	if err := Validate(c); err == nil || !strings.Contains(err.Error(), "score_dtype") {
		t.Errorf("score_dtype f8: %v", err)
	}
	p.ScoreDType = ScoreBF16
	js, _ := json.Marshal(p)
	tensors := map[string]*difftest.Tensor{}
	for _, in := range c.Inputs {
		tensors[in.Name] = in
	}
	back, err := FromTensors("cap", js, tensors)
	if err != nil {
		t.Fatal(err)
	}
	if bp, _ := paramsOf(back); bp.ScoreDType != ScoreBF16 {
		t.Errorf("FromTensors lost score_dtype: %+v", bp)
	}
	// A capture that leaves score_dtype out states it by the scores dtype;
	// one that gives it must agree with the tensor.
	p.ScoreDType = ""
	js, _ = json.Marshal(p)
	if back, err := FromTensors("cap", js, tensors); err != nil {
		t.Errorf("BF16 scores without score_dtype: %v", err)
	} else if bp, _ := paramsOf(back); bp.ScoreDType != ScoreBF16 {
		t.Errorf("BF16 scores without score_dtype read as %q, want bf16", bp.ScoreDType)
	}
	p.ScoreDType = ScoreF32
	js, _ = json.Marshal(p)
	if _, err := FromTensors("cap", js, tensors); err == nil || !strings.Contains(err.Error(), "dtype must be F32, got BF16") {
		t.Errorf("BF16 scores under score_dtype f32: %v", err)
	}
}

// key16Of ranks every 16-bit pattern exactly as numeric.Key16 does: the
// 65,536 patterns of each format, sorted by Key16, have strictly
// increasing key16Of, and widen16/narrowBits round-trip each of them.
func TestKey16OfOrder(t *testing.T) {
	for _, dt := range []string{ScoreBF16, ScoreF16} {
		prev := uint32(0)
		for k := 0; k < 1<<16; k++ {
			b := numeric.Key16Bits(uint16(k))
			key := key16Of(dt, b)
			if k > 0 && key <= prev {
				t.Fatalf("%s: pattern %#04x (Key16 %#04x) has key32 %#08x ≤ the previous %#08x", dt, b, k, key, prev)
			}
			prev = key
			if back := narrowBits(dt, widen16(dt, b)); back != b {
				t.Fatalf("%s: %#04x widens and narrows to %#04x", dt, b, back)
			}
		}
	}
}

// SGLang's NaN rule (VariantNaNNeverSelected) on a hand row: bf16
// [+NaN, 3, 2, 1, −NaN, +NaN], K = 2 takes {1, 2} (the contract: the two
// +NaNs, {0, 5}); K = 4 takes the three real scores and leaves one −1.
// The check fails it (a −1 inside min(K, L), or a +NaN left out) and
// the diagnosis names the variant.
func TestVariantNaNNeverSelected(t *testing.T) {
	row := []uint16{0x7FC0, 0x4040, 0x4000, 0x3F80, 0xFFC0, 0x7FC1}
	run := variantByName(t, VariantNaNNeverSelected).Run
	for _, tc := range []struct {
		K         int
		want, ref []int32
		rule      string
	}{
		{2, []int32{1, 2}, []int32{0, 5}, "missing"},
		{4, []int32{1, 2, 3, -1}, []int32{0, 1, 2, 5}, "padding"},
	} {
		c := handCase16(t, ScoreBF16, tc.K, row)
		ref := runRef(t, c)
		if r := rowI32(ref[1], 0, tc.K); !slices.Equal(r, tc.ref) {
			t.Errorf("K=%d: reference %v, want %v", tc.K, r, tc.ref)
		}
		got := newOuts(c)
		if err := run(c, got); err != nil {
			t.Fatal(err)
		}
		if r := rowI32(got[1], 0, tc.K); !slices.Equal(r, tc.want) {
			t.Errorf("K=%d: variant %v, want %v", tc.K, r, tc.want)
		}
		res := Check(c, got, ref)
		if !res.Failed() || res.Metrics["failed_rule"] != tc.rule {
			t.Errorf("K=%d: check %v %q, want failed_rule %s", tc.K, res.Metrics["failed_rule"], res.Message, tc.rule)
		}
		d := triage.Diagnose(context.Background(), Kernel{}, c, got, ref, time.Minute)
		if !slices.Contains(d.Matches, VariantNaNNeverSelected) {
			t.Errorf("K=%d: diagnosis %v, want %s among them", tc.K, d.Matches, VariantNaNNeverSelected)
		}
	}
}

// A 16-bit case survives a capture file: WriteCapture then ReadCapture
// give the same score_dtype, the same BF16/F16 scores bytes and the same
// reference output.
func TestCapture16RoundTrip(t *testing.T) {
	for _, dt := range []string{ScoreBF16, ScoreF16} {
		c := gen(t, "nan16", "cap-"+dt, map[string]any{"dtype": dt, "K": int64(8), "P": int64(8), "lengths": ints(40, 3)})
		path := filepath.Join(t.TempDir(), dt+".safetensors")
		if err := difftest.WriteCapture(path, c, nil); err != nil {
			t.Fatal(err)
		}
		back, _, err := difftest.ReadCapture(path)
		if err != nil {
			t.Fatal(err)
		}
		bp, _ := paramsOf(back)
		s, bs := c.Input(TensorScores), back.Input(TensorScores)
		if bp.ScoreDType != dt || bs.DType != s.DType || !slices.Equal(bs.Data, s.Data) {
			t.Fatalf("%s: score_dtype %q, scores %s (%d bytes), want %s", dt, bp.ScoreDType, bs.DType, len(bs.Data), s.DType)
		}
		if a, b := runRef(t, c), runRef(t, back); !slices.Equal(a[1].Data, b[1].Data) {
			t.Errorf("%s: the reference differs after the round trip", dt)
		}
	}
}
