package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest/report"
)

// `difftest merge` writes only a whole split, only to -o, never over an
// input.
func TestMergeCommand(t *testing.T) {
	dir := t.TempDir()
	shard := func(sh string) string {
		out := filepath.Join(dir, "s"+strings.ReplaceAll(sh, "/", "of")+".jsonl")
		if code, stdout, stderr := run(t, "run", "--impl", "reference", "--suite", small, "--repeat", "2", "--shard", sh, "--json", out); code != 0 {
			t.Fatalf("shard %s: exit %d\n%s%s", sh, code, stdout, stderr)
		}
		return out
	}
	s0, s1, s2 := shard("0/3"), shard("1/3"), shard("2/3")
	h0 := shard("0/2")
	out := filepath.Join(dir, "all.jsonl")
	s0Bytes, err := os.ReadFile(s0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // exact
	}{
		{"2 of 3 shards", []string{"-o", out, s0, s1}, 2, "difftest: merge: shard 2/3 missing\n"},
		{"a single shard", []string{"-o", out, s1}, 2, "difftest: merge: shards 0/3, 2/3 missing\n"},
		{"/3 and /2 shards mixed", []string{"-o", out, s0, s1, h0}, 2,
			fmt.Sprintf("difftest: merge: reports mix /3 and /2 shards: %s is shard 0/3, %s is shard 0/2\n", s0, h0)},
		{"a shard twice", []string{"-o", out, s0, s1, s2, s1}, 2, fmt.Sprintf("difftest: merge: shard 1/3 appears twice: %s and %s\n", s1, s1)},
		{"output name forgotten", []string{s0, s1, s2}, 2,
			"difftest: merge: no output: give -o OUT.jsonl (difftest merge -o OUT.jsonl [--junit FILE] SHARD.jsonl...)\n"},
		{"the old positional form", []string{out, s0, s1, s2}, 2,
			"difftest: merge: no output: give -o OUT.jsonl (difftest merge -o OUT.jsonl [--junit FILE] SHARD.jsonl...)\n"},
		{"output is an input", []string{"-o", s0, s0, s1, s2}, 2,
			fmt.Sprintf("difftest: merge: output %s is also an input; it would overwrite that shard's report\n", s0)},
		{"output is an input by another path", []string{s0, s1, s2, "-o", filepath.Join(dir, ".", filepath.Base(s0))}, 2,
			fmt.Sprintf("difftest: merge: output %s is also an input; it would overwrite that shard's report\n", filepath.Join(dir, filepath.Base(s0)))},
		{"junit is an input", []string{"-o", out, "--junit", s2, s0, s1, s2}, 2,
			fmt.Sprintf("difftest: merge: output %s is also an input; it would overwrite that shard's report\n", s2)},
		{"no inputs", []string{"-o", out}, 2,
			"difftest: merge: no shard reports given (difftest merge -o OUT.jsonl [--junit FILE] SHARD.jsonl...)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, append([]string{"merge"}, tt.args...)...)
			if code != tt.code || stderr != tt.stderr || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr\n%q\nwant exit %d, stderr\n%q", code, stdout, stderr, tt.code, tt.stderr)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s written by a merge that failed (%v)", out, err)
			}
			if b, err := os.ReadFile(s0); err != nil || !bytes.Equal(b, s0Bytes) {
				t.Fatalf("shard 0/3's report changed (%v)", err)
			}
		})
	}

	code, stdout, stderr := run(t, "merge", s2, s0, "-o", out, s1)
	if code != 0 || stdout[:len("6 passed, 0 failed in ")] != "6 passed, 0 failed in " {
		t.Fatalf("whole split: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	rep, err := report.ReadJSONLFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Header.Shard != "" || rep.Header.MergedShards != 3 || len(rep.Records) != 6 || rep.Summary == nil || rep.Summary.Passed != 6 {
		t.Errorf("merged report: header %+v, %d records, summary %+v", rep.Header, len(rep.Records), rep.Summary)
	}
	for i, r := range rep.Records {
		if r.Index != i {
			t.Errorf("record %d has index %d", i, r.Index)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}
