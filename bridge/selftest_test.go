package bridge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/kerneldiff/kerneldiff/kernels/normrope" // the suite names both kernels
)

// gpu-selftest over fault builds on the fake device: a build whose kernel
// is wrong is caught, one that is right is reported as not caught, race
// builds are left to racecheck, and a missing build means nothing could
// be tested.
func TestGPUSelftestCommand(t *testing.T) {
	t.Setenv(envWorker, "fake-by-fatbin") // workers are this test binary, serving a fake topk
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("kernels.fatbin", "real build")
	write("faults/TOPK_OFF_BY_ONE.fatbin", "TOPK_BUG")
	write("faults/TOPK_HARMLESS.fatbin", "a fault that changes nothing")
	write("faults/RACE_MISSING_BARRIER.fatbin", "not run")
	header := "# NAME\tmutant\tkernel\twhat\n"
	caught := "TOPK_OFF_BY_ONE\ttopk-page-row0\ttopk_transform\tfirst slot of each row off by one\n"
	race := "RACE_MISSING_BARRIER\t-\ttopk_transform\tmissing barrier\n"
	tests := []struct {
		name  string
		list  string
		code  int
		table []string
	}{
		{"every build caught", header + caught + race, 0, []string{"TOPK_OFF_BY_ONE", "yes", "mismatch"}},
		{"a build not caught", header + caught + "TOPK_HARMLESS\t-\ttopk_transform\tnothing\n", 1, []string{"TOPK_HARMLESS", "NO"}},
		{"a build missing", header + "TOPK_ABSENT\t-\ttopk_transform\tnever built\n", 125, nil},
		{"a malformed list", "TOPK_OFF_BY_ONE topk_transform\n", 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			write("faults.txt", tt.list)
			var stdout, stderr strings.Builder
			code := runGPUSelftest(context.Background(), []string{"--suite", "quick", "--fatbin", filepath.Join(dir, "kernels.fatbin"), "--parallel", "2"}, &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout.String(), stderr.String())
			}
			for _, w := range tt.table {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("table lacks %q:\n%s", w, stdout.String())
				}
			}
			if strings.Contains(stdout.String(), "RACE_") {
				t.Errorf("a race build ran:\n%s", stdout.String())
			}
			t.Logf("\n%s%s", stdout.String(), stderr.String())
		})
	}
}
