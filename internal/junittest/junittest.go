// Package junittest reads back the JUnit XML files difftest writes
// (--junit), for the tests of the command that check them after a run or
// an interrupted one (cmd/difftest, cmd/difftest/internal/cli).
package junittest

import (
	"encoding/xml"
	"os"
	"testing"
)

// CheckCases fails t unless the JUnit file at path parses and holds want
// test cases, counted both ways: the <testcase> elements of its
// <testsuite>s and the tests attribute of <testsuites>. A file that
// cannot be read or parsed is fatal.
func CheckCases(t testing.TB, path string, want int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests  int `xml:"tests,attr"`
		Suites []struct {
			Cases []struct{} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("JUnit %s does not parse: %v\n%s", path, err, b)
	}
	n := 0
	for _, s := range doc.Suites {
		n += len(s.Cases)
	}
	if n != want || doc.Tests != want {
		t.Errorf("JUnit %s: %d test cases (tests=%d), want %d:\n%s", path, n, doc.Tests, want, b)
	}
}
