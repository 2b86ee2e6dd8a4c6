package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/cli"
)

// The README's "When a case fails" sample is this build's output: the
// failures section of `run --suite quick --impl mutant:topk-page-row0`,
// through the summary line (its time aside), as the README shows it
// (program name build/difftest). A change to grouping, messages or the
// quick suite fails here until the README shows the new output.
func TestREADMEFailureSample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(readme)
	i := strings.Index(doc, "\nfailures: ")
	if i < 0 {
		t.Fatal("README has no failures sample")
	}
	j := strings.Index(doc[i:], "\n```")
	if j < 0 {
		t.Fatal("README's failures sample has no end")
	}
	want := doc[i+1 : i+j]
	var out, errs bytes.Buffer
	code := cli.Main(context.Background(), []string{"run", "--suite", "quick", "--impl", "mutant:topk-page-row0"}, &out, &errs)
	if code != 1 {
		t.Fatalf("exit %d\n%s", code, errs.String())
	}
	stdout := out.String()
	k := strings.Index(stdout, "failures: ")
	if k < 0 {
		t.Fatalf("no failures section:\n%s", stdout)
	}
	got := strings.TrimRight(stdout[k:], "\n")
	got = strings.ReplaceAll(got, "replay: difftest ", "replay: build/difftest ")
	elapsed := regexp.MustCompile(`\) in [0-9.]+(ms|s|µs|m[0-9.]+s)$`)
	if norm := func(s string) string { return elapsed.ReplaceAllString(s, ") in T") }; norm(got) != norm(want) {
		t.Errorf("README's failures sample is not this build's output; replace it with:\n%s", got)
	}
}
