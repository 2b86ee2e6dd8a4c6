// Command checkkernels verifies a kernel fatbin and its ptxas resource
// report (scripts/check-kernels runs it; scripts/build-kernels runs that
// after each nvcc build):
//
//	checkkernels FATBIN [--report PTXAS_REPORT] [--quiet]
//
// Checks, each failure named on stderr, exit status 1 if any fails:
//
//   - fatbin: the container (read by cuda.ParseFatbin, the reader the
//     harness loads images with) holds SASS (ELF) for sm_90, sm_100 and
//     sm_120 and PTX for sm_120, every image uncompressed, every ELF a CUDA
//     ELF (EM_CUDA) and every image defining each kernel entry point;
//   - report (with --report): ptxas compiled each entry point for each SASS
//     target, with 0 bytes spill stores and 0 bytes spill loads in every
//     function; prints registers, shared memory and stack per kernel and
//     target.
//
// No CUDA tool is needed. When cuobjdump is on PATH (or $CUOBJDUMP), its
// --list-elf/--list-ptx listing is compared with this reading as a second
// opinion. Exit status 2 on bad usage.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/kernels"
)

// entries are the kernel entry points every image must define: the one
// list of kernels/entries.txt (generated from the kernels' headers).
var entries, entriesErr = kernels.EntryNames()

var (
	sassArchs = []int{90, 100, 120}
	ptxArchs  = []int{120}
)

// flagCompressed marks an LZ4- (0x2000) or zstd-compressed (0x8000) payload.
const flagCompressed = 0x2000 | 0x8000

const emCUDA = 190

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = "usage: check-kernels FATBIN [--report PTXAS_REPORT] [--quiet]"

func run(args []string, stdout, stderr io.Writer) int {
	if entriesErr != nil {
		fmt.Fprintf(stderr, "check-kernels: %v\n", entriesErr)
		return 2
	}
	var report, path string
	quiet, haveReport := false, false
	var paths []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "--report":
			if i+1 >= len(args) {
				fmt.Fprintln(stderr, "check-kernels: --report needs a file")
				return 2
			}
			report, haveReport = args[i+1], true
			i++
		case "--quiet":
			quiet = true
		case "-h", "--help":
			fmt.Fprintln(stdout, usage)
			return 0
		default:
			paths = append(paths, a)
		}
	}
	if len(paths) != 1 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	path = paths[0]
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		fmt.Fprintf(stderr, "check-kernels: %s: no such file\n", path)
		return 1
	}
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "check-kernels: %v\n", err)
		return 1
	}
	errs, images := checkFatbin(path, data)
	note := ""
	if len(errs) == 0 {
		var cerr []string
		cerr, note = crossCheck(path, images)
		errs = append(errs, cerr...)
	}
	var rows []reportRow
	if haveReport {
		b, err := os.ReadFile(report)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: no such ptxas report", report))
		} else {
			var rerr []string
			rerr, rows = checkReport(report, string(b))
			errs = append(errs, rerr...)
		}
	}
	if !quiet {
		var parts []string
		for _, im := range images {
			parts = append(parts, fmt.Sprintf("%s sm_%d (%d bytes)", kindName(im), im.Arch, im.Size))
		}
		fmt.Fprintf(stdout, "%s: %s\n", path, strings.Join(parts, ", "))
		if note != "" {
			fmt.Fprintln(stdout, "  "+note)
		}
		if len(rows) > 0 {
			fmt.Fprintf(stdout, "  %-24s %-7s %5s %10s %6s\n", "kernel", "target", "regs", "smem", "stack")
			for _, r := range rows {
				regs := "None"
				if r.regs >= 0 {
					regs = strconv.Itoa(r.regs)
				}
				fmt.Fprintf(stdout, "  %-24s %-7s %5s %10d %6d\n", r.entry, r.arch, regs, r.smem, r.stack)
			}
		}
	}
	for _, e := range errs {
		fmt.Fprintln(stderr, "check-kernels: "+e)
	}
	if len(errs) > 0 {
		return 1
	}
	return 0
}

func kindName(im cuda.FatbinImage) string {
	switch im.Kind {
	case cuda.KindPTX:
		return "ptx"
	case cuda.KindELF, cuda.KindELFAlt:
		return "elf"
	}
	return fmt.Sprintf("kind%d", uint16(im.Kind))
}

// checkFatbin reads the images with cuda.ParseFatbin and checks each.
func checkFatbin(path string, data []byte) ([]string, []cuda.FatbinImage) {
	// A fatbin may end in zero padding after its last container, which
	// ParseFatbin (reading what the driver would be handed) refuses.
	images, err := cuda.ParseFatbin(trimPadding(data))
	if err != nil {
		return []string{fmt.Sprintf("%s: not a readable fatbin: %v", path, err)}, nil
	}
	var errs []string
	haveELF, havePTX := map[int]bool{}, map[int]bool{}
	for _, im := range images {
		where := fmt.Sprintf("%s: %s sm_%d image (payload at offset %d)", path, kindName(im), im.Arch, im.Offset)
		if im.Compressed || im.Flags&flagCompressed != 0 {
			errs = append(errs, fmt.Sprintf("%s is compressed (flags 0x%X); build with --compress-mode=none", where, im.Flags))
			continue
		}
		payload := data[im.Offset : im.Offset+im.Size]
		switch kindName(im) {
		case "elf":
			haveELF[im.Arch] = true
			if !bytes.HasPrefix(payload, []byte("\x7fELF")) {
				errs = append(errs, where+": payload is not ELF")
				continue
			}
			if len(payload) < 20 {
				errs = append(errs, where+": ELF header cut short")
				continue
			}
			if m := binary.LittleEndian.Uint16(payload[18:]); m != emCUDA {
				errs = append(errs, fmt.Sprintf("%s: ELF e_machine %d, want %d (EM_CUDA)", where, m, emCUDA))
			}
			for _, e := range entries {
				if !bytes.Contains(payload, []byte("\x00"+e+"\x00")) {
					errs = append(errs, fmt.Sprintf("%s: no symbol %s", where, e))
				}
			}
		case "ptx":
			havePTX[im.Arch] = true
			text := string(bytes.TrimRight(payload, "\x00"))
			if !regexp.MustCompile(fmt.Sprintf(`(?m)^\.target\s+sm_%d\b`, im.Arch)).MatchString(text) {
				errs = append(errs, fmt.Sprintf("%s: PTX lacks '.target sm_%d'", where, im.Arch))
			}
			for _, e := range entries {
				if !regexp.MustCompile(`\.entry\s+` + regexp.QuoteMeta(e) + `\s*\(`).MatchString(text) {
					errs = append(errs, fmt.Sprintf("%s: PTX lacks '.entry %s'", where, e))
				}
			}
		}
	}
	for _, a := range sassArchs {
		if !haveELF[a] {
			errs = append(errs, fmt.Sprintf("%s: no SASS (ELF) image for sm_%d", path, a))
		}
	}
	for _, a := range ptxArchs {
		if !havePTX[a] {
			errs = append(errs, fmt.Sprintf("%s: no PTX image for sm_%d", path, a))
		}
	}
	return errs, images
}

// trimPadding drops zero padding after the last container: it walks the
// containers by their headers and cuts at the first container boundary
// after which every byte is zero. Zero bytes inside a container (a PTX
// payload's terminator and alignment) are kept; a header it cannot read
// leaves data whole, for ParseFatbin to report.
func trimPadding(data []byte) []byte {
	le := binary.LittleEndian
	for pos := 0; pos+16 <= len(data); {
		if len(bytes.TrimRight(data[pos:], "\x00")) == 0 {
			return data[:pos]
		}
		size := le.Uint64(data[pos+8:]) + uint64(le.Uint16(data[pos+6:]))
		if size > uint64(len(data)-pos) {
			return data
		}
		pos += int(size)
	}
	return data
}

var cuobjdumpRe = regexp.MustCompile(`(ELF|PTX) file\s+\d+:.*?sm_(\d+)`)

// crossCheck compares cuobjdump's listing with this reading, when the
// tool is there.
func crossCheck(path string, images []cuda.FatbinImage) ([]string, string) {
	tool := os.Getenv("CUOBJDUMP")
	if tool == "" {
		tool, _ = exec.LookPath("cuobjdump")
	}
	if tool == "" {
		return nil, "cuobjdump not found; fatbin read directly only"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, tool, "--list-elf", "--list-ptx", path)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return []string{fmt.Sprintf("cuobjdump exited %d: %s", ee.ExitCode(), strings.TrimSpace(errb.String()))}, ""
		}
		return []string{fmt.Sprintf("cuobjdump failed to run: %v", err)}, ""
	}
	var theirs, ours []string
	for _, m := range cuobjdumpRe.FindAllStringSubmatch(out.String(), -1) {
		k := "ptx"
		if m[1] == "ELF" {
			k = "elf"
		}
		theirs = append(theirs, k+" "+m[2])
	}
	for _, im := range images {
		ours = append(ours, fmt.Sprintf("%s %d", kindName(im), im.Arch))
	}
	sort.Strings(theirs)
	sort.Strings(ours)
	if strings.Join(theirs, ",") != strings.Join(ours, ",") {
		return []string{fmt.Sprintf("cuobjdump lists %v, this reader %v", theirs, ours)}, ""
	}
	return nil, fmt.Sprintf("cuobjdump agrees (%d images)", len(theirs))
}

type reportRow struct {
	entry, arch       string
	regs, smem, stack int // regs −1: not reported
}

var (
	spillRe = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	entryRe = regexp.MustCompile(`Compiling entry function '([^']+)' for '(sm_\d+)'`)
	propsRe = regexp.MustCompile(`Function properties for (\S+)`)
	usedRe  = regexp.MustCompile(`Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?`)
)

// checkReport reads a ptxas -v report: spills anywhere are errors, and
// every entry point must have been compiled for every SASS target.
func checkReport(path, text string) ([]string, []reportRow) {
	var errs []string
	rows := map[[2]string]*reportRow{}
	var arch, entry, fn string
	for _, line := range strings.Split(text, "\n") {
		if m := entryRe.FindStringSubmatch(line); m != nil {
			entry, arch, fn = m[1], m[2], m[1]
			if rows[[2]string{entry, arch}] == nil {
				rows[[2]string{entry, arch}] = &reportRow{entry: entry, arch: arch, regs: -1}
			}
			continue
		}
		if m := propsRe.FindStringSubmatch(line); m != nil {
			fn = m[1]
			continue
		}
		if m := spillRe.FindStringSubmatch(line); m != nil {
			stack, _ := strconv.Atoi(m[1])
			st, _ := strconv.Atoi(m[2])
			ld, _ := strconv.Atoi(m[3])
			if st != 0 || ld != 0 {
				errs = append(errs, fmt.Sprintf("%s: %s for %s spills: %d bytes spill stores, %d bytes spill loads", path, fn, arch, st, ld))
			}
			if entry != "" && fn == entry {
				rows[[2]string{entry, arch}].stack = stack
			}
			continue
		}
		if m := usedRe.FindStringSubmatch(line); m != nil && entry != "" {
			r := rows[[2]string{entry, arch}]
			r.regs, _ = strconv.Atoi(m[1])
			r.smem = 0
			if m[3] != "" {
				r.smem, _ = strconv.Atoi(m[3])
			}
		}
	}
	for _, e := range entries {
		for _, a := range sassArchs {
			if rows[[2]string{e, fmt.Sprintf("sm_%d", a)}] == nil {
				errs = append(errs, fmt.Sprintf("%s: ptxas did not compile %s for sm_%d", path, e, a))
			}
		}
	}
	keys := make([][2]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	out := make([]reportRow, len(keys))
	for i, k := range keys {
		out[i] = *rows[k]
	}
	return errs, out
}
