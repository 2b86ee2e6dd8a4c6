// The needle study's FP4 column (docs/pipeline.md): norm_rope_store with
// preset v4-fp4 on the implementation under test, checked, and the logits
// scored here over the cache it wrote (the study predates indexer_logits
// over FP4 keys, which a v4-fp4 pipeline case runs), then the study's
// end-to-end measures for all three stores.

package pipeline

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/kernels/normrope"
)

// withPreset returns a copy of the pipeline case c (drawn with preset v4)
// for another FP8 or BF16 preset: the same tokens, tables and exact
// queries; stage 2's q and weights quantised for the new store. The
// generator draws nothing that depends on the preset, so this is the case
// NewCase draws with that preset (TestWithPresetMatchesNewCase).
func withPreset(c *difftest.Case, preset string) (*difftest.Case, error) {
	p, err := paramsOf(c)
	if err != nil {
		return nil, err
	}
	p.Preset = preset
	if err := p.Check(); err != nil {
		return nil, err
	}
	d := *c
	d.ID = c.ID + "/" + preset
	d.Params = p
	d.Inputs = make([]*difftest.Tensor, len(c.Inputs))
	for i, t := range c.Inputs {
		d.Inputs[i] = t.Clone()
	}
	d.Inputs[6], d.Inputs[7] = quantise(&p, d.Input(NameQExact), d.Input(NameWeightsExact))
	return &d, nil
}

// fp4Stage1 returns the norm_rope_store case of preset v4-fp4 on the
// tokens of pipeline case c (its page size and pages).
func fp4Stage1(c *difftest.Case) (*difftest.Case, error) {
	return stage1As(c, normrope.PresetV4FP4, c.ID+"/"+normrope.PresetV4FP4+"@"+normrope.KernelName)
}

// fp4Query returns the study's FP4 query of one head, decoded: one stage
// per block of 32 values (as DeepGEMM's per_token_cast_to_fp4), the ue8m0
// scale s = 2^ceil(log2(max(amax/6, 1e-4))) and the e2m1 code of v/s
// (nearest, ties to even, saturating), times s. q is in the key space of
// the v4-fp4 store (no Hadamard).
func fp4Query(q *[normrope.Dim]float64) [normrope.Dim]float64 {
	var out [normrope.Dim]float64
	for b := 0; b < normrope.Dim; b += normrope.FP4Block {
		amax := 0.0
		for _, v := range q[b : b+normrope.FP4Block] {
			amax = math.Max(amax, math.Abs(v))
		}
		s, _ := numeric.UE8M0Ceil(math.Max(amax/numeric.E2M1Max, normrope.ScaleFloor))
		for k := b; k < b+normrope.FP4Block; k++ {
			out[k] = numeric.E2M1Round(q[k]/s) * s
		}
	}
	return out
}

// fp4Key decodes the key in cache slot slot of a v4-fp4 store with page
// size P (68·P-byte pages: P × 64 packed e2m1 bytes, dim 2i in the low
// nibble of byte i, then P × 4 ue8m0 block scales), exactly.
func fp4Key(cache []byte, P, slot int) (k [normrope.Dim]float64) {
	page, off := slot/P, slot%P
	codes := page*68*P + off*64
	scales := page*68*P + 64*P + off*4
	for d := range k {
		c := cache[codes+d/2]
		if d%2 == 1 {
			c >>= 4
		}
		k[d] = numeric.E2M1ToF64(c&0xF) * numeric.UE8M0ToF64(cache[scales+d/normrope.FP4Block])
	}
	return k
}

// fp4Logits returns, per row b and position s < L_b, Σ_h w_h·max(q̃_h·k̃_s,
// 0) in f64: k̃ the decoded FP4 key of the slot the page table gives,
// q̃_h = fp4Query(H·q_h) (H the orthonormal Hadamard transform: the v4
// queries are drawn in the rotated key space, so H·q scores the unrotated
// FP4 key as q scores the rotated one), w = weights_exact (an FP4 query
// carries its own scales; nothing is folded into the weights).
func fp4Logits(c *difftest.Case, cache []byte) [][]float64 {
	p, _ := paramsOf(c)
	q, w, lens, table := c.Input(NameQExact), c.Input(NameWeightsExact), c.Input("seq_lens"), c.Input("page_table")
	H := p.Heads
	out := make([][]float64, p.Batch)
	for b := range out {
		qs := make([][normrope.Dim]float64, H)
		for h := range qs {
			var v [normrope.Dim]float64
			for d := range v {
				v[d] = float64(q.F32((b*H+h)*normrope.Dim + d))
			}
			hadamard(&v)
			qs[h] = fp4Query(&v)
		}
		L := int(lens.I32(b))
		out[b] = make([]float64, L)
		for s := 0; s < L; s++ {
			slot := int(table.I32(b*p.MaxPages+s/p.PageSize))*p.PageSize + s%p.PageSize
			k := fp4Key(cache, p.PageSize, slot)
			out[b][s] = logitOf(qs, w, b, H, &k)
		}
	}
	return out
}

// topKOf returns the positions of the K largest of v (ties to the lower
// position).
func topKOf(v []float64, K int) []int {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return v[idx[i]] > v[idx[j]] })
	return idx[:min(K, len(v))]
}

// runFP4 is the FP4 column of one study row: stage 1 (v4-fp4) on cfg.Impl,
// checked against its reference; then fp4Logits over the cache it wrote,
// the K largest chosen, and the end-to-end measures of e2e (row 0).
func runFP4(ctx context.Context, cfg StudyConfig, c *difftest.Case) (StudyStore, error) {
	st := StudyStore{Preset: normrope.PresetV4FP4}
	s1, err := fp4Stage1(c)
	if err != nil {
		return st, err
	}
	if err := normrope.Validate(s1); err != nil {
		return st, fmt.Errorf("stage 1 %s: %w", normrope.KernelName, err)
	}
	rec := difftest.NewRecord(s1, cfg.Impl.Name())
	cr := difftest.CaseRun{Impl: cfg.Impl, Timeout: cfg.Timeout}
	out, err := cr.RunCase(ctx, normrope.Kernel{}, s1, rec)
	if err != nil {
		return st, err
	}
	st.Verdict, st.Class, st.KernelTime = string(rec.Verdict), string(rec.Class), int64(rec.KernelTime)
	if rec.Failed() || len(out.Got) == 0 {
		st.Message = "stage 1 " + normrope.KernelName + ": " + rec.Message
		return st, nil
	}
	p, _ := paramsOf(c)
	lg := fp4Logits(c, out.Got[0].Data)
	z, err := exactKeysV4(c)
	if err != nil {
		return st, err
	}
	exact := exactLogits(c, z)
	st.Selected, st.Rank, st.ExactRank, st.Recall = needleMeasures(exact[0], lg[0], topKOf(lg[0], p.K), p.Needles[0], p.K)
	return st, nil
}

// exactKeysV4 returns the f64 keys of the v4 stage 1 of c (the rotated key
// space q_exact is drawn in, whatever c's preset).
func exactKeysV4(c *difftest.Case) ([][normrope.Dim]float64, error) {
	s1, err := stage1As(c, normrope.PresetV4, stageID(c, 0))
	if err != nil {
		return nil, err
	}
	return normrope.ExactKeys(s1)
}

// needleMeasures returns, for one row, whether chosen holds the needle
// ns, its rank among lg (1 + positions scoring above it) and among exact,
// and the recall of the exact top-K: |chosen ∩ exact top-K| / min(K, L).
func needleMeasures(exact, lg []float64, chosen []int, ns, K int) (selected bool, rank, exactRank int, recall float64) {
	top := map[int]bool{}
	for _, s := range topKOf(exact, K) {
		top[s] = true
	}
	hit, seen := 0, map[int]bool{}
	for _, s := range chosen {
		if s >= 0 && !seen[s] {
			seen[s] = true
			selected = selected || s == ns
			if top[s] {
				hit++
			}
		}
	}
	rank, exactRank = 1, 1
	for s := range lg {
		if lg[s] > lg[ns] {
			rank++
		}
		if exact[s] > exact[ns] {
			exactRank++
		}
	}
	return selected, rank, exactRank, float64(hit) / float64(max(min(K, len(exact)), 1))
}
