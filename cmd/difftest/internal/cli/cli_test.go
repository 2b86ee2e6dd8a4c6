package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/report"
	_ "github.com/kerneldiff/kerneldiff/kernels/topk"
)

// Implementations and commands with faults the CLI must survive.
type panicImpl struct{}

func (panicImpl) Name() string { return "test-panics" }
func (panicImpl) Run(context.Context, difftest.Kernel, *difftest.Case, []*difftest.Buffer) (difftest.RunInfo, error) {
	var rows []int
	_ = rows[3] // index out of range, as a buggy launcher would
	return difftest.RunInfo{}, nil
}
func (panicImpl) Close() error { return nil }

type goneImpl struct{}

func (goneImpl) Name() string { return "test-device-lost" }
func (goneImpl) Run(context.Context, difftest.Kernel, *difftest.Case, []*difftest.Buffer) (difftest.RunInfo, error) {
	return difftest.RunInfo{}, &difftest.RunError{Class: difftest.Unavailable, Msg: "device 0 fell off the bus"}
}
func (goneImpl) Close() error { return nil }

func init() {
	difftest.RegisterImpl("test-no-driver", func(difftest.ImplOptions) (difftest.Impl, error) {
		return nil, &difftest.RunError{Class: difftest.Unavailable, Msg: "libcuda.so.1: cannot open shared object file"}
	})
	difftest.RegisterImpl("test-panics", func(difftest.ImplOptions) (difftest.Impl, error) { return panicImpl{}, nil })
	difftest.RegisterImpl("test-device-lost", func(difftest.ImplOptions) (difftest.Impl, error) { return goneImpl{}, nil })
	RegisterCommand(Command{Name: "test-harness-panic", Hidden: true, Run: func(context.Context, []string, io.Writer, io.Writer) int {
		panic("nil map write in the harness")
	}})
	RegisterCommand(Command{Name: "test-exit-255", Hidden: true, Run: func(context.Context, []string, io.Writer, io.Writer) int { return 255 }})
	RegisterCommand(Command{Name: "test-echo", Summary: "prints its arguments", Run: func(_ context.Context, args []string, stdout, _ io.Writer) int {
		fmt.Fprintln(stdout, strings.Join(args, " "))
		return 0
	}})
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = Main(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

const small = "testdata/small.toml"

func TestExitCodes(t *testing.T) {
	// The harness-panic row writes a stack file: keep it out of the
	// machine's temporary folder.
	crashDir = t.TempDir()
	defer func() { crashDir = "" }()
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // substring, "" = not checked
		stderr string // exact one-line stderr when set
	}{
		{"reference passes", []string{"run", "--impl", "reference", "--suite", small}, 0, "3 passed, 0 failed", ""},
		{"mutant fails", []string{"run", "--impl", "mutant:topk-tie-hole", "--suite", small}, 1,
			"replay: difftest run --suite testdata/small.toml --seed 1 --impl mutant:topk-tie-hole --run '^topk_transform/straddle-k16$'", ""},
		{"panicking implementation is a case failure", []string{"run", "--impl", "test-panics", "--suite", small, "--run", "gaussian"}, 1, "crash", ""},
		{"failfast", []string{"run", "--impl", "mutant:topk-tie-hole", "--suite", small, "--failfast"}, 1, "1 passed, 1 failed (mismatch 1)", ""},
		{"no command", nil, 2, "", ""},
		{"unknown command", []string{"frobnicate"}, 2, "", "difftest: unknown command \"frobnicate\" (see difftest help)\n"},
		{"unknown flag", []string{"run", "--impl", "reference", "--sede", "3"}, 2, "", ""},
		{"malformed suite", []string{"run", "--impl", "reference", "--suite", "testdata/malformed.toml"}, 2, "",
			"difftest: suite testdata/malformed.toml: line 4: strings cannot contain newlines\n"},
		{"unknown param", []string{"run", "--impl", "reference", "--suite", "testdata/unknown-param.toml"}, 2, "",
			"difftest: suite testdata/unknown-param.toml: case topk_transform/typo: unknown param(s) lenghts\n"},
		{"missing suite file", []string{"run", "--impl", "reference", "--suite", "testdata/none.toml"}, 2, "", ""},
		{"unknown suite", []string{"run", "--impl", "reference", "--suite", "nightly"}, 2, "", ""},
		{"unknown impl", []string{"run", "--impl", "gpu", "--suite", small}, 2, "", ""},
		{"bad exec quoting", []string{"run", "--impl", "exec:prog 'unterminated", "--suite", small}, 2, "", ""},
		{"bad regexp", []string{"run", "--impl", "reference", "--suite", small, "--run", "("}, 2, "", ""},
		{"nothing selected", []string{"run", "--impl", "reference", "--suite", small, "--run", "^none$"}, 2, "", ""},
		{"bad shard", []string{"run", "--impl", "reference", "--suite", small, "--shard", "2/2"}, 2, "", ""},
		{"negative timeout", []string{"run", "--impl", "reference", "--suite", small, "--timeout", "-1s"}, 2, "",
			"difftest: --timeout -1s: must be ≥ 0 (0 = no time-out)\n"},
		{"zero timeout is no time-out", []string{"run", "--impl", "reference", "--suite", small, "--timeout", "0"}, 0, "3 passed, 0 failed", ""},
		{"negative replay timeout", []string{"replay", "--impl", "reference", "--timeout", "-2m", "none.safetensors"}, 2, "",
			"difftest: --timeout -2m0s: must be ≥ 0 (0 = no time-out)\n"},
		{"negative selftest timeout", []string{"selftest", "--suite", small, "--timeout", "-1ns"}, 2, "",
			"difftest: --timeout -1ns: must be ≥ 0 (0 = no time-out)\n"},
		{"stray run argument", []string{"run", "--impl", "reference", "extra"}, 2, "", "difftest: run takes no arguments, got [\"extra\"]\n"},
		{"stray bench argument", []string{"bench", "extra", "--impl", "reference"}, 2, "", "difftest: bench takes no arguments, got [\"extra\"]\n"},
		{"stray selftest arguments", []string{"selftest", "a", "b"}, 2, "", "difftest: selftest takes no arguments, got [\"a\" \"b\"]\n"},
		{"stray gpu-check argument", []string{"gpu-check", "--", "-x"}, 2, "", "difftest: gpu-check takes no arguments, got [\"-x\"]\n"},
		{"no driver", []string{"run", "--impl", "test-no-driver", "--suite", small}, 125, "",
			"difftest: test-no-driver unavailable: libcuda.so.1: cannot open shared object file\n"},
		{"device lost before any case", []string{"run", "--impl", "test-device-lost", "--suite", small}, 125, "",
			"difftest: test-device-lost unavailable: device 0 fell off the bus\n"},
		{"harness panic", []string{"test-harness-panic"}, difftest.ExitInternal, "", ""},
		{"out-of-range code from a command", []string{"test-exit-255"}, 125, "", ""},
		{"registered command", []string{"test-echo", "a", "b"}, 0, "a b\n", ""},
		{"help", []string{"help"}, 0, "test-echo", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			if tt.stdout != "" && !strings.Contains(stdout, tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, stdout)
			}
			if tt.stderr != "" && stderr != tt.stderr {
				t.Errorf("stderr = %q, want %q", stderr, tt.stderr)
			}
			if code == 2 && len(tt.args) > 0 && tt.args[0] == "run" && strings.Count(strings.TrimSpace(stderr), "\n") > 0 && !strings.Contains(stderr, "Usage of") {
				t.Errorf("usage error is not one line: %q", stderr)
			}
		})
	}
}

func TestReportsAndShardsMerge(t *testing.T) {
	dir := t.TempDir()
	var shards []string
	for _, sh := range []string{"0/2", "1/2"} {
		out := filepath.Join(dir, "shard"+sh[:1]+".jsonl")
		code, stdout, stderr := run(t, "run", "--impl", "mutant:topk-tie-hole", "--suite", small, "--repeat", "2", "--shard", sh, "--json", out)
		if code != 1 {
			t.Fatalf("shard %s: exit %d\n%s%s", sh, code, stdout, stderr)
		}
		shards = append(shards, out)
	}
	merged, junit := filepath.Join(dir, "all.jsonl"), filepath.Join(dir, "all.xml")
	code, stdout, stderr := run(t, append([]string{"merge", "--junit", junit, "-o", merged}, shards...)...)
	if code != 1 || !strings.HasPrefix(stdout, "2 passed, 4 failed (mismatch 4) in ") {
		t.Fatalf("merge: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	rep, err := report.ReadJSONLFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Records) != 6 || rep.Header.Repeat != 2 || rep.Header.Shard != "" || rep.Header.MergedShards != 2 || rep.Header.Impl != "mutant:topk-tie-hole" {
		t.Fatalf("merged report: header %+v, %d records", rep.Header, len(rep.Records))
	}
	for i, r := range rep.Records {
		if r.Index != i || r.Seed != uint64(1+i/3) || r.GeneratorVersion != difftest.GeneratorVersion || len(r.InputSHA256) != 64 {
			t.Errorf("record %d: index %d seed %d gen %d sha %q", i, r.Index, r.Seed, r.GeneratorVersion, r.InputSHA256)
		}
		var params map[string]any
		if err := json.Unmarshal(r.Params, &params); err != nil || params["K"] == nil {
			t.Errorf("record %d params %s: %v", i, r.Params, err)
		}
	}
	if _, err := os.Stat(junit); err != nil {
		t.Error(err)
	}
}

// The same (seed, case id) gives the same input bytes in every run.
func TestInputDigestsRepeat(t *testing.T) {
	dir := t.TempDir()
	var digests [2][]string
	for i := range digests {
		out := filepath.Join(dir, fmt.Sprintf("r%d.jsonl", i))
		if code, _, stderr := run(t, "run", "--impl", "reference", "--suite", small, "--seed", "42", "--json", out); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		f, _ := os.Open(out)
		rep, err := report.ReadJSONL(out, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Records {
			digests[i] = append(digests[i], r.InputSHA256)
		}
	}
	if strings.Join(digests[0], ",") != strings.Join(digests[1], ",") || len(digests[0]) != 3 {
		t.Errorf("digests differ between runs:\n%v\n%v", digests[0], digests[1])
	}
}

func TestSaveFailuresAndReplay(t *testing.T) {
	dir := t.TempDir()
	code, stdout, _ := run(t, "run", "--impl", "mutant:topk-tie-hole", "--suite", small, "--run", "straddle", "--save-failures", dir)
	capture := filepath.Join(dir, "topk_transform__straddle-k16__seed1.safetensors")
	if code != 1 || !strings.Contains(stdout, "replay: difftest replay --impl mutant:topk-tie-hole "+capture) {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
	if code, stdout, stderr := run(t, "replay", capture, "--impl", "mutant:topk-tie-hole"); code != 1 || !strings.Contains(stdout, "mismatch") {
		t.Errorf("replay with the mutant: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := run(t, "replay", "--impl", "reference", capture); code != 0 || !strings.Contains(stdout, "1 passed, 0 failed") {
		t.Errorf("replay with the reference: exit %d\n%s%s", code, stdout, stderr)
	}
	// Without --impl, the capture replays on the implementation it was
	// saved from (not the build's default, cuda), and says so.
	if code, stdout, stderr := run(t, "replay", capture); code != 1 || !strings.Contains(stdout, "mismatch") ||
		!strings.Contains(stderr, "difftest: replaying on --impl mutant:topk-tie-hole, the implementation "+capture+" was saved from (--impl runs another)") ||
		!strings.Contains(stdout, "replay: difftest replay --impl mutant:topk-tie-hole "+capture) {
		t.Errorf("replay without --impl: exit %d\n%s%s", code, stdout, stderr)
	}

	// A capture whose scores are stored as I32 is an input file error.
	tensors, meta, err := difftest.ReadSafetensors(capture)
	if err != nil {
		t.Fatal(err)
	}
	var list []*difftest.Tensor
	for name, tn := range tensors {
		if name == "scores" {
			tn.DType = difftest.I32
		}
		list = append(list, tn)
	}
	bad := filepath.Join(dir, "bad-dtype.safetensors")
	if err := difftest.WriteSafetensors(bad, list, meta); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, "replay", "--impl", "reference", bad)
	if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "scores") || !strings.Contains(stderr, "F32") {
		t.Errorf("wrong dtype: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := run(t, "replay", "--impl", "reference", filepath.Join(dir, "none.safetensors")); code != 2 {
		t.Errorf("missing capture: exit %d (%s)", code, stderr)
	}
}

func TestList(t *testing.T) {
	code, stdout, _ := run(t, "list", "mutants")
	if code != 0 || !strings.Contains(stdout, "topk-tie-hole") {
		t.Errorf("list mutants: %d\n%s", code, stdout)
	}
	code, stdout, _ = run(t, "list", "cases", "--suite", small)
	if code != 0 || !strings.Contains(stdout, "topk_transform/masked-k16    masked    testdata/small.toml") {
		t.Errorf("list cases: %d\n%s", code, stdout)
	}
	code, stdout, _ = run(t, "list", "impls")
	if code != 0 || !strings.Contains(stdout, "reference\n") || !strings.Contains(stdout, "exec:CMD") {
		t.Errorf("list impls: %d\n%s", code, stdout)
	}
	if code, _, _ := run(t, "list", "everything"); code != 2 {
		t.Errorf("list everything: exit %d", code)
	}
}
