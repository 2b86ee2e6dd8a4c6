// The pipeline's stages (difftest.Chain) and its end-to-end metrics.

package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/kernels/logits"
	"github.com/kerneldiff/kerneldiff/kernels/normrope"
	"github.com/kerneldiff/kerneldiff/kernels/topk"
)

// stageID names stage i of case c: "CASE@KERNEL".
func stageID(c *difftest.Case, i int) string { return c.ID + "@" + stageKernels[i] }

// pick returns the named inputs of c, renamed as the stage takes them.
func pick(c *difftest.Case, names ...string) map[string]*difftest.Tensor {
	m := map[string]*difftest.Tensor{}
	for _, n := range names {
		if t := c.Input(n); t != nil {
			m[n] = t
		}
	}
	return m
}

// stage1 returns the norm_rope_store case of c: its six inputs, the
// preset's configuration with the case's page size and pages.
func stage1(c *difftest.Case) (*difftest.Case, error) {
	p, err := paramsOf(c)
	if err != nil {
		return nil, err
	}
	return stage1As(c, p.Preset, stageID(c, 0))
}

// stage1As returns the norm_rope_store case, named id, of preset on the
// six stage-1 inputs of c, with c's page size and pages.
func stage1As(c *difftest.Case, preset, id string) (*difftest.Case, error) {
	p, err := paramsOf(c)
	if err != nil {
		return nil, err
	}
	np, err := normrope.Preset(preset, p.PageSize)
	if err != nil {
		return nil, err
	}
	np.NumPages = p.NumPages
	raw, _ := json.Marshal(np)
	s, err := normrope.FromTensors(id, raw, pick(c, normrope.InputNames()...))
	return asStage(c, s, err)
}

// asStage returns s, a stage of the pipeline case c that a stage
// kernel's FromTensors built (with its error err), as a stage of c: the
// family "pipeline" and c's seed and key.
func asStage(c, s *difftest.Case, err error) (*difftest.Case, error) {
	if err != nil {
		return nil, err
	}
	s.Family, s.Seed, s.Key = "pipeline", c.Seed, c.Key
	return s, nil
}

// exactKeys returns the f64 keys of c's tokens before any store, in the
// space its queries are drawn in (Params.KeyPreset): stage 1's exact
// keys, or for v4-fp4 those of v4 (the same keys under the Hadamard
// transform).
func exactKeys(c *difftest.Case) ([][normrope.Dim]float64, error) {
	p, err := paramsOf(c)
	if err != nil {
		return nil, err
	}
	s1, err := stage1As(c, p.KeyPreset(), stageID(c, 0))
	if err != nil {
		return nil, err
	}
	return normrope.ExactKeys(s1)
}

// stage2 returns the indexer_logits case of c on the cache stage 1 wrote.
func stage2(c *difftest.Case, cache *difftest.Tensor) (*difftest.Case, error) {
	p, err := paramsOf(c)
	if err != nil {
		return nil, err
	}
	lp := logits.Params{Store: p.Store(), PageSize: p.PageSize, Heads: p.Heads, Clean: true, AccumBits: logits.DefaultAccumBits,
		Batch: p.Batch, Stride: p.Stride, MaxPages: p.MaxPages, NumPages: p.NumPages, Family: "pipeline"}
	raw, _ := json.Marshal(lp)
	ts := pick(c, logits.NameQ, logits.NameWeights, logits.NameSeqLens, logits.NamePageTable)
	ts[logits.NameCache] = cache
	s, err := logits.FromTensors(stageID(c, 1), raw, ts)
	return asStage(c, s, err)
}

// stage3 returns the topk_transform case of c on the logits stage 2 gave.
func stage3(c *difftest.Case, scores *difftest.Tensor) (*difftest.Case, error) {
	p, err := paramsOf(c)
	if err != nil {
		return nil, err
	}
	tp := topk.Params{K: p.K, P: p.PageSize, ReturnRaw: true, Batch: p.Batch, Stride: p.Stride, MaxPages: p.MaxPages,
		Family: "pipeline", Pages: "distinct", Needles: p.Needles}
	raw, _ := json.Marshal(tp)
	ts := pick(c, topk.TensorSeqLens, topk.TensorPageTable)
	s := scores.Clone()
	s.Name = topk.TensorScores
	ts[topk.TensorScores] = s
	st, err := topk.FromTensors(stageID(c, 2), raw, ts)
	return asStage(c, st, err)
}

// StageKernels returns the kernels of the three stages in order
// (difftest.ChainStages): a serve program that offers none of them is not
// sent the case, nor are its inputs drawn.
func (Kernel) StageKernels() []string { return append([]string(nil), stageKernels[:]...) }

// RunChain runs the three stages on the implementation under test
// (difftest.Chain): stage 1 on the case's tokens; stage 2 on the cache the
// implementation wrote; stage 3 on the logits it gave. The first stage
// that fails ends the case with its class and the message "stage N
// KERNEL: …", and the metrics failed_stage (N) and failed_stage_metric
// (that stage's key metric). Metrics: every stage's own, prefixed
// "stageN_" (N = 1, 2, 3), and when all three ran the end-to-end ones of
// e2e.
func (Kernel) RunChain(ctx context.Context, c *difftest.Case, run difftest.StageFunc) (difftest.Result, error) {
	res := difftest.Result{Metrics: map[string]any{}}
	var onRef []string
	var prev []*difftest.Tensor
	var outs [3][]*difftest.Tensor
	for i := range stageKernels {
		var s *difftest.Case
		var err error
		switch i {
		case 0:
			s, err = stage1(c)
		case 1:
			s, err = stage2(c, prev[0])
		case 2:
			s, err = stage3(c, prev[0])
		}
		if err != nil {
			res.Class, res.Message = difftest.InvalidCase, fmt.Sprintf("stage %d %s: %v", i+1, stageKernels[i], err)
			return res, nil
		}
		sr, err := run(ctx, s)
		if err != nil {
			return res, err
		}
		got, rec := sr.Got, sr.Rec
		for k, v := range rec.Metrics {
			res.Metrics[fmt.Sprintf("stage%d_%s", i+1, k)] = v
		}
		for _, w := range rec.Warnings {
			res.Warnings = append(res.Warnings, fmt.Sprintf("stage %d %s: %s", i+1, stageKernels[i], w))
		}
		if sr.OnReference {
			onRef = append(onRef, stageKernels[i])
		}
		if rec.Failed() {
			res.Class, res.Worst = rec.Class, rec.Worst
			res.Message = fmt.Sprintf("stage %d %s: %s: %s", i+1, stageKernels[i], rec.Class, rec.Message)
			res.Metrics["failed_stage"] = i + 1
			if k, ok := difftest.LookupKernel(stageKernels[i]); ok {
				res.Metrics["failed_stage_metric"] = difftest.KeyMetric(k, rec)
			}
			return res, nil
		}
		if got == nil {
			return res, fmt.Errorf("stage %d %s passed without outputs", i+1, stageKernels[i])
		}
		outs[i], prev = got, got
	}
	if len(onRef) > 0 {
		res.Metrics["stages_on_reference"] = strings.Join(onRef, ",")
	}
	if err := e2e(c, outs[1][0], outs[2], res.Metrics); err != nil {
		return res, err
	}
	return res, nil
}

// e2e adds the end-to-end metrics against the exact pipeline (f64 keys
// from norm_rope_store's reference before the store, exactKeys, q_exact
// and weights_exact, no quantisation):
//
//	recall, recall_mean   the smallest and the mean over rows of
//	                      |chosen ∩ exact top-K| / min(K, L_b)
//	needles               rows with a planted needle
//	needles_selected      of them, the rows whose needle stage 3 chose
//	needle_rank           the worst rank of a needle in stage 2's logits
//	                      (1 + the positions scoring above it, key32 order)
//	needle_exact_rank     the worst rank of a needle among the exact logits
//	needle_margin         the smallest margin a needle was planted with (σ)
func e2e(c *difftest.Case, lg *difftest.Tensor, sel []*difftest.Tensor, m map[string]any) error {
	p, _ := paramsOf(c)
	z, err := exactKeys(c)
	if err != nil {
		return err
	}
	exact := exactLogits(c, z)
	raw := sel[1]
	recallMin, recallSum := 1.0, 0.0
	selected, worstRank, worstExact := 0, 0, 0
	for b := 0; b < p.Batch; b++ {
		L := len(exact[b])
		k := min(p.K, L)
		order := make([]int, L)
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(i, j int) bool { return exact[b][order[i]] > exact[b][order[j]] })
		top := map[int]bool{}
		for _, s := range order[:k] {
			top[s] = true
		}
		chosen := map[int]bool{}
		hit := 0
		for j := 0; j < p.K; j++ {
			s := int(raw.I32(b*p.K + j))
			if s >= 0 && !chosen[s] {
				chosen[s] = true
				if top[s] {
					hit++
				}
			}
		}
		r := float64(hit) / float64(max(k, 1))
		recallMin = math.Min(recallMin, r)
		recallSum += r
		if len(p.Needles) == p.Batch && p.Needles[b] >= 0 {
			ns := p.Needles[b]
			if chosen[ns] {
				selected++
			}
			key := numeric.Key32(lg.U32(b*p.Stride + ns))
			rank, exactRank := 1, 1
			for s := 0; s < L; s++ {
				if numeric.Key32(lg.U32(b*p.Stride+s)) > key {
					rank++
				}
				if exact[b][s] > exact[b][ns] {
					exactRank++
				}
			}
			worstRank, worstExact = max(worstRank, rank), max(worstExact, exactRank)
		}
	}
	m["recall"] = recallMin
	m["recall_mean"] = recallSum / float64(p.Batch)
	if len(p.Needles) == p.Batch {
		m["needles"] = p.Batch
		m["needles_selected"] = selected
		m["needle_rank"] = worstRank
		m["needle_exact_rank"] = worstExact
		minMargin := math.Inf(1)
		for _, v := range p.Margins {
			minMargin = math.Min(minMargin, v)
		}
		m["needle_margin"] = minMargin
	}
	return nil
}
