package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/boundtest"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// copyFile copies src to a new file in dir and returns its path.
func copyFile(t *testing.T, src, dir string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, filepath.Base(src))
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// Output paths that are inputs, FIFOs or device nodes are usage errors
// before anything runs, and the file they name is left as it was.
func TestOutputsNeverReplaceInputsOrSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	suite := copyFile(t, small, dir)
	suiteBytes, _ := os.ReadFile(suite)
	fifo := boundtest.FIFO(t, filepath.Join(dir, "fifo"))
	fatbin := texttest.WriteFile(t, filepath.Join(dir, "k.fatbin"), "fatbin", 0o644)
	capDir := filepath.Join(dir, "caps")
	if code, _, stderr := run(t, "run", "--impl", "mutant:topk-tie-hole", "--suite", suite, "--save-failures", capDir); code != 1 {
		t.Fatalf("making a capture: exit %d: %s", code, stderr)
	}
	caps, _ := filepath.Glob(filepath.Join(capDir, "*.safetensors"))
	if len(caps) == 0 {
		t.Fatal("no capture saved")
	}
	capBytes, _ := os.ReadFile(caps[0])
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--impl", "reference", "--suite", suite, "--json", suite}, "--json " + suite + ": is the input file of --suite"},
		{[]string{"run", "--impl", "reference", "--suite", suite, "--junit", suite}, "--junit " + suite + ": is the input file of --suite"},
		{[]string{"run", "--impl", "reference", "--suite", suite, "--fatbin", fatbin, "--junit", fatbin}, "is the input file of --fatbin"},
		{[]string{"run", "--impl", "reference", "--suite", capDir, "--json", caps[0]}, "is a capture file in the folder of --suite"},
		{[]string{"replay", "--impl", "reference", caps[0], "--json", caps[0]}, "is the input file of capture"},
		{[]string{"replay", "--impl", "reference", caps[0], "--junit", caps[0]}, "is the input file of capture"},
		{[]string{"run", "--impl", "reference", "--suite", suite, "--junit", fifo}, "--junit " + fifo + ": is a FIFO, not a file"},
		{[]string{"run", "--impl", "reference", "--suite", suite, "--junit", "/dev/null"}, "--junit /dev/null: is a character device, not a file"},
		{[]string{"run", "--impl", "reference", "--suite", suite, "--json", "/dev/null"}, "--json /dev/null: is a character device, not a file"},
		{[]string{"run", "--impl", "reference", "--suite", suite, "--json", fifo}, "--json " + fifo + ": a FIFO with no reader"},
		{[]string{"bench", "--impl", "reference", "--suite", suite, "--json", suite}, "is the input file of --suite"},
		{[]string{"bench", "--impl", "reference", "--suite", suite, "--runs", "9223372036854775807"}, "--runs 9223372036854775807 --warmup 5: want runs ≥ 2 and warmup ≥ 0, each at most 1000000"},
		{[]string{"bench", "--impl", "reference", "--suite", suite, "--warmup", "9223372036854775807"}, "--warmup 9223372036854775807: want runs ≥ 2 and warmup ≥ 0, each at most 1000000"},
		{[]string{"report", suite, "-o", suite}, "-o " + suite + ": is the input file of an input"},
	} {
		code, stdout, stderr := run(t, tt.args...)
		if code != difftest.ExitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q (stdout %q)", tt.args, code, stderr, tt.want, stdout)
		}
	}
	if b, _ := os.ReadFile(suite); !bytes.Equal(b, suiteBytes) {
		t.Error("the suite file changed")
	}
	if b, _ := os.ReadFile(caps[0]); !bytes.Equal(b, capBytes) {
		t.Error("the capture changed")
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", st.Mode(), err)
	}
}

// The rename that puts a report in place never replaces a FIFO that
// appeared at its path after the flags were checked.
func TestWriteFileAtomicRefusesSpecial(t *testing.T) {
	fifo := boundtest.FIFO(t, filepath.Join(t.TempDir(), "report.xml"))
	err := writeFileAtomic(fifo, func(w io.Writer) error { _, err := io.WriteString(w, "<x/>"); return err })
	if err == nil || !strings.Contains(err.Error(), "is a FIFO, not a file: not replaced") {
		t.Fatalf("err %v", err)
	}
	if st, _ := os.Lstat(fifo); st.Mode()&os.ModeNamedPipe == 0 {
		t.Error("the FIFO was replaced")
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(fifo), ".*.tmp")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// A --json FIFO whose reader stopped reading blocks the run once the pipe
// is full; SIGINT ends it within seconds (it used to block forever).
func TestJSONFIFOStalledReaderInterrupted(t *testing.T) {
	fifo := boundtest.FIFO(t, filepath.Join(t.TempDir(), "json.fifo"))
	rd, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	_, _ = unix.FcntlInt(rd.Fd(), unix.F_SETPIPE_SZ, 4096)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	time.AfterFunc(2*time.Second, func() { cancel(&difftest.Interrupted{Signal: syscall.SIGINT}) })
	done := make(chan int, 1)
	var stdout, stderr bytes.Buffer
	go func() {
		done <- MainAs(ctx, "difftest", []string{"run", "--impl", "reference", "--suite", small, "--repeat", "400", "--json", fifo}, &stdout, &stderr)
	}()
	select {
	case code := <-done:
		if code != 130 {
			t.Errorf("exit %d, want 130; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("still blocked 28 s after SIGINT\n%s", buf[:runtime.Stack(buf, true)])
	}
}

// editJSONL rewrites the JSON Lines file path, applying edit to each line
// (as a map) and keeping the others' bytes.
func editJSONL(t *testing.T, path string, edit func(n int, m map[string]any) bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for n, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if edit(n, m) {
			nb, _ := json.Marshal(m)
			lines[n] = string(nb)
		}
	}
	texttest.WriteFile(t, path, strings.Join(lines, "\n")+"\n", 0o644)
}

// Merge checks every case id against the suite the shards' header names:
// a renamed case, two swapped case ids, a shard of another suite are
// refused (they used to merge whenever the counts and indices agreed).
func TestMergeChecksCaseIDsAgainstSuite(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(n int, m map[string]any) bool
		want string
	}{
		{"unchanged", nil, ""},
		{"renamed", func(n int, m map[string]any) bool {
			if m["type"] == "case" && m["index"] == 2.0 {
				m["case"] = "topk_transform/renamed-k16"
				return true
			}
			return false
		}, "index 2 (seed 1) is case topk_transform/renamed-k16, but suite testdata/small.toml has topk_transform/masked-k16 at position 2"},
		{"swapped", func(n int, m map[string]any) bool {
			switch {
			case m["type"] == "case" && m["index"] == 0.0:
				m["case"] = "topk_transform/masked-k16"
			case m["type"] == "case" && m["index"] == 2.0:
				m["case"] = "topk_transform/gaussian-k8"
			default:
				return false
			}
			return true
		}, "index 0 (seed 1) is case topk_transform/masked-k16, but suite testdata/small.toml has topk_transform/gaussian-k8 at position 0"},
		{"another suite", func(n int, m map[string]any) bool {
			if m["type"] == "header" {
				m["suite"] = "testdata/two-cases.toml"
				return true
			}
			return false
		}, "its header counts 3 cases per seed, but suite testdata/two-cases.toml has 2"},
		{"a suite that is not here", func(n int, m map[string]any) bool {
			if m["type"] == "header" {
				m["suite"] = "testdata/moved-away.toml"
				return true
			}
			return false
		}, "its suite testdata/moved-away.toml cannot be loaded here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var shards []string
			for _, sh := range []string{"0/2", "1/2"} {
				out := filepath.Join(dir, strings.Replace(sh, "/", "of", 1)+".jsonl")
				if code, _, stderr := run(t, "run", "--impl", "reference", "--suite", small, "--shard", sh, "--json", out); code != 0 {
					t.Fatalf("shard %s: exit %d: %s", sh, code, stderr)
				}
				shards = append(shards, out)
			}
			if tc.edit != nil {
				editJSONL(t, shards[0], tc.edit)
				if strings.HasPrefix(tc.name, "a") {
					editJSONL(t, shards[1], tc.edit)
				}
			}
			code, _, stderr := run(t, append([]string{"merge", "-o", filepath.Join(dir, "all.jsonl")}, shards...)...)
			if tc.want == "" {
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				return
			}
			if code != difftest.ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}
