package cli

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/report"
)

// slowStart is how long the test-slow-start implementation takes to open,
// as a serve program importing torch takes before its hello.
const slowStart = 300 * time.Millisecond

func init() {
	difftest.RegisterImpl("test-slow-start", func(difftest.ImplOptions) (difftest.Impl, error) {
		time.Sleep(slowStart)
		return difftest.ReferenceImpl{}, nil
	})
}

// The summary's time includes the implementation's start-up (a serve
// program's, until its hello), not only the cases'.
func TestSummaryTimeIncludesStartUp(t *testing.T) {
	for _, cmd := range [][]string{{"run", "--suite", small, "--run", "gaussian-k8"}, {"replay"}} {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		args := append([]string{}, cmd...)
		if cmd[0] == "replay" {
			dir := t.TempDir()
			if code, _, stderr := run(t, "run", "--impl", "mutant:topk-page-row0", "--suite", small, "--run", "gaussian-k8", "--save-failures", dir); code != difftest.ExitFail {
				t.Fatalf("saving a failure: exit %d: %s", code, stderr)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
			if len(files) != 1 {
				t.Fatalf("captures %v", files)
			}
			args = append(args, files[0])
		}
		args = append(args, "--impl", "test-slow-start", "--json", out)
		if code, _, stderr := run(t, args...); code != difftest.ExitPass {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		rep, err := report.ReadJSONLFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Summary == nil || rep.Summary.Elapsed < slowStart {
			t.Errorf("%s: summary %+v, want an elapsed time of at least the %v start-up", cmd[0], rep.Summary, slowStart)
		}
	}
}
