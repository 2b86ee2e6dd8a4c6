package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/kerneldiff/kerneldiff/kernels/normrope"
)

// A suite whose last case has bad parameters exits 2 before its first
// case runs, whatever --run and --shard select, and `list cases` says so
// too: a typo is found in seconds, not after a whole GPU nightly.
func TestSuiteParamsCheckedBeforeAnyCase(t *testing.T) {
	const (
		badK = "testdata/bad-last-k.toml" // topk_transform: checked without drawing (SpecChecker)
		badN = "testdata/bad-last-n.toml" // norm_rope_store
	)
	errK := "difftest: suite " + badK + ": case topk_transform/k-zero: param \"K\": required, must be ≥ 1, got 0\n"
	// norm_rope_store words its own rule; the line must name the suite,
	// the case and the value.
	errN := "difftest: suite " + badN + ": case norm_rope_store/v4-n0: "
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"run", []string{"run", "--impl", "reference", "--suite", badK}, errK},
		{"run, only good cases selected", []string{"run", "--impl", "reference", "--suite", badK, "--run", "gaussian"}, errK},
		{"run, a shard without the bad case", []string{"run", "--impl", "reference", "--suite", badK, "--shard", "0/2"}, errK},
		{"run, a norm_rope_store case", []string{"run", "--impl", "reference", "--suite", badN}, errN},
		{"list cases", []string{"list", "cases", "--suite", badK}, errK},
		{"list cases, a norm_rope_store case", []string{"list", "cases", "--suite", badN}, errN},
		{"selftest", []string{"selftest", "--suite", badK}, errK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "report.jsonl")
			args := tt.args
			if args[0] == "run" {
				args = append(args, "--json", report)
			}
			code, stdout, stderr := run(t, args...)
			exact := stderr == tt.stderr
			if tt.stderr == errN {
				exact = strings.HasPrefix(stderr, errN) && strings.HasSuffix(stderr, "got 0\n") && strings.Count(stderr, "\n") == 1
			}
			if code != 2 || stdout != "" || !exact {
				t.Errorf("exit %d, stdout %q, stderr\n%q\nwant exit 2, no output, stderr\n%q", code, stdout, stderr, tt.stderr)
			}
			if _, err := os.Stat(report); !os.IsNotExist(err) {
				t.Errorf("a report was started (%v): cases ran before the suite was checked", err)
			}
		})
	}
}
