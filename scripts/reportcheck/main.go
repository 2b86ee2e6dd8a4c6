// Command reportcheck holds the assertions the test scripts make on
// difftest's own JSON Lines reports, read with report.ReadJSONLFile (the
// reader difftest merge and report use):
//
//	reportcheck emu JSONL [SEL:CLASS ...]    scripts/test-emu-driver
//	reportcheck merged JSONL NCASES SHARDS   scripts/test-recipes
//	reportcheck devices JSONL LOSTDEV NCASES scripts/test-emu-scale
//
// Each prints one "ok   NAME: ..." line and exits 0, or names what is
// wrong on stderr and exits 1; 2 on bad usage or an unreadable report.
//
// emu: a run on the emulated driver. The header names the implementation
// ($CHECK_IMPL, default cuda) and a "kerneldiff host emulator" device and
// is labelled emulated; the run finished (a summary line) with cases. A
// SEL is KERNEL/PART: every case of KERNEL whose id contains PART must
// fail with CLASS (~KERNEL/PART: may pass instead), and at least one case
// must have each rule's class; a crash must name SIGSEGV. A pipeline case
// passes or fails in a stage whose kernel a rule names, with that rule's
// class. Every other case passes with the implementation and a kernel
// time.
//
// merged: the merge of SHARDS shard reports holds each of the NCASES cases
// once, says merged_shards SHARDS, and its summary counts NCASES cases, a
// failure among them.
//
// devices: a run over two emulated devices holds each of the NCASES cases
// once, both devices used; LOSTDEV "" means every case passed, else one
// case crashed (killed) on that device and every other passed.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/report"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = "usage: reportcheck emu JSONL [SEL:CLASS ...] | merged JSONL NCASES SHARDS | devices JSONL LOSTDEV NCASES"

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	rep, err := report.ReadJSONLFile(args[1])
	if err != nil {
		fmt.Fprintln(stderr, "reportcheck:", err)
		return 2
	}
	name := filepath.Base(args[1])
	var ok string
	var bad []string
	switch {
	case args[0] == "emu":
		impl := os.Getenv("CHECK_IMPL")
		if impl == "" {
			impl = "cuda"
		}
		var rules [][2]string
		for _, r := range args[2:] {
			sel, cls, found := strings.Cut(r, ":")
			if !found {
				fmt.Fprintf(stderr, "reportcheck: rule %q: want SEL:CLASS\n", r)
				return 2
			}
			rules = append(rules, [2]string{sel, cls})
		}
		ok, bad = checkEmu(rep, impl, rules)
	case args[0] == "merged" && len(args) == 4:
		n, err1 := strconv.Atoi(args[2])
		shards, err2 := strconv.Atoi(args[3])
		if err1 != nil || err2 != nil {
			fmt.Fprintln(stderr, usage)
			return 2
		}
		ok, bad = checkMerged(rep, n, shards)
	case args[0] == "devices" && len(args) == 4:
		n, err := strconv.Atoi(args[3])
		if err != nil {
			fmt.Fprintln(stderr, usage)
			return 2
		}
		ok, bad = checkDevices(rep, args[2], n)
	default:
		fmt.Fprintln(stderr, usage)
		return 2
	}
	if len(bad) > 0 {
		fmt.Fprintf(stderr, "reportcheck: %s: %s\n", name, strings.Join(bad[:min(10, len(bad))], "\n  "))
		return 1
	}
	fmt.Fprintf(stdout, "ok   %s: %s\n", name, ok)
	return 0
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

var stageRe = regexp.MustCompile(`^stage \d (\S+): `)

func checkEmu(rep *report.Report, impl string, rules [][2]string) (string, []string) {
	var bad []string
	h := rep.Header
	if h.Impl != impl || !strings.Contains(h.Properties["device"], "kerneldiff host emulator") {
		bad = append(bad, fmt.Sprintf("header: impl %q, device %q", h.Impl, h.Properties["device"]))
	}
	if !strings.Contains(h.Properties["emulated"], "CPU emulator") {
		bad = append(bad, fmt.Sprintf("header: not labelled emulated: %v", h.Properties))
	}
	if rep.Summary == nil || len(rep.Records) == 0 {
		bad = append(bad, "no summary or no cases")
	}
	failing := map[string]int{} // by wanted class; "" = must pass
	for _, r := range rep.Records {
		if r.Kernel == "pipeline" && r.Verdict != difftest.VerdictPass {
			// A chained case runs the other kernels as its stages: it
			// passes, or fails in the stage of a kernel a rule names,
			// with that rule's class.
			m := stageRe.FindStringSubmatch(r.Message)
			named := false
			for _, rl := range rules {
				k, _, _ := strings.Cut(strings.TrimLeft(rl[0], "~"), "/")
				if m != nil && k == m[1] && string(r.Class) == rl[1] {
					named = true
				}
			}
			if !named {
				bad = append(bad, fmt.Sprintf("%s: %s %s %s: not a failure of a stage these rules name", r.Case, r.Verdict, r.Class, cut(r.Message, 200)))
			}
			continue
		}
		want, some := "", false
		for _, rl := range rules {
			k, part, _ := strings.Cut(strings.TrimLeft(rl[0], "~"), "/")
			if r.Kernel == k && strings.Contains(r.Case, part) {
				want, some = rl[1], strings.HasPrefix(rl[0], "~")
			}
		}
		if some && r.Verdict == difftest.VerdictPass {
			want = ""
		}
		failing[want]++
		if r.Impl != impl {
			bad = append(bad, fmt.Sprintf("%s: impl %q", r.Case, r.Impl))
		}
		switch {
		case want == "":
			if r.Verdict != difftest.VerdictPass || r.KernelTime == 0 {
				bad = append(bad, fmt.Sprintf("%s: %s %s %s, kernel time %d", r.Case, r.Verdict, r.Class, cut(r.Message, 200), r.KernelTime))
			}
		case r.Verdict != difftest.VerdictFail || string(r.Class) != want:
			bad = append(bad, fmt.Sprintf("%s: %s class %q, want fail class %s", r.Case, r.Verdict, r.Class, want))
		case want == "crash" && !strings.Contains(r.Message, "SIGSEGV"):
			bad = append(bad, fmt.Sprintf("%s: crash message does not name the signal: %q", r.Case, r.Message))
		}
	}
	for _, rl := range rules {
		if failing[rl[1]] == 0 {
			bad = append(bad, fmt.Sprintf("no case of %s in the suite", rl[0]))
		}
	}
	classes := make([]string, 0, len(failing))
	for c := range failing {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	var parts []string
	for _, c := range classes {
		label := c
		if c == "" {
			label = "pass"
		}
		parts = append(parts, fmt.Sprintf("%d %s", failing[c], label))
	}
	return fmt.Sprintf("%d cases, %s", len(rep.Records), strings.Join(parts, ", ")), bad
}

func checkMerged(rep *report.Report, n, shards int) (string, []string) {
	var bad []string
	seen := map[string]bool{}
	for _, r := range rep.Records {
		seen[r.Case] = true
	}
	if len(rep.Records) != n || len(seen) != n {
		bad = append(bad, fmt.Sprintf("%d records of %d cases, want each of the %d cases once", len(rep.Records), len(seen), n))
	}
	if rep.Header.MergedShards != shards {
		bad = append(bad, fmt.Sprintf("merged_shards %d, want %d", rep.Header.MergedShards, shards))
	}
	if s := rep.Summary; s == nil || s.Failed == 0 || s.Passed+s.Failed != n {
		bad = append(bad, fmt.Sprintf("summary %+v, want %d cases with a failure", s, n))
	}
	return fmt.Sprintf("%d cases merged from %d shards", n, shards), bad
}

func checkDevices(rep *report.Report, lost string, n int) (string, []string) {
	var bad []string
	if devs := rep.Header.Properties["devices"]; strings.Count(devs, "kerneldiff host emulator") != 2 {
		bad = append(bad, fmt.Sprintf("header devices %q, want two emulated devices", devs))
	}
	seen := map[string]bool{}
	per := map[string]int{}
	var fails []*difftest.Record
	for _, r := range rep.Records {
		seen[r.Case] = true
		per[r.Device]++
		if r.Verdict != difftest.VerdictPass {
			fails = append(fails, r)
		}
	}
	if len(rep.Records) != n || len(seen) != n {
		bad = append(bad, fmt.Sprintf("%d records of %d cases, want each of the %d quick cases once", len(rep.Records), len(seen), n))
	}
	if len(per) != 2 || per["0"] == 0 || per["1"] == 0 {
		bad = append(bad, fmt.Sprintf("cases per device %v: want both devices used", per))
	}
	describe := func() string {
		var s []string
		for _, r := range fails {
			s = append(s, fmt.Sprintf("%s on %q: %s %s", r.Case, r.Device, r.Class, cut(r.Message, 80)))
		}
		return "[" + strings.Join(s, "; ") + "]"
	}
	if lost == "" && len(fails) > 0 {
		bad = append(bad, "failures: "+describe())
	}
	if lost != "" && (len(fails) != 1 || fails[0].Device != lost || fails[0].Class != difftest.Crash || !strings.Contains(fails[0].Message, "killed")) {
		bad = append(bad, fmt.Sprintf("want one crash (killed) on device %s, got %s", lost, describe()))
	}
	var ds []string
	for d := range per {
		ds = append(ds, d)
	}
	sort.Strings(ds)
	var parts []string
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("device %s ran %d", d, per[d]))
	}
	ok := fmt.Sprintf("%d cases, %s", len(rep.Records), strings.Join(parts, ", "))
	if lost != "" && len(fails) > 0 {
		ok += fmt.Sprintf("; device %s killed at %s", lost, fails[0].Case)
	}
	return ok, bad
}
