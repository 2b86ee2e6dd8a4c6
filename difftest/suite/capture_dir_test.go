// Captures of live calls (no case, seed, got or want: what the Python
// package's capture and record write) replay, and a folder of them runs
// as a suite.

package suite_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/internal/texttest"

	_ "github.com/kerneldiff/kerneldiff/kernels/logits"   // registers indexer_logits
	_ "github.com/kerneldiff/kerneldiff/kernels/normrope" // registers norm_rope_store
	_ "github.com/kerneldiff/kerneldiff/kernels/pipeline" // registers pipeline
	_ "github.com/kerneldiff/kerneldiff/kernels/topk"     // registers topk_transform
)

// liveTopk writes a top-k capture as a live call would: scores of B rows
// of length L (value i·7 mod 97 + b), an identity page table of P = 4, and
// only kernel and params in the metadata. edit may break it.
func liveTopk(t *testing.T, path string, edit func(seqLens, table *difftest.Tensor)) {
	t.Helper()
	const B, L, P, K = 2, 600, 4, 512
	scores := difftest.MustTensor("scores", difftest.F32, B, L)
	seq := difftest.MustTensor("seq_lens", difftest.I32, B)
	table := difftest.MustTensor("page_table", difftest.I32, B, L/P)
	for b := 0; b < B; b++ {
		seq.SetI32(b, int32(L-b))
		for i := 0; i < L; i++ {
			scores.SetF32(b*L+i, float32((i*7)%97+b))
		}
		for p := 0; p < L/P; p++ {
			table.SetI32(b*(L/P)+p, int32(b*(L/P)+p))
		}
	}
	if edit != nil {
		edit(seq, table)
	}
	err := difftest.WriteSafetensors(path, []*difftest.Tensor{scores, seq, table},
		map[string]string{difftest.MetaKernel: "topk_transform", difftest.MetaParams: `{"K":512,"P":4,"return_raw":false}`})
	if err != nil {
		t.Fatal(err)
	}
}

func TestLiveCaptureReplays(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "decode step 7.safetensors")
	liveTopk(t, path, nil)
	c, extra, err := difftest.ReadCapture(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != "topk_transform/decode_step_7" || len(extra) != 0 || c.Seed != 0 {
		t.Fatalf("case %q, seed %d, %d extras", c.ID, c.Seed, len(extra))
	}
	for _, tc := range []struct {
		name string
		edit func(seq, table *difftest.Tensor)
		want []string
	}{
		{"negative seq_len", func(seq, _ *difftest.Tensor) { seq.SetI32(1, -3) }, []string{"seq_lens", "[1]", "-3"}},
		{"seq_len past the row stride", func(seq, _ *difftest.Tensor) { seq.SetI32(0, 601) }, []string{"seq_lens", "[0]", "601"}},
		{"negative page id", func(_, table *difftest.Tensor) { table.SetI32(3, -5) }, []string{"page_table[0][3]", "page id must be ≥ 0", "-5"}},
	} {
		bad := filepath.Join(t.TempDir(), "bad.safetensors")
		liveTopk(t, bad, tc.edit)
		_, _, err := difftest.ReadCapture(bad)
		if !errors.Is(err, difftest.ErrInvalidInput) {
			t.Errorf("%s: %v, want an input error", tc.name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, err, w)
			}
		}
	}
}

// A folder of captures is a suite: each runs against the reference and
// passes, a mutant fails them, and a bad file stops the load.
func TestCaptureDirSuite(t *testing.T) {
	dir := t.TempDir()
	liveTopk(t, filepath.Join(dir, "a.safetensors"), nil)
	liveTopk(t, filepath.Join(dir, "b.safetensors"), func(seq, _ *difftest.Tensor) { seq.SetI32(0, 17) })
	texttest.WriteFile(t, filepath.Join(dir, "notes.txt"), "ignored", 0o644)
	s, err := suite.LoadCaptureDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cases) != 2 || s.Cases[0].Spec.ID() != "topk_transform/a" || s.Cases[1].Spec.ID() != "topk_transform/b" {
		t.Fatalf("cases %+v", s.Cases)
	}
	for _, tc := range []struct {
		impl           string
		passed, failed int
	}{{"reference", 2, 0}, {"mutant:topk-page-row0", 0, 2}} {
		impl, err := difftest.NewImpl(tc.impl, difftest.ImplOptions{})
		if err != nil {
			t.Fatal(err)
		}
		items, err := s.Select(difftest.Selection{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		sum, err := difftest.Run(context.Background(), difftest.Config{Suite: dir, Source: items, Impl: impl, ImplName: tc.impl,
			OnRecord: func(r *difftest.Record) error { ids = append(ids, r.Case); return nil }})
		if err != nil || sum.Passed != tc.passed || sum.Failed != tc.failed {
			t.Errorf("%s: %v %+v", tc.impl, err, sum)
		}
		if strings.Join(ids, " ") != "topk_transform/a topk_transform/b" {
			t.Errorf("%s: records %v", tc.impl, ids)
		}
	}
	liveTopk(t, filepath.Join(dir, "c.safetensors"), func(seq, _ *difftest.Tensor) { seq.SetI32(1, -1) })
	if _, err := suite.LoadCaptureDir(dir); err == nil || !strings.Contains(err.Error(), "c.safetensors") {
		t.Errorf("a bad capture in the folder: %v", err)
	}
	if _, err := suite.LoadCaptureDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no capture file") {
		t.Errorf("empty folder: %v", err)
	}
}
