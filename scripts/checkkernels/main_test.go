package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// entry is one image of a hand-built fatbin.
type entry struct {
	kind       uint16 // 1 PTX, 2 ELF
	arch       uint32
	payload    []byte
	compressed uint32 // the compressed-size field
}

// fatbin lays out one container as nvcc 13.0 writes it with
// --compress-mode=none: a 16-byte container header, then per entry a
// 64-byte header and its payload; pad zero bytes follow.
func fatbin(pad int, es ...entry) []byte {
	var body []byte
	for _, e := range es {
		h := make([]byte, 64)
		binary.LittleEndian.PutUint16(h[0:], e.kind)
		binary.LittleEndian.PutUint32(h[4:], 64)
		binary.LittleEndian.PutUint64(h[8:], uint64(len(e.payload)))
		binary.LittleEndian.PutUint32(h[16:], e.compressed)
		binary.LittleEndian.PutUint32(h[28:], e.arch)
		body = append(append(body, h...), e.payload...)
	}
	h := make([]byte, 16)
	binary.LittleEndian.PutUint32(h[0:], 0xBA55ED50)
	binary.LittleEndian.PutUint16(h[4:], 1)
	binary.LittleEndian.PutUint16(h[6:], 16)
	binary.LittleEndian.PutUint64(h[8:], uint64(len(body)))
	return append(append(h, body...), make([]byte, pad)...)
}

// elf is a CUDA ELF payload (e_machine at byte 18) naming syms in its
// string table; machine 190 is EM_CUDA.
func elf(machine uint16, syms ...string) []byte {
	b := make([]byte, 64)
	copy(b, "\x7fELF")
	binary.LittleEndian.PutUint16(b[18:], machine)
	for _, s := range syms {
		b = append(b, append([]byte(s), 0)...)
	}
	return b
}

func ptx(arch int, syms ...string) []byte {
	s := fmt.Sprintf(".version 9.0\n.target sm_%d\n", arch)
	for _, e := range syms {
		s += ".visible .entry " + e + "(\n)\n"
	}
	return append([]byte(s), 0)
}

// good is every image the checks want.
func good() []entry {
	return []entry{
		{kind: 2, arch: 90, payload: elf(190, entries...)},
		{kind: 2, arch: 100, payload: elf(190, entries...)},
		{kind: 2, arch: 120, payload: elf(190, entries...)},
		{kind: 1, arch: 120, payload: ptx(120, entries...)},
	}
}

// report is a ptxas -v report that compiles every entry for every SASS
// target; spill adds spill stores to kd_norm_rope_store on sm_90.
func report(spill bool) string {
	var b strings.Builder
	for _, e := range entries {
		for _, a := range sassArchs {
			fmt.Fprintf(&b, "ptxas info    : Compiling entry function '%s' for 'sm_%d'\n", e, a)
			fmt.Fprintf(&b, "ptxas info    : Function properties for %s\n", e)
			st := 0
			if spill && e == "kd_norm_rope_store" && a == 90 {
				st = 8
			}
			fmt.Fprintf(&b, "    16 bytes stack frame, %d bytes spill stores, 0 bytes spill loads\n", st)
			fmt.Fprintf(&b, "ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]\n")
		}
	}
	return b.String()
}

func TestCheckKernels(t *testing.T) {
	withEntries := func(mod func([]entry) []entry) []byte { return fatbin(0, mod(good())...) }
	tests := []struct {
		name   string
		data   []byte
		report string
		rc     int
		want   []string // lines of stderr (check-kernels: ...) or stdout
	}{
		{"every image, clean report", fatbin(16, good()...), report(false), 0,
			[]string{"FATBIN: elf sm_90 (", "kd_norm_rope_store       sm_90      40       1024     16"}},
		// nvcc's PTX payload ends in its NUL terminator and alignment zeros:
		// they are part of the container, unlike zero padding after it.
		{"PTX ending in zero bytes, then padding", fatbin(24, withPTXZeros(good())...), "", 0,
			[]string{"FATBIN: elf sm_90 (", "ptx sm_120 ("}},
		{"not a fatbin", []byte("not a fatbin at all"), "", 1,
			[]string{"FATBIN: not a readable fatbin: fatbin: offset 0: magic"}},
		{"compressed image", withEntries(func(es []entry) []entry { es[0].compressed = 10; return es }), "", 1,
			[]string{"elf sm_90 image (payload at offset 80) is compressed (flags 0x0); build with --compress-mode=none"}},
		{"not EM_CUDA", withEntries(func(es []entry) []entry { es[1].payload = elf(62, entries...); return es }), "", 1,
			[]string{"elf sm_100 image (payload at offset 313)", ": ELF e_machine 62, want 190 (EM_CUDA)"}},
		{"symbol missing", withEntries(func(es []entry) []entry { es[2].payload = elf(190, entries[1:]...); return es }), "", 1,
			[]string{"elf sm_120 image (payload at offset 546)", ": no symbol " + entries[0]}},
		{"PTX entry missing", withEntries(func(es []entry) []entry { es[3].payload = ptx(120, entries[:len(entries)-1]...); return es }), "", 1,
			[]string{"ptx sm_120 image (payload at offset 779)", ": PTX lacks '.entry " + entries[len(entries)-1] + "'"}},
		{"PTX for another target", withEntries(func(es []entry) []entry { es[3].payload = ptx(100, entries...); return es }), "", 1,
			[]string{": PTX lacks '.target sm_120'"}},
		{"an architecture missing", withEntries(func(es []entry) []entry { return es[1:] }), "", 1,
			[]string{"FATBIN: no SASS (ELF) image for sm_90"}},
		{"spills", fatbin(0, good()...), report(true), 1,
			[]string{"REPORT: kd_norm_rope_store for sm_90 spills: 8 bytes spill stores, 0 bytes spill loads"}},
		{"an entry not compiled", fatbin(0, good()...), strings.Replace(report(false), "'kd_indexer_logits' for 'sm_100'", "'kd_other' for 'sm_100'", 1), 1,
			[]string{"REPORT: ptxas did not compile kd_indexer_logits for sm_100"}},
	}
	t.Setenv("CUOBJDUMP", "")
	t.Setenv("PATH", t.TempDir()) // no cuobjdump
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fb := filepath.Join(dir, "k.fatbin")
			if err := os.WriteFile(fb, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{fb}
			rep := filepath.Join(dir, "ptxas.txt")
			if tc.report != "" {
				texttest.WriteFile(t, rep, tc.report, 0o644)
				args = append(args, "--report", rep)
			}
			var stdout, stderr bytes.Buffer
			rc := run(args, &stdout, &stderr)
			out := strings.NewReplacer(fb, "FATBIN", rep, "REPORT").Replace(stdout.String() + stderr.String())
			if rc != tc.rc {
				t.Errorf("exit %d, want %d\n%s", rc, tc.rc, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestCheckKernelsUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if rc := run(nil, &stdout, &stderr); rc != 2 {
		t.Errorf("no argument: exit %d, want 2", rc)
	}
	if rc := run([]string{"x.fatbin", "--report"}, &stdout, &stderr); rc != 2 {
		t.Errorf("--report without a file: exit %d, want 2", rc)
	}
	if rc := run([]string{filepath.Join(t.TempDir(), "none.fatbin")}, &stdout, &stderr); rc != 1 || !strings.Contains(stderr.String(), "none.fatbin: no such file") {
		t.Errorf("missing file: exit %d, stderr %q", rc, stderr.String())
	}
}

// withPTXZeros appends 16 zero bytes to the PTX image's payload, as nvcc
// ends a PTX payload with its terminator and alignment.
func withPTXZeros(es []entry) []entry {
	for i := range es {
		if es[i].kind == 1 {
			es[i].payload = append(es[i].payload, make([]byte, 16)...)
		}
	}
	return es
}
