// `difftest study needle` (docs/pipeline.md): the command line of
// pipeline.RunStudy, its table, JSON and SVG.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/cli"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/kernels/pipeline"
)

func init() {
	cli.RegisterCommand(cli.Command{
		Name:    "study",
		Summary: "study needle: FP8 vs BF16 keys through the pipeline, needle and recall against the exact top-K",
		Usage:   "study needle [--impl IMPL] [--lengths LIST] [--margin LIST] [--seed N] [--json FILE] [--svg FILE]",
		Run:     runStudy,
	})
}

// listFlag parses a comma-separated list.
func listFlag[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := parse(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

// runStudy is `difftest study needle [flags]`. Exit 0 when every stage of
// every case passed its check, 1 when one failed (the table says which),
// 2 for bad usage, 125 when the implementation cannot run here.
func runStudy(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "needle" {
		fmt.Fprintln(stderr, "usage: difftest study needle [--impl IMPL] [--lengths LIST] [--margin LIST] [--keys LIST] [--seed N] [--json FILE] [--svg FILE]")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return difftest.ExitPass
		}
		return difftest.ExitUsage
	}
	fs := flag.NewFlagSet("difftest study needle", flag.ContinueOnError)
	fs.SetOutput(stderr)
	impl := fs.String("impl", "reference", "implementation: reference, mutant:NAME, exec:CMD, serve:CMD, cuda, emu")
	lengths := fs.String("lengths", joinInts(pipeline.DefaultStudyLengths), "comma-separated sequence lengths S")
	margins := fs.String("margin", pipeline.JoinFloats(pipeline.DefaultStudyMargins), "comma-separated needle margins (standard deviations above the K-th exact logit)")
	keysFlag := fs.String("keys", strings.Join(pipeline.DefaultStudyKeys, ","), "comma-separated key distributions: gaussian, outlier")
	outliers := fs.Int("outliers", pipeline.DefaultOutliers, "outlier channels per token (--keys outlier), in [1, 64]")
	outScale := fs.Float64("outlier-scale", pipeline.DefaultOutlierScale, "outlier magnitude in units of the other channels' N(0,1) (--keys outlier), in [1, 1000]")
	seed := fs.Uint64("seed", 1, "seed of the inputs")
	k := fs.Int("K", 512, "top-k (512: the seed story's selection)")
	heads := fs.Int("H", 16, "indexer heads")
	page := fs.Int("P", 64, "page size")
	fatbin := fs.String("fatbin", "build/kernels.fatbin", "fatbin for --impl cuda or emu")
	device := fs.Int("device", 0, "CUDA device")
	timeout := fs.Duration("timeout", 5*time.Minute, "time-out per run of one stage")
	jsonOut := fs.String("json", "", "write the rows as JSON to FILE")
	svgOut := fs.String("svg", "", "write the recall chart as SVG to FILE")
	if code, ok := parseNoArgs(fs, args[1:], "study needle", stderr); !ok {
		return code
	}
	ls, err := listFlag(*lengths, strconv.Atoi)
	if err == nil {
		for _, S := range ls {
			if S < 1 || S > pipeline.MaxSeqLen {
				err = fmt.Errorf("length %d outside [1, %d]", S, pipeline.MaxSeqLen)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "study needle: --lengths: %v\n", err)
		return difftest.ExitUsage
	}
	ms, err := listFlag(*margins, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
	if err != nil {
		fmt.Fprintf(stderr, "study needle: --margin: %v\n", err)
		return difftest.ExitUsage
	}
	ks, err := listFlag(*keysFlag, func(s string) (string, error) {
		if s != pipeline.KeysGaussian && s != pipeline.KeysOutlier {
			return "", fmt.Errorf("%q: must be %s or %s", s, pipeline.KeysGaussian, pipeline.KeysOutlier)
		}
		return s, nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "study needle: --keys: %v\n", err)
		return difftest.ExitUsage
	}
	if err := checkStudyFlags(studyFlags{K: *k, H: *heads, P: *page, Device: *device, Timeout: *timeout, Seed: *seed,
		Lengths: ls, Margins: ms, Keys: ks, Outliers: *outliers, OutlierScale: *outScale, JSON: *jsonOut, SVG: *svgOut, Fatbin: *fatbin}); err != nil {
		fmt.Fprintf(stderr, "study needle: %v\n", err)
		return difftest.ExitUsage
	}
	im, err := difftest.NewImpl(*impl, difftest.ImplOptions{Fatbin: *fatbin, Device: *device, Timeout: *timeout, Context: ctx})
	if err != nil {
		var re *difftest.RunError
		if errors.As(err, &re) && re.Class == difftest.Unavailable {
			fmt.Fprintf(stderr, "study needle: %s unavailable: %s\n", *impl, difftest.SafeLine(re.Msg))
			return difftest.ExitUntestable
		}
		fmt.Fprintf(stderr, "study needle: %v\n", err)
		return difftest.ExitUsage
	}
	defer im.Close()
	rows, err := pipeline.RunStudy(ctx, pipeline.StudyConfig{Impl: im, Lengths: ls, Margins: ms, Keys: ks, Outliers: *outliers, OutlierScale: *outScale, Seed: *seed, K: *k, H: *heads, P: *page, Timeout: *timeout})
	if err != nil {
		fmt.Fprintf(stderr, "study needle: %v\n", err)
		var pe *pipeline.StudyParamError
		if errors.As(err, &pe) {
			return difftest.ExitUsage
		}
		return difftest.ExitUntestable
	}
	if err := pipeline.WriteStudyTable(stdout, rows, im.Name(), *seed, *outliers, *outScale); err != nil {
		return difftest.ExitUntestable
	}
	write := func(path string, f func(io.Writer) error) bool {
		if path == "" {
			return true
		}
		out, err := os.Create(path)
		if err == nil {
			err = f(out)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "study needle: %v\n", err)
			return false
		}
		return true
	}
	if !write(*jsonOut, func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(rows)
	}) || !write(*svgOut, func(w io.Writer) error { return pipeline.WriteStudySVG(w, rows) }) {
		return difftest.ExitUntestable
	}
	for _, r := range rows {
		if r.FP8.Verdict != string(difftest.VerdictPass) || r.BF16.Verdict != string(difftest.VerdictPass) || r.FP4.Verdict != string(difftest.VerdictPass) {
			return difftest.ExitFail
		}
	}
	return difftest.ExitPass
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
