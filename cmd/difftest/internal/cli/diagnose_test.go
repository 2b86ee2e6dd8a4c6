package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunDiagnoseFlag: by default a failing case's table entry says what
// it behaves like and its JSON line lists the names; --diagnose=off says
// nothing; a bad value is a usage error.
func TestRunDiagnoseFlag(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, "r.jsonl")
	code, out, errs := run(t, "run", "--suite", small, "--impl", "mutant:topk-page-row0", "--run", "gaussian-k8", "--json", js)
	if code != 1 {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	line := "\n  behaves like topk-page-row0: translates every row through page_table row 0\n"
	if !strings.Contains(out, line) {
		t.Errorf("table has no %q:\n%s", line, out)
	}
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range strings.Split(string(data), "\n") {
		var rec struct {
			Type      string   `json:"type"`
			Diagnosis []string `json:"diagnosis"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Type == "case" {
			found = len(rec.Diagnosis) == 1 && rec.Diagnosis[0] == "topk-page-row0"
		}
	}
	if !found {
		t.Errorf("JSON Lines without diagnosis [topk-page-row0]:\n%s", data)
	}
	code, out, _ = run(t, "run", "--suite", small, "--impl", "mutant:topk-page-row0", "--run", "gaussian-k8", "--diagnose=off")
	if code != 1 || strings.Contains(out, "behaves like") {
		t.Errorf("--diagnose=off: exit %d, table:\n%s", code, out)
	}
	code, out, _ = run(t, "run", "--suite", small, "--impl", "mutant:topk-page-row0", "--run", "gaussian-k8", "--diagnose=30s")
	if code != 1 || !strings.Contains(out, line) {
		t.Errorf("--diagnose=30s: exit %d, table:\n%s", code, out)
	}
	if code, _, errs = run(t, "run", "--suite", small, "--impl", "reference", "--diagnose=soon"); code != 2 || !strings.Contains(errs, "want on, off or a positive duration") {
		t.Errorf("--diagnose=soon: exit %d, stderr %s", code, errs)
	}
}
