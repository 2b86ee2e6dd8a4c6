// The hostile corpus: about a thousand malformed or misbehaving inputs,
// generated here (not checked in), across every surface a user or a child
// process controls: suite TOML, captures, JSON Lines reports for merge
// and report, bench reports, fatbins, environment variables, output
// paths, every subcommand's numeric flags, exec and serve programs, and
// signals. Every input must end with an exit code the README's table
// allows for it (most of them 2), never 3 (a crash of difftest), never a
// hang (each has 60 s), never more than 1 GiB allocated, and nothing it
// prints may hold a raw control sequence. Inputs whose rule is known must
// be refused (exit 2), not silently accepted. The outcome per surface is
// logged (go test -v -run TestHostileCorpus ./cmd/difftest).

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/cli"
	"github.com/kerneldiff/kerneldiff/internal/boundtest"
	"github.com/kerneldiff/kerneldiff/internal/testfatbin"
)

// hostile is one input of the corpus: a command line (run in-process
// through cli.Main, or with bin through the built binary, for inputs
// that start the GPU worker or need a real signal), the environment it
// adds, and the exit codes allowed.
type hostile struct {
	surface, name string
	args          []string
	env           []string // KEY=VALUE, for bin inputs only
	bin           bool
	want          []int // allowed exit codes
	// check, when set, inspects the outcome further (a file's state).
	check func(t *testing.T, code int, out string)
}

const (
	okOrRefused = iota // 0, 1 or 2
	refused            // 2 only
	passes             // 0 only: the valid input the others mutate
	unfinished         // 125 only: a shard without its summary line
)

func codes(kind int) []int {
	switch kind {
	case refused:
		return []int{2}
	case passes:
		return []int{0}
	case unfinished:
		return []int{125}
	}
	return []int{0, 1, 2}
}

// corpusEnv is the shared scratch of the corpus: valid inputs to mutate.
type corpusEnv struct {
	dir     string
	suite   string // a one-case topk suite file
	capture []byte // a capture of a failing topk case
	shards  [2][]byte
	fifo    string
	n       int
}

// file writes data to a new file in the corpus folder and returns its path.
func (e *corpusEnv) file(t *testing.T, ext string, data []byte) string {
	t.Helper()
	e.n++
	p := filepath.Join(e.dir, fmt.Sprintf("in%04d%s", e.n, ext))
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var hostileValues = []struct {
	v      string
	refuse bool // any size, count or setting given this must be refused
}{
	{"0", false}, {"-1", false}, {"1", false}, {"2147483648", false},
	{"1099511627776", true}, {"9223372036854775807", true}, {"-9223372036854775808", true},
	{"1e308", true}, {"nan", true}, {"inf", true}, {"-inf", true},
	{`"x"`, true}, {`"\u001b[2J"`, true}, {"{}", true}, {"true", true}, {"[]", false},
	{"[1099511627776]", true}, {"[-1]", false}, {"[0]", false},
}

// suiteBases are one valid entry per kernel and the params each takes.
var suiteBases = []struct{ head, params string }{
	{"kernel = \"topk_transform\"\nfamily = \"gaussian\"\nname = \"t\"", "K = 8\nP = 2\nlengths = [5, 9]\nbatch = 2\nstride = 16"},
	{"kernel = \"indexer_logits\"\nfamily = \"gaussian\"\nname = \"l\"", "lengths = [33]\nbatch = 1\nstride = 40\nP = 16\nH = 2\nnum_pages = 4\nmax_pages = 3\naccum_bits = 24"},
	{"kernel = \"norm_rope_store\"\nfamily = \"gaussian\"\nname = \"n\"", "N = 9\nP = 16\nx_stride = 128\nmax_pos = 64\nnum_pages = 2\neps = 1e-6"},
	{"kernel = \"pipeline\"\nfamily = \"needle\"\nname = \"p\"", "lengths = [600]\nbatch = 1\nK = 16\nH = 2\nP = 16\nmargin = 1"},
}

func suiteInputs(t *testing.T, e *corpusEnv) []hostile {
	var hs []hostile
	add := func(name string, data string, kind int) {
		hs = append(hs, hostile{surface: "suite TOML", name: name, args: []string{"list", "cases", "--suite", e.file(t, ".toml", []byte(data))}, want: codes(kind)})
	}
	for _, b := range suiteBases {
		good := "[[case]]\n" + b.head + "\n[case.params]\n" + b.params + "\n"
		add(b.head[10:30]+" as written", good, passes)
		for _, line := range strings.Split(b.params, "\n") {
			key := strings.TrimSpace(strings.SplitN(line, "=", 2)[0])
			for _, hv := range hostileValues {
				v := hv.v
				isList := strings.HasPrefix(strings.TrimSpace(strings.SplitN(line, "=", 2)[1]), "[")
				if isList != strings.HasPrefix(v, "[") && v != "[]" && !hv.refuse {
					continue
				}
				if v == "[]" && !isList {
					v = "[]"
				}
				kind := okOrRefused
				if hv.refuse {
					kind = refused
				}
				// A float (eps, margin) may be any finite value its range
				// holds: 2^40 is a normal f32 epsilon.
				if (key == "eps" || key == "margin") && !strings.ContainsAny(v, "n\"[{t") && v != "1e308" {
					kind = okOrRefused
				}
				// Key 0 where the documented range starts at 1 (topk and
				// logits stride, batch, max_pages, num_pages; K, H, P).
				if (v == "0" || v == "-1") && strings.Contains(" K H P N batch stride max_pages num_pages x_stride max_pos accum_bits ", " "+key+" ") {
					kind = refused
				}
				params := strings.Replace(b.params, line, key+" = "+v, 1)
				add(fmt.Sprintf("%s %s = %s", b.head[10:30], key, v), "[[case]]\n"+b.head+"\n[case.params]\n"+params+"\n", kind)
			}
		}
		// An unknown key at each level.
		add("unknown key in [[case]]", "[[case]]\n"+b.head+"\nmatrix = 5\n[case.params]\n"+b.params+"\n", refused)
		add("typo key in [[case]]", "[[case]]\n"+b.head+"\nkernal = 5\n[case.params]\n"+b.params+"\n", refused)
		add("unknown param", "[[case]]\n"+b.head+"\n[case.params]\n"+b.params+"\nfrobnicate = 1\n", refused)
		add("top-level key", "seed = 3\n[[case]]\n"+b.head+"\n[case.params]\n"+b.params+"\n", refused)
		add("ESC in name", strings.Replace(good, "name = \"", "name = \"\\u001b[2J", 1), refused)
		add("newline in name", strings.Replace(good, "name = \"", "name = \"a\\nb", 1), refused)
		add("space in name", strings.Replace(good, "name = \"", "name = \"a b", 1), refused)
		add("U+FFFE in name", strings.Replace(good, "name = \"", "name = \"\\uFFFE", 1), okOrRefused)
		add("duplicate case", good+good, refused)
		add("[case] not [[case]]", strings.Replace(good, "[[case]]", "[case]", 1), refused)
		add("huge matrix", "[[case]]\n"+b.head+"-{i}\n[case.params]\n"+b.params+"\n[case.matrix]\ni = ["+strings.Repeat("1,", 20000)+"1]\n", refused)
		for cut := 1; cut < len(good); cut += 11 {
			add(fmt.Sprintf("%s cut at %d", b.head[10:30], cut), good[:cut], okOrRefused)
		}
	}
	add("empty", "", refused)
	add("deep nesting", "x = "+strings.Repeat("[", 100000), refused)
	add("2 MiB of comments", strings.Repeat("# "+strings.Repeat("x", 1022)+"\n", 2048), refused)
	add("NUL bytes", "\x00\x00\x00", refused)
	add("invalid UTF-8", "[[case]]\nkernel = \"\xff\xfe\"\n", refused)
	add("unknown kernel with ESC", "[[case]]\nkernel = \"\\u001b]0;pwned\\u0007\"\nfamily = \"x\"\nname = \"y\"\n", refused)
	for _, special := range []string{"/dev/zero", "/dev/null", e.fifo, e.dir} {
		hs = append(hs, hostile{surface: "suite TOML", name: "--suite " + special, args: []string{"list", "cases", "--suite", special}, want: codes(refused)})
	}
	return hs
}

// captureInputs mutates a valid capture: truncations, header lengths,
// header fields, metadata, special files.
func captureInputs(t *testing.T, e *corpusEnv) []hostile {
	var hs []hostile
	good := e.capture
	add := func(name string, data []byte, kind int) {
		hs = append(hs, hostile{surface: "capture", name: name, args: []string{"replay", "--impl", "reference", e.file(t, ".safetensors", data)}, want: codes(kind)})
	}
	add("as written", good, passes)
	n := binary.LittleEndian.Uint64(good)
	body := good[8+n:]
	withHeader := func(h string) []byte {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
		return append(append(b, h...), body...)
	}
	for cut := 0; cut < len(good); cut += max(1, len(good)/60) {
		add(fmt.Sprintf("cut at %d", cut), good[:cut], refused)
	}
	for _, hl := range []uint64{0, 1, n - 1, n + 1, uint64(len(good)), 1 << 31, 1 << 40, 1<<64 - 1} {
		b := append([]byte(nil), good...)
		binary.LittleEndian.PutUint64(b, hl)
		add(fmt.Sprintf("header length %d", hl), b, refused)
	}
	var meta map[string]any
	if err := json.Unmarshal(good[8:8+n], &meta); err != nil {
		t.Fatal(err)
	}
	md, _ := meta["__metadata__"].(map[string]any)
	for key := range md {
		for _, v := range []any{"", "\u001b[2J\u001b]0;x\u0007", "\uFFFE", 5, nil, strings.Repeat("x", 1<<20), "norm_rope_store/x", "{", "-1", "18446744073709551616"} {
			m2 := map[string]any{}
			for k, x := range md {
				m2[k] = x
			}
			m2[key] = v
			meta2 := map[string]any{}
			for k, x := range meta {
				meta2[k] = x
			}
			meta2["__metadata__"] = m2
			b, _ := json.Marshal(meta2)
			kind := okOrRefused
			if key == "case" && v == "norm_rope_store/x" {
				kind = refused // a case id of another kernel
			}
			if (key == "kernel" || key == "params") && v != nil {
				kind = refused
			}
			add(fmt.Sprintf("metadata %s = %.20v", key, v), withHeader(string(b)), kind)
		}
	}
	for name := range meta {
		if name == "__metadata__" {
			continue
		}
		for _, edit := range []struct{ field, v string }{
			{"dtype", `"F8_E4M3"`}, {"dtype", `"\u001b[2J"`}, {"dtype", `7`},
			{"shape", `[4294967296,4294967296]`}, {"shape", `[-1]`}, {"shape", `[]`}, {"shape", `"x"`},
			{"data_offsets", `[0,18446744073709551615]`}, {"data_offsets", `[18446744073709551615,0]`}, {"data_offsets", `[0,0]`}, {"data_offsets", `[1,2,3]`},
		} {
			var m2 map[string]any
			_ = json.Unmarshal(good[8:8+n], &m2)
			tm, _ := m2[name].(map[string]any)
			var v any
			_ = json.Unmarshal([]byte(edit.v), &v)
			tm[edit.field] = v
			b, _ := json.Marshal(m2)
			add(fmt.Sprintf("tensor %s %s = %s", name, edit.field, edit.v), withHeader(string(b)), okOrRefused)
		}
	}
	add("header not JSON", withHeader("{"+strings.Repeat(" ", 10)), refused)
	add("header a JSON array", withHeader("[]"), refused)
	add("header nested 100000 deep", withHeader(strings.Repeat("[", 100000)), refused)
	for _, special := range []string{"/dev/zero", "/dev/null", e.fifo, e.dir} {
		hs = append(hs, hostile{surface: "capture", name: "replay " + special, args: []string{"replay", "--impl", "reference", special}, want: codes(refused)})
	}
	return hs
}

// jsonlInputs mutates a valid pair of shard reports, line by line and
// field by field, for merge and report.
func jsonlInputs(t *testing.T, e *corpusEnv) []hostile {
	var hs []hostile
	lines := [2][]string{}
	for i := range e.shards {
		lines[i] = strings.Split(strings.TrimRight(string(e.shards[i]), "\n"), "\n")
	}
	add := func(name string, a []string, kind int) {
		pa := e.file(t, ".jsonl", []byte(strings.Join(a, "\n")+"\n"))
		pb := e.file(t, ".jsonl", []byte(strings.Join(lines[1], "\n")+"\n"))
		hs = append(hs, hostile{surface: "JSON Lines", name: "merge: " + name, args: []string{"merge", "-o", filepath.Join(e.dir, fmt.Sprintf("merged%d.jsonl", e.n)), pa, pb}, want: codes(kind)})
		rkind := okOrRefused
		if kind == passes {
			rkind = passes
		}
		hs = append(hs, hostile{surface: "JSON Lines", name: "report: " + name, args: []string{"report", pa, "-o", filepath.Join(e.dir, fmt.Sprintf("r%d.html", e.n))}, want: codes(rkind)})
	}
	add("as written", lines[0], passes)
	for i := range lines[0] {
		drop := append(append([]string(nil), lines[0][:i]...), lines[0][i+1:]...)
		dropKind := refused
		if i == len(lines[0])-1 {
			dropKind = unfinished // no summary: the shard did not finish
		}
		add(fmt.Sprintf("line %d dropped", i+1), drop, dropKind)
		dup := append(append([]string(nil), lines[0][:i+1]...), lines[0][i:]...)
		add(fmt.Sprintf("line %d twice", i+1), dup, refused)
		var m map[string]any
		if err := json.Unmarshal([]byte(lines[0][i]), &m); err != nil {
			t.Fatal(err)
		}
		for key := range m {
			for _, v := range []any{nil, -1, 1 << 62, "x", "\u001b[2J", "\uFFFE", []any{}, map[string]any{}, 1e308} {
				m2 := map[string]any{}
				for k, x := range m {
					m2[k] = x
				}
				m2[key] = v
				b, _ := json.Marshal(m2)
				mut := append([]string(nil), lines[0]...)
				mut[i] = string(b)
				kind := okOrRefused
				switch key {
				case "type", "index", "case", "seed", "cases", "repeat", "passed", "failed", "verdict", "suite", "kernel":
					kind = refused
				}
				// A field left out reads as its zero value, which may be
				// the value it had (index 0, 0 failed, no kernel named).
				if v == nil && (key == "index" || key == "passed" || key == "failed" || key == "kernel" || key == "seed") {
					kind = okOrRefused
				}
				add(fmt.Sprintf("line %d %s = %.20v", i+1, key, v), mut, kind)
			}
		}
	}
	add("trailing garbage", append(append([]string(nil), lines[0]...), "{"), refused)
	add("a 9 MiB line", append(append([]string(nil), lines[0]...), `{"type":"case","message":"`+strings.Repeat("x", 9<<20)+`"}`), refused)
	add("no header", lines[0][1:], refused)
	for _, special := range []string{"/dev/zero", "/dev/null", e.fifo, e.dir} {
		hs = append(hs, hostile{surface: "JSON Lines", name: "merge " + special, args: []string{"merge", "-o", filepath.Join(e.dir, "m.jsonl"), special}, want: codes(refused)})
		hs = append(hs, hostile{surface: "JSON Lines", name: "report " + special, args: []string{"report", special, "-o", filepath.Join(e.dir, "m.html")}, want: codes(refused)})
	}
	return hs
}

func benchInputs(t *testing.T, e *corpusEnv) []hostile {
	var hs []hostile
	good := `{"type":"bench","version":1,"suite":"bench","impl":"emu","results":[{"case":"topk_transform/a","kernel":"topk_transform","builds":[{"name":"emu","verdict":"pass","times_ns":[1000,1100,1200]}]}]}`
	add := func(name, data string, kind int) {
		hs = append(hs, hostile{surface: "bench JSON", name: name, args: []string{"report", e.file(t, ".json", []byte(data)), "-o", filepath.Join(e.dir, fmt.Sprintf("b%d.html", e.n))}, want: codes(kind)})
	}
	add("as written", good, passes)
	for _, edit := range []struct{ from, to string }{
		{`"type":"bench"`, `"type":"benchx"`}, {`"version":1`, `"version":99`}, {`"version":1`, `"version":-1`},
		{`"suite":"bench"`, `"suite":"\u001b[2J\u001b]0;x\u0007"`}, {`"suite":"bench"`, `"suite":"\uFFFE"`},
		{`[1000,1100,1200]`, `[-1]`}, {`[1000,1100,1200]`, `[1e308]`}, {`[1000,1100,1200]`, `["x"]`}, {`[1000,1100,1200]`, `[]`},
		{`"builds":[`, `"builds":[],"x":[`}, {`"results":[`, `"results":[null,`}, {`"case":"topk_transform/a"`, `"case":"\u001b[31m"`},
		{`"verdict":"pass"`, `"verdict":"\u001b[2J"`}, {`"name":"emu"`, `"name":"\uFFFE"`},
		{`}]}]}`, `}]}]`}, {`"impl":"emu"`, `"impl":{}`},
	} {
		kind := okOrRefused
		if strings.Contains(edit.to, "benchx") || strings.Contains(edit.to, "99") || edit.to == `}]}]` || strings.Contains(edit.to, `"builds":[]`) || strings.Contains(edit.to, "null") || strings.Contains(edit.to, "[-1]") {
			kind = refused
		}
		add(edit.from+" → "+edit.to, strings.Replace(good, edit.from, edit.to, 1), kind)
	}
	add("a 300 MiB file", "", refused)
	big := filepath.Join(e.dir, "big.json")
	if f, err := os.Create(big); err == nil {
		_ = f.Truncate(300 << 20)
		f.Close()
		hs[len(hs)-1].args[1] = big
	}
	return hs
}

// fatbinInputs run the built binary (the cuda implementation starts its
// worker process): each fatbin must be refused or reported untestable
// (no GPU here: 125), never hang or read without bound.
func fatbinInputs(t *testing.T, e *corpusEnv) []hostile {
	var hs []hostile
	fb := testfatbin.KParams
	sparse := filepath.Join(e.dir, "sparse.fatbin")
	if f, err := os.Create(sparse); err == nil {
		_ = f.Truncate(6 << 30)
		f.Close()
	}
	paths := map[string]string{"/dev/zero": "/dev/zero", "FIFO": e.fifo, "folder": e.dir, "sparse 6 GiB": sparse, "missing": filepath.Join(e.dir, "none.fatbin"),
		"empty": e.file(t, ".fatbin", nil), "ESC in name": e.file(t, ".\x1b[2J.fatbin", fb)}
	for cut := 0; cut < len(fb); cut += max(1, len(fb)/12) {
		paths[fmt.Sprintf("cut at %d", cut)] = e.file(t, ".fatbin", fb[:cut])
	}
	for _, off := range []int{4, 8, 12, 16, 20, 24} {
		b := append([]byte(nil), fb...)
		binary.LittleEndian.PutUint32(b[off:], 0xFFFFFFF0)
		paths[fmt.Sprintf("size word at %d huge", off)] = e.file(t, ".fatbin", b)
	}
	names := make([]string, 0, len(paths))
	for n := range paths {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := paths[n]
		hs = append(hs,
			hostile{surface: "fatbin", name: "run --fatbin " + n, bin: true, args: []string{"run", "--impl", "cuda", "--suite", smallSuite, "--fatbin", p}, want: []int{2, 125}},
			hostile{surface: "fatbin", name: "info --fatbin " + n, bin: true, args: []string{"info", "--fatbin", p}, want: []int{0, 1, 2, 125}},
			hostile{surface: "fatbin", name: "bench --baseline " + n, bin: true, args: []string{"bench", "--impl", "cuda", "--suite", smallSuite, "--fatbin", paths["cut at 0"], "--baseline", p}, want: []int{2, 125}},
		)
	}
	return hs
}

func envInputs(t *testing.T, e *corpusEnv) []hostile {
	var hs []hostile
	for _, v := range []string{e.fifo, "/dev/zero", e.dir, "/dev/null", filepath.Join(e.dir, "none.so"), "\x1b[2J", "relative/lib.so", e.file(t, ".so", []byte("not an ELF"))} {
		hs = append(hs,
			hostile{surface: "env", name: "KD_LIBCUDA=" + v + " run", bin: true, env: []string{"KD_LIBCUDA=" + v}, args: []string{"run", "--impl", "cuda", "--suite", smallSuite, "--fatbin", e.file(t, ".fatbin", testfatbin.KParams)}, want: []int{125}},
			hostile{surface: "env", name: "KD_LIBCUDA=" + v + " info", bin: true, env: []string{"KD_LIBCUDA=" + v}, args: []string{"info"}, want: []int{0, 1, 125}},
			hostile{surface: "env", name: "KD_LIBCUDA=" + v + " emu", bin: true, env: []string{"KD_LIBCUDA=" + v}, args: []string{"run", "--impl", "emu", "--suite", smallSuite}, want: []int{125}},
		)
	}
	for _, v := range []string{"", "1/0", "-1/2", "3/2", "2/2", "0/-1", "a/b", "9223372036854775807/9223372036854775808", "1/18446744073709551616", "\x1b[2J/3", "0/1/2", " 0/2", "0/2\n"} {
		hs = append(hs, hostile{surface: "env", name: "KD_SHARD=" + v, bin: true, env: []string{"KD_SHARD=" + v}, args: []string{"run", "--impl", "reference", "--suite", smallSuite, "--shard", "auto"}, want: []int{0, 2}})
	}
	for _, v := range [][]string{
		{"SLURM_ARRAY_TASK_ID=5", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_COUNT=2"},
		{"SLURM_ARRAY_TASK_ID=-1", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_COUNT=2"},
		{"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_COUNT=0"},
		{"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_COUNT=9223372036854775808"},
		{"SLURM_ARRAY_TASK_ID=2", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_COUNT=2", "SLURM_ARRAY_TASK_STEP=0"},
		{"JOB_COMPLETION_INDEX=3", "KD_SHARD_COUNT=2"},
		{"JOB_COMPLETION_INDEX=0", "KD_SHARD_COUNT=-2"},
		{"JOB_COMPLETION_INDEX=\x1b[2J", "KD_SHARD_COUNT=2"},
		{"KD_SHARD=0/2", "JOB_COMPLETION_INDEX=1", "KD_SHARD_COUNT=2"},
	} {
		hs = append(hs, hostile{surface: "env", name: strings.Join(v, " "), bin: true, env: v, args: []string{"run", "--impl", "reference", "--suite", smallSuite, "--shard", "auto"}, want: []int{2}})
	}
	for _, v := range []string{"-1s", "x", "1e400h", "9223372036854775807ns", "\x1b[2J"} {
		hs = append(hs, hostile{surface: "env", name: "KD_EXIT_GRACE=" + v, bin: true, env: []string{"KD_EXIT_GRACE=" + v}, args: []string{"run", "--impl", "cuda", "--suite", smallSuite, "--fatbin", e.file(t, ".fatbin", testfatbin.KParams)}, want: []int{2, 125}})
	}
	return hs
}

func outputInputs(t *testing.T, e *corpusEnv) []hostile {
	var hs []hostile
	shard := e.file(t, ".jsonl", e.shards[0])
	shard2 := e.file(t, ".jsonl", e.shards[1])
	capFile := e.file(t, ".safetensors", e.capture)
	cmds := []struct {
		name  string
		args  func(out string) []string
		input string
	}{
		{"run --json", func(o string) []string {
			return []string{"run", "--impl", "reference", "--suite", e.suite, "--json", o}
		}, e.suite},
		{"run --junit", func(o string) []string {
			return []string{"run", "--impl", "reference", "--suite", e.suite, "--junit", o}
		}, e.suite},
		{"replay --json", func(o string) []string { return []string{"replay", "--impl", "reference", capFile, "--json", o} }, capFile},
		{"merge -o", func(o string) []string { return []string{"merge", "-o", o, shard, shard2} }, shard},
		{"merge --junit", func(o string) []string {
			return []string{"merge", "-o", filepath.Join(e.dir, "mm.jsonl"), "--junit", o, shard, shard2}
		}, shard2},
		{"report -o", func(o string) []string { return []string{"report", shard, "-o", o} }, shard},
		{"bench --json", func(o string) []string {
			return []string{"bench", "--impl", "reference", "--suite", e.suite, "--json", o}
		}, e.suite},
		{"study --json", func(o string) []string { return []string{"study", "needle", "--lengths", "700", "--json", o} }, ""},
		{"study --svg", func(o string) []string { return []string{"study", "needle", "--lengths", "700", "--svg", o} }, ""},
	}
	for _, c := range cmds {
		targets := map[string]string{"a folder": e.dir, "a FIFO": e.fifo, "/dev/null": "/dev/null", "/dev/zero": "/dev/zero", "in a missing folder": filepath.Join(e.dir, "no", "x")}
		if c.input != "" {
			targets["its input"] = c.input
		}
		for what, p := range targets {
			want := []int{2}
			var check func(t *testing.T, code int, out string)
			if what == "a FIFO" {
				check = func(t *testing.T, code int, out string) {
					if st, err := os.Lstat(e.fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
						t.Errorf("the FIFO was replaced")
					}
				}
			}
			hs = append(hs, hostile{surface: "output path", name: c.name + " " + what, args: c.args(p), want: want, check: check})
		}
	}
	return hs
}

func flagInputs(t *testing.T, e *corpusEnv) []hostile {
	var hs []hostile
	vals := []string{"-1", "0", "-9223372036854775808", "9223372036854775807", "18446744073709551616", "1e9", "x", "", "0x10", "-0", "1.5"}
	type fl struct {
		cmd    []string
		flag   string
		refuse map[string]bool // values this flag must refuse (beyond a parse error, always refused)
	}
	neg := map[string]bool{"-1": true, "-9223372036854775808": true}
	big := map[string]bool{"9223372036854775807": true, "-1": true, "-9223372036854775808": true}
	flags := []fl{
		{[]string{"run", "--impl", "reference", "--suite", e.suite}, "--repeat", map[string]bool{"0": true, "-1": true, "-9223372036854775808": true, "9223372036854775807": true}},
		{[]string{"run", "--impl", "reference", "--suite", e.suite}, "--seed", nil},
		{[]string{"run", "--impl", "reference", "--suite", e.suite}, "--timeout", neg},
		{[]string{"run", "--impl", "reference", "--suite", e.suite}, "--device", neg},
		{[]string{"run", "--impl", "reference", "--suite", e.suite}, "--shard", map[string]bool{"-1": true, "0": true, "9223372036854775807": true}},
		{[]string{"bench", "--impl", "reference", "--suite", e.suite}, "--runs", map[string]bool{"0": true, "-1": true, "9223372036854775807": true, "-9223372036854775808": true, "1e9": true}},
		{[]string{"bench", "--impl", "reference", "--suite", e.suite}, "--warmup", big},
		{[]string{"bench", "--impl", "reference", "--suite", e.suite}, "--device", neg},
		{[]string{"bench", "--impl", "reference", "--suite", e.suite, "--baseline", "reference"}, "--max-slowdown", map[string]bool{"-1": true, "0": true, "-9223372036854775808": true}},
		{[]string{"study", "needle", "--lengths", "700", "--margin", "1", "--H", "1"}, "--K", map[string]bool{"-1": true, "0": true, "9223372036854775807": true, "-9223372036854775808": true}},
		{[]string{"study", "needle", "--lengths", "700", "--margin", "1"}, "--H", map[string]bool{"-1": true, "0": true, "9223372036854775807": true, "-9223372036854775808": true}},
		{[]string{"study", "needle", "--lengths", "700", "--margin", "1", "--H", "1"}, "--P", map[string]bool{"-1": true, "0": true, "9223372036854775807": true, "-9223372036854775808": true}},
		{[]string{"study", "needle", "--margin", "1", "--H", "1"}, "--lengths", map[string]bool{"-1": true, "0": true, "9223372036854775807": true, "-9223372036854775808": true, "1e9": true}},
		{[]string{"study", "needle", "--lengths", "700", "--H", "1"}, "--margin", map[string]bool{"-9223372036854775808": true, "9223372036854775807": true, "1e9": true, "18446744073709551616": true}},
		{[]string{"study", "needle", "--lengths", "700", "--margin", "1", "--H", "1"}, "--timeout", neg},
		{[]string{"study", "needle", "--lengths", "700", "--margin", "1", "--H", "1"}, "--device", neg},
		{[]string{"shrink", "--impl", "reference", "--suite", e.suite, "--run", "."}, "--budget", map[string]bool{"-1": true, "0": true, "-9223372036854775808": true}},
		{[]string{"shrink", "--impl", "reference", "--suite", e.suite, "--run", "."}, "--timeout", neg},
		{[]string{"selftest", "--suite", e.suite}, "--seed", nil},
	}
	for _, f := range flags {
		for _, v := range vals {
			kind := okOrRefused
			if f.refuse[v] {
				kind = refused
			}
			args := append(append([]string(nil), f.cmd...), f.flag+"="+v)
			hs = append(hs, hostile{surface: "flags", name: strings.Join(args[:1], " ") + " " + f.flag + "=" + v, args: args, want: append(codes(kind), 125)})
		}
	}
	return hs
}

// programInputs are exec and serve programs that misbehave.
func programInputs(t *testing.T, e *corpusEnv) []hostile {
	var hs []hostile
	script := func(body string) string {
		e.n++
		p := filepath.Join(e.dir, fmt.Sprintf("prog%d.sh", e.n))
		writeScript(t, p, body)
		return p
	}
	junitParses := func(path string) func(t *testing.T, code int, out string) {
		return func(t *testing.T, code int, out string) {
			b, err := os.ReadFile(path)
			if err != nil {
				return // refused before the run
			}
			d := xml.NewDecoder(bytes.NewReader(b))
			for {
				if _, err := d.Token(); err == io.EOF {
					return
				} else if err != nil {
					t.Errorf("JUnit %s does not parse: %v", path, err)
					return
				}
			}
		}
	}
	// The sleeper outlasts --timeout 3s (exec kills it there) and exits
	// well within proc.ServeHelloTimeout, so serve waits out the sleep
	// and sees it exit without a hello: 8 s reaches both as 30 s did.
	bodies := map[string]string{
		"exits 0 writing nothing":        "exit 0",
		"ESC and U+FFFE on stderr, exit": "printf '\\033[2J\\033]0;pwned\\007\\357\\277\\276\\357\\277\\277\\001 boom\\n' >&2; exit 1",
		"50 MB on stderr":                "head -c 50000000 /dev/zero >&2; exit 1",
		"garbage on stdout":              "head -c 1000000 /dev/urandom; exit 0",
		"killed by SIGSEGV":              "kill -SEGV $$",
		"sleeps past the time-out":       "sleep 8",
		"setsid child holds stdout":      "setsid sleep 30 & exit 0",
	}
	names := make([]string, 0, len(bodies))
	for n := range bodies {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := script(bodies[n])
		for _, mode := range []string{"exec", "serve"} {
			junit := filepath.Join(e.dir, fmt.Sprintf("j%d-%s.xml", e.n, mode))
			hs = append(hs, hostile{surface: "exec and serve programs", name: mode + ": " + n,
				args: []string{"run", "--impl", mode + ":" + p, "--suite", e.suite, "--timeout", "3s", "--junit", junit}, want: []int{1, 125}, check: junitParses(junit)})
		}
	}
	return hs
}

// signalInputs stop the built binary with a signal while it waits on a
// child or on a reader: each must exit 128 + N within seconds.
func signalInputs(t *testing.T, e *corpusEnv) []hostile {
	var hs []hostile
	noHello := filepath.Join(e.dir, "nohello.sh")
	writeScript(t, noHello, "sleep 60")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		hs = append(hs, hostile{surface: "signals", name: fmt.Sprintf("%v waiting for a serve hello", sig), bin: true,
			args: []string{"run", "--impl", "serve:" + noHello, "--suite", e.suite, "--timeout", "0"}, want: []int{128 + int(sig)}, env: []string{fmt.Sprintf("KD_CORPUS_SIGNAL=%d", sig)}})
		hs = append(hs, hostile{surface: "signals", name: fmt.Sprintf("%v writing to a stalled --json FIFO", sig), bin: true,
			args: []string{"run", "--impl", "reference", "--suite", smallSuite, "--repeat", "2000", "--json", "STALLED_FIFO"}, want: []int{128 + int(sig)}, env: []string{fmt.Sprintf("KD_CORPUS_SIGNAL=%d", sig)}})
	}
	return hs
}

// hasRawControl reports a control sequence difftest should have escaped:
// ESC, CSI (U+009B), BEL, or a bidi override.
func hasRawControl(s string) bool {
	return strings.ContainsAny(s, "\x1b\u009b\x07\u202e\u2066")
}

func TestHostileCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("the hostile corpus takes a minute or two")
	}
	bin := difftestBinary(t)
	e := &corpusEnv{dir: t.TempDir()}
	e.fifo = boundtest.FIFO(t, filepath.Join(e.dir, "a.fifo"))
	small, err := os.ReadFile(smallSuite)
	if err != nil {
		t.Fatal(err)
	}
	e.suite = e.file(t, ".toml", small)
	// The valid inputs the corpus mutates.
	capDir := filepath.Join(e.dir, "caps")
	if code := runMain(nil, "run", "--impl", "mutant:topk-tie-hole", "--suite", e.suite, "--save-failures", capDir); code != 1 {
		t.Fatalf("making a capture: exit %d", code)
	}
	caps, _ := filepath.Glob(filepath.Join(capDir, "*.safetensors"))
	if len(caps) == 0 {
		t.Fatal("no capture")
	}
	if e.capture, err = os.ReadFile(caps[0]); err != nil {
		t.Fatal(err)
	}
	for i, sh := range []string{"0/2", "1/2"} {
		p := filepath.Join(e.dir, fmt.Sprintf("shard%d.jsonl", i))
		if code := runMain(nil, "run", "--impl", "reference", "--suite", smallSuite, "--repeat", "2", "--shard", sh, "--json", p); code != 0 {
			t.Fatalf("shard %s: exit %d", sh, code)
		}
		e.shards[i], _ = os.ReadFile(p)
	}

	var corpus []hostile
	for _, gen := range []func(*testing.T, *corpusEnv) []hostile{suiteInputs, captureInputs, jsonlInputs, benchInputs, fatbinInputs, envInputs, outputInputs, flagInputs, programInputs, signalInputs} {
		corpus = append(corpus, gen(t, e)...)
	}
	type tally struct {
		n     int
		codes map[int]int
		bad   int
	}
	bySurface := map[string]*tally{}
	var order []string
	start := time.Now()
	for _, h := range corpus {
		tl := bySurface[h.surface]
		if tl == nil {
			tl = &tally{codes: map[int]int{}}
			bySurface[h.surface] = tl
			order = append(order, h.surface)
		}
		tl.n++
		code, out, problem := runHostile(t, bin, e, h)
		tl.codes[code]++
		if problem == "" && !slices.Contains(h.want, code) {
			problem = fmt.Sprintf("exit %d, want one of %v", code, h.want)
		}
		if problem == "" && hasRawControl(out) {
			problem = "printed a raw control sequence"
		}
		if problem != "" {
			tl.bad++
			t.Errorf("%s: %s: %s\n%s", h.surface, h.name, problem, tailLines(out, 6))
			continue
		}
		if h.check != nil {
			h.check(t, code, out)
		}
	}
	total := 0
	for _, s := range order {

		tl := bySurface[s]
		total += tl.n
		var cs []string
		for c, k := range tl.codes {
			cs = append(cs, fmt.Sprintf("exit %d ×%d", c, k))
		}
		sort.Strings(cs)
		t.Logf("%-24s %4d inputs: %s; %d wrong", s, tl.n, strings.Join(cs, ", "), tl.bad)
	}
	t.Logf("%d inputs in %v", total, time.Since(start).Round(time.Second))
}

func tailLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	for i := range l {
		if len(l[i]) > 300 {
			l[i] = l[i][:300] + "…"
		}
	}
	return strings.Join(l, "\n")
}

// runMain runs the command line in-process, discarding its output.
func runMain(ctx context.Context, args ...string) int {
	if ctx == nil {
		ctx = context.Background()
	}
	return cli.Main(ctx, args, io.Discard, io.Discard)
}

// runHostile runs one input and returns its exit code, its output and a
// problem (a hang, a crash, too much memory) or "".
func runHostile(t *testing.T, bin string, e *corpusEnv, h hostile) (int, string, string) {
	const limit = 60 * time.Second
	if !h.bin {
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		var o, er bytes.Buffer
		done := make(chan int, 1)
		go func() { done <- cli.Main(context.Background(), h.args, &o, &er) }()
		select {
		case code := <-done:
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			out := o.String() + er.String()
			if code == 3 {
				return code, out, "difftest crashed (exit 3)"
			}
			if d := after.TotalAlloc - before.TotalAlloc; d > 1<<30 {
				return code, out, fmt.Sprintf("allocated %d MiB", d>>20)
			}
			return code, out, ""
		case <-time.After(limit):
			return -1, o.String() + er.String(), fmt.Sprintf("still running after %v (a hang)", limit)
		}
	}
	args := append([]string(nil), h.args...)
	var sig syscall.Signal
	var stalled *os.File
	for _, kv := range h.env {
		if v, ok := strings.CutPrefix(kv, "KD_CORPUS_SIGNAL="); ok {
			var n int
			fmt.Sscan(v, &n)
			sig = syscall.Signal(n)
		}
	}
	for i, a := range args {
		if a == "STALLED_FIFO" {
			p := boundtest.FIFO(t, filepath.Join(e.dir, fmt.Sprintf("stalled%d.fifo", e.n)))
			e.n++
			rd, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				t.Fatal(err)
			}
			stalled = rd
			args[i] = p
		}
	}
	if stalled != nil {
		defer stalled.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), h.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if sig != 0 {
		time.AfterFunc(1500*time.Millisecond, func() { _ = cmd.Process.Signal(sig) })
	}
	err := cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if ctx.Err() != nil {
		return -1, out.String(), fmt.Sprintf("still running after %v (a hang)", limit)
	}
	code := 0
	if err != nil {
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), out.String(), fmt.Sprintf("killed by %v", ws.Signal())
		}
		code = cmd.ProcessState.ExitCode()
	}
	if code == 3 || (code == 2 && strings.Contains(out.String(), "fatal error:")) || strings.Contains(out.String(), "goroutine ") {
		return code, out.String(), "difftest crashed"
	}
	return code, out.String(), ""
}
