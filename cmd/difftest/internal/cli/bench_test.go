package cli

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/bench"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// timedRef runs the reference and reports a kernel time of base + 1 ns ×
// (run count mod 7), as a serve program reporting kernel_time_ns would.
type timedRef struct {
	base time.Duration
	mu   sync.Mutex
	n    int
}

func (t *timedRef) Name() string { return "test-timed" }
func (t *timedRef) Close() error { return nil }
func (t *timedRef) Run(ctx context.Context, k difftest.Kernel, c *difftest.Case, outs []*difftest.Buffer) (difftest.RunInfo, error) {
	t.mu.Lock()
	t.n++
	d := t.base + time.Duration(t.n%7)
	t.mu.Unlock()
	_, err := difftest.ReferenceImpl{}.Run(ctx, k, c, outs)
	return difftest.RunInfo{KernelTime: d}, err
}

func init() {
	difftest.RegisterImpl("test-timed", func(difftest.ImplOptions) (difftest.Impl, error) { return &timedRef{base: 10 * time.Microsecond}, nil })
	difftest.RegisterImpl("test-timed-slow", func(difftest.ImplOptions) (difftest.Impl, error) { return &timedRef{base: 12 * time.Microsecond}, nil })
}

func TestBenchCommandAB(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench.json")
	code, stdout, stderr := run(t, "bench", "--impl", "test-timed", "--baseline", "test-timed-slow", "--suite", small, "--runs", "8", "--warmup", "1", "--json", out)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.BenchReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Type != "bench" || rep.Impl != "test-timed" || rep.Baseline != "test-timed-slow" || len(rep.Results) != 3 || rep.Method.Timer != "impl-reported" || rep.Method.Runs != 8 {
		t.Fatalf("report %+v", rep)
	}
	for _, r := range rep.Results {
		c := r.Comparison
		// 10 µs + 0…6 ns against 12 µs + 0…6 ns: ratio of the medians ≈ 0.8333, every pair apart.
		if c == nil || math.Abs(c.Ratio-10.0/12) > 1e-3 || !c.Significant || c.P > 1e-3 || c.NBase != 8 || c.NNew != 8 {
			t.Errorf("%s: comparison %+v", r.Case, c)
		}
		if r.Builds[0].Stats.N != 8 || len(r.Builds[0].TimesNS) != 8 {
			t.Errorf("%s: %+v", r.Case, r.Builds[0])
		}
	}
	texttest.Contains(t, "table", stdout, "baseline test-timed-slow", "times the implementation reports (L2 not controlled)", "-16.7%", "geomean", "3 cases timed, 0 failed")
}

func TestBenchCommandExits(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"a slowdown past --max-slowdown", []string{"--impl", "test-timed-slow", "--baseline", "test-timed", "--max-slowdown", "10%"}, 1,
			"slower than the baseline by more than --max-slowdown 10%: topk_transform/gaussian-k8 (1.200×)"},
		{"a slowdown within --max-slowdown", []string{"--impl", "test-timed-slow", "--baseline", "test-timed", "--max-slowdown", "1.25"}, 0, ""},
		{"a slowdown without --max-slowdown is reported, not failed", []string{"--impl", "test-timed-slow", "--baseline", "test-timed"}, 0, ""},
		{"no kernel time to read", []string{"--impl", "reference"}, 125, "reference reports no kernel time"},
		{"one run", []string{"--impl", "test-timed", "--runs", "1"}, 2, "want runs ≥ 2"},
		{"--max-slowdown without a baseline", []string{"--impl", "test-timed", "--max-slowdown", "1.1"}, 2, "--max-slowdown needs --baseline"},
		{"--max-slowdown below 1", []string{"--impl", "test-timed", "--baseline", "test-timed", "--max-slowdown", "0.9"}, 2, "want a ratio above 1"},
		{"an unknown --cold", []string{"--impl", "test-timed", "--cold", "warm"}, 2, `--cold "warm": want flush or rotate`},
		{"a fatbin baseline for an implementation without one", []string{"--impl", "test-timed", "--baseline", "old.fatbin"}, 2, "a fatbin baseline needs --impl cuda or emu"},
		{"no case selected", []string{"--impl", "test-timed", "--run", "nothing"}, 2, "no case of suite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bench", "--suite", small, "--runs", "6", "--warmup", "0"}, tc.args...)
			code, stdout, stderr := run(t, args...)
			if code != tc.code || !strings.Contains(stderr, tc.msg) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)\n%s", code, tc.code, stderr, tc.msg, stdout)
			}
		})
	}
}

func TestParseSlowdown(t *testing.T) {
	for in, want := range map[string]float64{"1.10": 1.10, "10%": 1.10, "2": 2, "0.5%": 1.005} {
		if got, err := parseSlowdown(in); err != nil || math.Abs(got-want) > 1e-12 {
			t.Errorf("parseSlowdown(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"1", "0.9", "-5%", "x", "%"} {
		if _, err := parseSlowdown(in); err == nil {
			t.Errorf("parseSlowdown(%q) accepted", in)
		}
	}
}
