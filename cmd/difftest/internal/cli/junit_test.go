package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// junitCheck reads a JUnit file with junitparser, an independent reader,
// and prints one line per test case: classname, name, result type and
// message; then the properties of each suite.
const junitCheck = `
import sys
from junitparser import JUnitXml, Failure
xml = JUnitXml.fromfile(sys.argv[1])
for suite in xml:
    for case in suite:
        res = [r for r in case.result if isinstance(r, Failure)]
        if res:
            print("case", case.classname, case.name, "failure", res[0].type, res[0].message, sep="|")
        else:
            print("case", case.classname, case.name, "pass" if case.is_passed else "other", sep="|")
    for p in suite.properties():
        print("prop", suite.name, p.name, p.value, sep="|")
    print("suite", suite.name, suite.tests, suite.failures, sep="|")
`

func TestJUnitReadByJunitparser(t *testing.T) {
	python := os.Getenv("KD_PYTHON")
	if python == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("KD_PYTHON is not set in CI: run scripts/setup-pytools and set KD_PYTHON=.venv/bin/python (make gotest does)")
		}
		t.Skip("KD_PYTHON not set (scripts/setup-pytools, then KD_PYTHON=.venv/bin/python)")
	}
	dir := t.TempDir()
	xml := filepath.Join(dir, "report.xml")
	code, stdout, stderr := run(t, "run", "--impl", "mutant:topk-tie-hole", "--suite", small, "--seed", "7", "--repeat", "2", "--junit", xml)
	if code != 1 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	script := texttest.WriteFile(t, filepath.Join(dir, "check.py"), junitCheck, 0o644)
	out, err := exec.Command(python, script, xml).CombinedOutput()
	if err != nil {
		t.Fatalf("junitparser: %v\n%s", err, out)
	}
	var cases, failures []string
	props := map[string]string{}
	var suites []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		switch f[0] {
		case "case":
			cases = append(cases, f[1]+" "+f[2]+" "+f[3])
			if f[3] == "failure" {
				failures = append(failures, f[4]+" "+f[5])
			}
		case "prop":
			props[f[1]+" "+f[2]] = f[3]
		case "suite":
			suites = append(suites, strings.Join(f[1:], " "))
		}
	}
	wantCases := []string{
		"topk_transform topk_transform/gaussian-k8 pass",
		"topk_transform topk_transform/straddle-k16 failure",
		"topk_transform topk_transform/masked-k16 failure",
	}
	wantCases = append(wantCases, wantCases...) // seeds 7 and 8
	if strings.Join(cases, "\n") != strings.Join(wantCases, "\n") {
		t.Errorf("junitparser read cases\n%s\nwant\n%s", strings.Join(cases, "\n"), strings.Join(wantCases, "\n"))
	}
	for _, f := range failures {
		if !strings.HasPrefix(f, "mismatch mismatch: row ") {
			t.Errorf("failure type and message %q, want type mismatch and its message", f)
		}
	}
	if want := []string{"testdata/small.toml seed=7 3 2", "testdata/small.toml seed=8 3 2"}; strings.Join(suites, ",") != strings.Join(want, ",") {
		t.Errorf("suites %v, want %v", suites, want)
	}
	for _, name := range []string{"seed", "impl", "device", "driver", "cuda", "fatbin_sha256", "git_commit"} {
		if _, ok := props["testdata/small.toml seed=8 "+name]; !ok {
			t.Errorf("property %s missing (have %v)", name, props)
		}
	}
	if props["testdata/small.toml seed=7 seed"] != "7" || props["testdata/small.toml seed=8 seed"] != "8" || props["testdata/small.toml seed=7 impl"] != "mutant:topk-tie-hole" {
		t.Errorf("properties %v", props)
	}
}
