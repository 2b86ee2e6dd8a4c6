package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/kernels/pipeline"
)

// `difftest study needle` on the reference: a table per margin with both
// stores, valid stages, the JSON rows and the SVG chart.
func TestStudyNeedle(t *testing.T) {
	dir := t.TempDir()
	js, svg := filepath.Join(dir, "s.json"), filepath.Join(dir, "s.svg")
	var out, errb bytes.Buffer
	code := runStudy(context.Background(), []string{"needle", "--lengths", "700,2000", "--margin", "0.5,2", "--H", "4", "--json", js, "--svg", svg}, &out, &errb)
	if code != difftest.ExitPass {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"needle study: impl reference, seed 1, K=512, H=4", "margin 0.5σ above the K-th exact logit", "margin 2σ above",
		"FP8 sel", "BF16 sel", "Jaccard (noise)", "   700     233"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	raw, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rows []pipeline.StudyRow
	if err := json.Unmarshal(raw, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 2 lengths × 2 margins", len(rows))
	}
	for _, r := range rows {
		if r.FP8.Verdict != "pass" || r.BF16.Verdict != "pass" || r.FP8.Recall <= 0.5 || r.BF16.Recall <= 0.5 || r.Needle != r.S/3 {
			t.Errorf("row %+v", r)
		}
		// Two random top-512 selections of S overlap by about K/(2S − K).
		if want := 512 / float64(2*r.S-512); r.Jaccard < want/2 || r.Jaccard > min(1, 2*want) {
			t.Errorf("S=%d: noise Jaccard %g, expected near %g", r.S, r.Jaccard, want)
		}
	}
	if b, err := os.ReadFile(svg); err != nil || !bytes.HasPrefix(b, []byte("<svg ")) || !bytes.Contains(b, []byte("BF16, margin 2σ")) {
		t.Errorf("svg: %v\n%.200s", err, b)
	}
}

func TestStudyUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"haystack"}, {"needle", "--lengths", "0"}, {"needle", "--margin", "x"}, {"needle", "extra"}, {"needle", "--impl", "nope"}} {
		var out, errb bytes.Buffer
		if code := runStudy(context.Background(), args, &out, &errb); code != difftest.ExitUsage {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}
