package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/internal/boundtest"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// shardFiles runs the small suite with --repeat 2 as a 2-way split and
// returns the two JSON Lines reports (3 cases per seed: indices 0, 2, 4
// in shard 0/2 and 1, 3, 5 in shard 1/2).
func shardFiles(t *testing.T, dir string) (s0, s1 string) {
	t.Helper()
	var out [2]string
	for i := range out {
		out[i] = filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i))
		if code, stdout, stderr := run(t, "run", "--impl", "reference", "--suite", small, "--repeat", "2", "--shard", fmt.Sprintf("%d/2", i), "--json", out[i]); code != 0 {
			t.Fatalf("shard %d/2: exit %d\n%s%s", i, code, stdout, stderr)
		}
	}
	return out[0], out[1]
}

// rewrite applies f to the lines of a report file.
func rewrite(t *testing.T, path string, f func(lines []string) []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := f(strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"))
	texttest.WriteFile(t, path, strings.Join(lines, "\n")+"\n", 0o644)
}

// TestMergeRefusesLostCases: the inputs, on real shard reports. A
// shard with one case line deleted merged with exit 0 ("passed 18" of
// 19), and a record with index 10^12 was taken as it was. Both exit 2
// naming the file and the index, and write nothing.
func TestMergeRefusesLostCases(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(lines []string) []string // applied to shard 1/2's file: header, 3 case lines, summary
		stderr string                        // %[1]s is shard 1/2's file
	}{
		{"a case line deleted", func(l []string) []string { return append(l[:2:2], l[3:]...) },
			"difftest: merge: %[1]s (shard 1/2) lacks index 3 (topk_transform/gaussian-k8 seed 2): the shard finished (its summary counts 3 cases, the file holds 2 case lines)\n"},
		{"index 10^12", func(l []string) []string {
			l[2] = strings.Replace(l[2], `"index":3,`, `"index":1000000000000,`, 1)
			return l
		}, "difftest: merge: %[1]s (shard 1/2): index 1000000000000 (topk_transform/gaussian-k8 seed 2) is outside the run's 6 cases (3 per seed × 2 seeds)\n"},
		{"the summary line deleted and a case line too", func(l []string) []string { return []string{l[0], l[1], l[3]} },
			"difftest: merge: %[1]s (shard 1/2) lacks index 3 (topk_transform/gaussian-k8 seed 2), which comes before its last case line (index 5)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s0, s1 := shardFiles(t, dir)
			rewrite(t, s1, tt.edit)
			out := filepath.Join(dir, "all.jsonl")
			code, stdout, stderr := run(t, "merge", "-o", out, s0, s1)
			if want := fmt.Sprintf(tt.stderr, s1); code != 2 || stdout != "" || stderr != want {
				t.Errorf("exit %d, stdout %q, stderr\n%q\nwant exit 2, stderr\n%q", code, stdout, stderr, want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s written by a merge that failed (%v)", out, err)
			}
		})
	}
}

// TestMergeOutputsAndInputsByType: a folder given where merge writes a
// file exits 2 as run does, before any input is read; /dev/zero, a FIFO
// and a file with an endless line are refused with a message naming the
// file, not "bufio.Scanner: token too long", and quickly.
func TestMergeOutputsAndInputsByType(t *testing.T) {
	dir := t.TempDir()
	s0, s1 := shardFiles(t, dir)
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := boundtest.FIFO(t, filepath.Join(dir, "fifo.jsonl"))
	long := filepath.Join(dir, "zeros.jsonl")
	if err := os.WriteFile(long, bytes.Repeat([]byte{0}, 9<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "all.jsonl")
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"-o a folder", []string{"-o", sub, s0, s1}, fmt.Sprintf("difftest: merge: -o %s: is a folder, not a file\n", sub)},
		{"--junit a folder", []string{"-o", out, "--junit", sub, s0, s1}, fmt.Sprintf("difftest: merge: --junit %s: is a folder, not a file\n", sub)},
		{"-o a device", []string{"-o", "/dev/null", s0, s1}, "difftest: merge: -o /dev/null: is a character device, not a file\n"},
		{"-o in no folder", []string{"-o", filepath.Join(dir, "none", "all.jsonl"), s0, s1},
			fmt.Sprintf("difftest: merge: -o %s: folder %s does not exist\n", filepath.Join(dir, "none", "all.jsonl"), filepath.Join(dir, "none"))},
		{"-o in a folder that takes no file", []string{"-o", "/proc/all.jsonl", s0, s1},
			"difftest: merge: -o /proc/all.jsonl: cannot write in folder /proc: "}, // then the errno's text, which varies
		{"/dev/zero", []string{"-o", out, "/dev/zero"},
			"difftest: merge: /dev/zero is a character device, not a regular file: a report is the file difftest run --json writes\n"},
		{"a FIFO", []string{"-o", out, s0, fifo},
			fmt.Sprintf("difftest: merge: %s is a FIFO, not a regular file: a report is the file difftest run --json writes\n", fifo)},
		{"a folder as input", []string{"-o", out, sub},
			fmt.Sprintf("difftest: merge: %s is a folder, not a regular file: a report is the file difftest run --json writes\n", sub)},
		{"an endless line", []string{"-o", out, long},
			fmt.Sprintf("difftest: merge: %s:1: line longer than 8 MiB, the limit of a report line: not a JSON Lines report written by difftest\n", long)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			code, stdout, stderr := run(t, append([]string{"merge"}, tt.args...)...)
			if code != 2 || stdout != "" || (stderr != tt.stderr && !(strings.HasSuffix(tt.stderr, ": ") && strings.HasPrefix(stderr, tt.stderr))) {
				t.Errorf("exit %d, stdout %q, stderr\n%q\nwant exit 2, stderr\n%q", code, stdout, stderr, tt.stderr)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s written by a merge that failed (%v)", out, err)
			}
		})
	}
}
