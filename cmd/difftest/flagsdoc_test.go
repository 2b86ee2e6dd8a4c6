// docs/flags.md is generated from the subcommands themselves: the command
// list that `difftest help` prints and the flag set each one prints with
// --help; the catalog table of docs/mutants.md from `difftest list
// mutants`. The tests ask the program, not a table of its packages, so
// they hold however the subcommands are laid out.

//go:generate go test -run ^(TestFlagsDoc|TestMutantsDoc)$ -update-docs .

package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite ../../docs/flags.md from the subcommands' flag sets and the catalog table of ../../docs/mutants.md from `difftest list mutants`")

const (
	flagsDocPath   = "../../docs/flags.md"
	mutantsDocPath = "../../docs/mutants.md"
	mutantsBegin   = "<!-- mutants:begin -->\n"
	mutantsEnd     = "<!-- mutants:end -->\n"
)

// TestFlagsDocMain is not a test: flagsDocRun starts this test binary with
// KD_FLAGSDOC_ARGS set, and then it is difftest's main with those args.
func TestFlagsDocMain(t *testing.T) {
	args, ok := os.LookupEnv("KD_FLAGSDOC_ARGS")
	if !ok {
		t.Skip("helper process of TestFlagsDoc")
	}
	os.Args = append([]string{"difftest"}, strings.Fields(args)...)
	main() // exits
}

// flagsDocRun runs `difftest ARGS` as its own process with GOMAXPROCS set
// to procs and a bare environment, and returns stdout and stderr together.
func flagsDocRun(t *testing.T, procs int, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFlagsDocMain$")
	cmd.Env = []string{"KD_FLAGSDOC_ARGS=" + strings.Join(args, " "), "GOMAXPROCS=" + fmt.Sprint(procs), "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("difftest %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// flagsDoc renders docs/flags.md: for every command `difftest help` lists,
// its usage line, its summary and its flags as `difftest COMMAND --help`
// prints them. A default that changes with GOMAXPROCS (the CPUs this
// process may use) is written as such, not as this machine's number.
func flagsDoc(t *testing.T) string {
	help := flagsDocRun(t, 2, "help")
	var b strings.Builder
	b.WriteString("# difftest flags\n\n")
	b.WriteString("Generated from each subcommand's own flag set by `make docs` (or `go generate ./cmd/difftest`);\n")
	b.WriteString("do not edit: `TestFlagsDoc` in `cmd/difftest` fails when this file is stale. `difftest COMMAND --help`\n")
	b.WriteString("prints the same. Flags take one dash or two (`-seed 7`, `--seed=7`); exit codes are in\n")
	b.WriteString("[interfaces.md](interfaces.md#exit-codes).\n")
	split := regexp.MustCompile(`\s{2,}`)
	def := regexp.MustCompile(`\(default [^)]*\)$`)
	word := regexp.MustCompile(`^[a-z][a-z-]*$`)
	n := 0
	for _, line := range strings.Split(help, "\n") {
		if !strings.HasPrefix(line, "  ") || strings.TrimSpace(line) == "" {
			continue
		}
		parts := split.Split(strings.TrimSpace(line), 2)
		if len(parts) != 2 {
			t.Fatalf("help line %q: want USAGE  SUMMARY", line)
		}
		usage, summary := parts[0], parts[1]
		name := strings.Fields(usage)[:1]
		if f := strings.Fields(usage); len(f) > 1 && word.MatchString(f[1]) && f[1] != "help" {
			name = f[:2] // a command with its own subcommand: study needle
		}
		n++
		a := flagsDocRun(t, 2, append(name, "--help")...)
		c := flagsDocRun(t, 3, append(name, "--help")...)
		la, lc := strings.Split(a, "\n"), strings.Split(c, "\n")
		if len(la) != len(lc) {
			t.Fatalf("difftest %s --help: %d lines with GOMAXPROCS=2, %d with 3", strings.Join(name, " "), len(la), len(lc))
		}
		for i := range la {
			if la[i] != lc[i] {
				if !def.MatchString(la[i]) {
					t.Fatalf("difftest %s --help: line %q depends on GOMAXPROCS but is no default", strings.Join(name, " "), la[i])
				}
				la[i] = def.ReplaceAllString(la[i], "(default: GOMAXPROCS, the CPUs Go may use)")
			}
		}
		fmt.Fprintf(&b, "\n## `difftest %s`\n\n%s.\n\n    difftest %s\n\n", strings.Join(name, " "), summary, usage)
		body := strings.TrimRight(strings.Join(la, "\n"), "\n")
		if !strings.Contains(body, "\n  -") {
			body += "\n  (no flags)"
		}
		fmt.Fprintf(&b, "```\n%s\n```\n", body)
	}
	if n < 5 {
		t.Fatalf("difftest help lists %d commands:\n%s", n, help)
	}
	return b.String()
}

// docs/flags.md is what the subcommands print: rerun with -update-docs
// (make docs) after changing a flag, a usage line or a summary.
func TestFlagsDoc(t *testing.T) {
	if _, ok := os.LookupEnv("KD_FLAGSDOC_ARGS"); ok {
		t.Skip("helper process")
	}
	want := flagsDoc(t)
	if *updateDocs {
		texttest.WriteFile(t, flagsDocPath, want, 0o644)
		return
	}
	got, err := os.ReadFile(flagsDocPath)
	if err != nil {
		t.Fatalf("%v (make docs writes it)", err)
	}
	docDiff(t, "docs/flags.md", string(got), want)
}

// docDiff fails naming the first line where got, a generated part of a
// doc, differs from want.
func docDiff(t *testing.T, name, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Fatalf("%s is stale (run make docs): line %d is\n\t%q\nthe program gives\n\t%q", name, i+1, g, w)
		}
	}
}

// mutantsTable renders `difftest list mutants` as the Markdown table of
// docs/mutants.md: kernel, mutant, fault, in the command's order.
func mutantsTable(t *testing.T) string {
	out := flagsDocRun(t, 2, "list", "mutants")
	split := regexp.MustCompile(`\s{2,}`)
	var b strings.Builder
	b.WriteString("| kernel | mutant | fault |\n|---|---|---|\n")
	n := 0
	for i, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		f := split.Split(strings.TrimSpace(line), 3)
		if i == 0 {
			if strings.Join(f, " ") != "KERNEL MUTANT FAULT" {
				t.Fatalf("difftest list mutants: header %q, want KERNEL  MUTANT  FAULT", line)
			}
			continue
		}
		if len(f) != 3 {
			t.Fatalf("difftest list mutants: line %q has %d columns, want 3", line, len(f))
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", f[0], f[1], strings.ReplaceAll(f[2], "|", "\\|"))
		n++
	}
	if n == 0 {
		t.Fatal("difftest list mutants lists none")
	}
	return b.String()
}

// The catalog table of docs/mutants.md is `difftest list mutants`: rerun
// with -update-docs (make docs) after adding or rewording a mutant.
func TestMutantsDoc(t *testing.T) {
	if _, ok := os.LookupEnv("KD_FLAGSDOC_ARGS"); ok {
		t.Skip("helper process")
	}
	data, err := os.ReadFile(mutantsDocPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, mutantsBegin), strings.Index(doc, mutantsEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/mutants.md has no %q … %q block", strings.TrimSpace(mutantsBegin), strings.TrimSpace(mutantsEnd))
	}
	want := mutantsTable(t)
	if *updateDocs {
		doc = doc[:i+len(mutantsBegin)] + want + doc[j:]
		texttest.WriteFile(t, mutantsDocPath, doc, 0o644)
		return
	}
	docDiff(t, "docs/mutants.md", doc[i+len(mutantsBegin):j], want)
}
