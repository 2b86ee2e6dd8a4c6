// The hostile inputs and silent coercions of issue 9 (items 4 and 10),
// end to end through the command line: each exits 2 (or fails its case
// as bad-output) within seconds and a few MB, with one line naming the
// file, the case, the parameter and the rule.

package cli

import (
	"encoding/binary"
	"encoding/xml"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/report"
	"github.com/kerneldiff/kerneldiff/internal/boundtest"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// quick runs the command line and fails when it takes more than 20 s or
// allocates more than 256 MB (the inputs are 64 GiB files, /dev/zero and
// 2.75·10^10-item runs).
func quick(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	boundtest.Within(t, "difftest "+strings.Join(args, " "), 20*time.Second, 256<<20, func() { code, stdout, stderr = run(t, args...) })
	return code, stdout, stderr
}

func TestHostileInputsExit2(t *testing.T) {
	dir := t.TempDir()
	fifo := boundtest.FIFO(t, filepath.Join(dir, "fifo"))
	sparse := filepath.Join(dir, "sparse.safetensors")
	if err := os.WriteFile(sparse, binary.LittleEndian.AppendUint64(nil, 1<<34), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 64<<30); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(dir, "nested.toml")
	text := "[[case]]\nkernel = \"topk_transform\"\nfamily = \"gaussian\"\nname = \"x\"\n[case.params]\nK = " +
		strings.Repeat("{a=", 10000) + "1" + strings.Repeat("}", 10000) + "\n"
	texttest.WriteFile(t, nested, text, 0o644)
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string // the one line, or its start
	}{
		{"--suite /dev/zero", []string{"run", "--impl", "reference", "--suite", "/dev/zero"},
			"difftest: suite /dev/zero: not a regular file (a character device) (a suite is a TOML file of at most 1048576 bytes, MaxSuiteBytes)\n"},
		{"--suite FIFO", []string{"run", "--impl", "reference", "--suite", fifo},
			"difftest: suite " + fifo + ": not a regular file (a FIFO) (a suite is a TOML file of at most 1048576 bytes, MaxSuiteBytes)\n"},
		{"--suite nested 10,000 deep", []string{"run", "--impl", "reference", "--suite", nested},
			"difftest: suite " + nested + ": line 6: key path 9 deep, above the limit of 8 for a suite file (MaxSuiteDepth; case.params.KEY is 3)\n"},
		{"replay /dev/zero", []string{"replay", "--impl", "reference", "/dev/zero"},
			"difftest: capture /dev/zero: refused, a safetensors file must be a regular file: not a regular file (a character device)\n"},
		{"replay FIFO", []string{"replay", "--impl", "reference", fifo},
			"difftest: capture " + fifo + ": refused, a safetensors file must be a regular file: not a regular file (a FIFO)\n"},
		{"replay sparse 64 GiB", []string{"replay", "--impl", "reference", sparse},
			"difftest: capture " + sparse + ": header: header length 17179869184 is above the limit of 16777216 bytes (MaxHeaderBytes)\n"},
		{"--repeat 100000000 selecting nothing", []string{"run", "--impl", "reference", "--suite", small, "--repeat", "100000000", "--run", "nomatch"},
			"difftest: no case of suite testdata/small.toml matches --run \"nomatch\""},
		{"--seed 2^64−1 --repeat 2", []string{"run", "--impl", "reference", "--suite", small, "--seed", "18446744073709551615", "--repeat", "2"},
			"difftest: --seed 18446744073709551615 with --repeat 2 runs seeds up to 18446744073709551615 + 1, past the largest seed 18446744073709551615 (2^64−1); seeds are not wrapped round to 0: lower --seed or --repeat\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := quick(t, tc.args...)
			t.Log(strings.TrimSpace(stderr))
			if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and one line", code, stdout, stderr)
			}
			if !strings.HasPrefix(stderr, tc.stderr) {
				t.Errorf("stderr\n\t%q\nwant\n\t%q", stderr, tc.stderr)
			}
		})
	}
}

// TestHugeRepeatRunsLazily: --repeat 100000000 starts at once, stops at
// the first failure under --failfast, and its JSON and JUnit reports are
// whole; --shard and --run keep working on the lazy list.
func TestHugeRepeatRunsLazily(t *testing.T) {
	dir := t.TempDir()
	jsonPath, junitPath := filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "r.xml")
	code, stdout, stderr := quick(t, "run", "--impl", "mutant:topk-tie-hole", "--suite", small, "--repeat", "100000000",
		"--failfast", "--json", jsonPath, "--junit", junitPath)
	if code != 1 || !strings.Contains(stdout, "1 passed, 1 failed (mismatch 1)") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	f, err := os.Open(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := report.ReadJSONL(jsonPath, f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Header.Repeat != 100000000 || len(rep.Records) != 2 || rep.Records[1].Case != "topk_transform/straddle-k16" || rep.Summary.Failed != 1 {
		t.Errorf("JSON report: header %+v, %d records, summary %+v", rep.Header, len(rep.Records), rep.Summary)
	}
	data, err := os.ReadFile(junitPath)
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(data, &suites); err != nil || suites.Tests != 2 || suites.Failures != 1 {
		t.Errorf("JUnit report: %+v, %v", suites, err)
	}

	// Shard 1/1000000000 of the 3·10^8 items holds index 1 only (seed 1,
	// the second case); --run picks within it.
	code, stdout, stderr = quick(t, "run", "--impl", "reference", "--suite", small, "--repeat", "100000000", "--shard", "1/1000000000")
	if code != 0 || !strings.Contains(stdout, "straddle-k16") || !strings.Contains(stdout, "1 passed, 0 failed") {
		t.Errorf("shard: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = quick(t, "run", "--impl", "reference", "--suite", small, "--repeat", "100000000", "--shard", "1/1000000000", "--run", "masked")
	if code != 2 || !strings.Contains(stderr, "no case of suite") {
		t.Errorf("shard and --run with nothing in common: exit %d\n%s%s", code, stdout, stderr)
	}
	// The last seed alone is fine: nothing wraps.
	code, stdout, stderr = quick(t, "run", "--impl", "reference", "--suite", small, "--seed", "18446744073709551615", "--run", "gaussian", "--json", jsonPath)
	if code != 0 {
		t.Fatalf("last seed: exit %d\n%s%s", code, stdout, stderr)
	}
	f, _ = os.Open(jsonPath)
	rep, err = report.ReadJSONL(jsonPath, f)
	f.Close()
	if err != nil || len(rep.Records) != 1 || rep.Records[0].Seed != 18446744073709551615 {
		t.Errorf("last seed: %v %+v", err, rep)
	}
}

// TestReplayOtherGenerator: a capture drawn by another generator version
// replays on its own bytes, with a warning on stderr and in the record
// (whose generator_version is the capture's), not an error and not in
// silence.
func TestReplayOtherGenerator(t *testing.T) {
	dir := t.TempDir()
	if code, stdout, _ := run(t, "run", "--impl", "mutant:topk-tie-hole", "--suite", small, "--run", "straddle", "--save-failures", dir); code != 1 {
		t.Fatalf("exit %d\n%s", code, stdout)
	}
	capture := filepath.Join(dir, "topk_transform__straddle-k16__seed1.safetensors")
	tensors, meta, err := difftest.ReadSafetensors(capture)
	if err != nil {
		t.Fatal(err)
	}
	meta[difftest.MetaGenerator] = "999"
	list := slices.Collect(maps.Values(tensors))
	old := filepath.Join(dir, "gen999.safetensors")
	if err := difftest.WriteSafetensors(old, list, meta); err != nil {
		t.Fatal(err)
	}
	jsonPath := filepath.Join(dir, "replay.jsonl")
	code, stdout, stderr := run(t, "replay", "--impl", "reference", "--json", jsonPath, old)
	warning := "the inputs were drawn by generator version 999, this build's is 2: they are replayed as captured, but `run --seed 1` of case topk_transform/straddle-k16 may draw different inputs in this build"
	if code != 0 || stderr != "difftest: warning: "+old+": "+warning+"\n" {
		t.Fatalf("exit %d\nstdout %s\nstderr %q", code, stdout, stderr)
	}
	f, _ := os.Open(jsonPath)
	rep, err := report.ReadJSONL(jsonPath, f)
	f.Close()
	if err != nil || len(rep.Records) != 1 {
		t.Fatalf("%v %+v", err, rep)
	}
	if r := rep.Records[0]; r.GeneratorVersion != 999 || len(r.Warnings) != 1 || r.Warnings[0] != warning {
		t.Errorf("record: generator_version %d, warnings %q", r.GeneratorVersion, r.Warnings)
	}
	// The same capture under this build's version: no word.
	if code, _, stderr := run(t, "replay", "--impl", "reference", capture); code != 0 || stderr != "" {
		t.Errorf("current generator: exit %d, stderr %q", code, stderr)
	}
	// A version that is not a version is an error.
	meta[difftest.MetaGenerator] = "-3"
	if err := difftest.WriteSafetensors(old, list, meta); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, "replay", "--impl", "reference", old); code != 2 ||
		!strings.Contains(stderr, `__metadata__["generator"]: must be a generator version, a decimal integer ≥ 1, got "-3"`) {
		t.Errorf("generator -3: exit %d, stderr %q", code, stderr)
	}
}

// TestExecOutputDevZero: an exec program that links out.safetensors to
// /dev/zero fails every case as bad-output; the run goes on and exits 1.
func TestExecOutputDevZero(t *testing.T) {
	code, stdout, stderr := quick(t, "run", "--suite", small, "--impl", `exec:sh -c 'ln -s /dev/zero "$2"' sh`)
	if code != 1 || strings.Count(stdout, "bad-output") < 3 || !strings.Contains(stdout, "0 passed, 3 failed (bad-output 3)") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
}
