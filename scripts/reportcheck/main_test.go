package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

const (
	emuHeader = `{"type":"header","suite":"quick","impl":"cuda","properties":{"device":"kerneldiff host emulator (sm_90)","emulated":"yes: the CPU emulator"}}`
	summary   = `{"type":"summary","passed":1,"failed":1}`
)

func rec(kase, kernel, verdict, class, msg, impl, device string, kt int) string {
	s := `{"type":"case","case":"` + kase + `","kernel":"` + kernel + `","verdict":"` + verdict + `","impl":"` + impl + `"`
	if class != "" {
		s += `,"class":"` + class + `"`
	}
	if msg != "" {
		s += `,"message":"` + msg + `"`
	}
	if device != "" {
		s += `,"device":"` + device + `"`
	}
	if kt > 0 {
		s += `,"kernel_time_ns":` + strings.Repeat("1", kt)
	}
	return s + "}"
}

func check(t *testing.T, lines []string, args ...string) (int, string) {
	t.Helper()
	p := texttest.WriteFile(t, filepath.Join(t.TempDir(), "r.jsonl"), strings.Join(lines, "\n")+"\n", 0o644)
	var out, errb bytes.Buffer
	rc := run(append([]string{args[0], p}, args[1:]...), &out, &errb)
	return rc, out.String() + errb.String()
}

func TestEmu(t *testing.T) {
	pass := rec("topk_transform/a-k512", "topk_transform", "pass", "", "", "cuda", "", 4)
	tests := []struct {
		name  string
		lines []string
		rules []string
		rc    int
		want  string
	}{
		{"all pass", []string{emuHeader, pass, rec("norm_rope_store/b", "norm_rope_store", "pass", "", "", "cuda", "", 3), summary}, nil,
			0, "ok   r.jsonl: 2 cases, 2 pass"},
		{"a fault caught", []string{emuHeader, pass, rec("norm_rope_store/b", "norm_rope_store", "fail", "mismatch", "", "cuda", "", 3), summary},
			[]string{"~norm_rope_store:mismatch"}, 0, "ok   r.jsonl: 2 cases, 1 pass, 1 mismatch"},
		{"a fault not caught", []string{emuHeader, pass, summary}, []string{"norm_rope_store:mismatch"},
			1, "no case of norm_rope_store in the suite"},
		{"a case that must fail passes", []string{emuHeader, pass, summary}, []string{"topk_transform/k512:crash"},
			1, `topk_transform/a-k512: pass class "", want fail class crash`},
		{"a crash without its signal", []string{emuHeader, rec("topk_transform/a-k512", "topk_transform", "fail", "crash", "worker died", "cuda", "", 0), summary},
			[]string{"topk_transform/k512:crash"}, 1, "crash message does not name the signal"},
		{"a pass without a kernel time", []string{emuHeader, rec("topk_transform/a", "topk_transform", "pass", "", "", "cuda", "", 0), summary}, nil,
			1, "topk_transform/a: pass  , kernel time 0"},
		{"cut short", []string{emuHeader, pass}, nil, 1, "no summary or no cases"},
		{"not emulated", []string{`{"type":"header","impl":"cuda","properties":{"device":"NVIDIA H200"}}`, pass, summary}, nil,
			1, `header: impl "cuda", device "NVIDIA H200"`},
		{"a pipeline stage of a named kernel", []string{emuHeader, pass, rec("topk_transform/b", "topk_transform", "fail", "mismatch", "", "cuda", "", 0),
			rec("pipeline/x", "pipeline", "fail", "mismatch", "stage 2 topk_transform: wrong", "cuda", "", 0), summary},
			[]string{"~topk_transform:mismatch"}, 0, "ok   r.jsonl: 3 cases, 1 pass, 1 mismatch"},
		{"a pipeline stage of another kernel", []string{emuHeader, pass, rec("pipeline/x", "pipeline", "fail", "mismatch", "stage 1 norm_rope_store: wrong", "cuda", "", 0), summary},
			[]string{"~topk_transform:mismatch"}, 1, "pipeline/x: fail mismatch stage 1 norm_rope_store: wrong: not a failure of a stage these rules name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc, out := check(t, tc.lines, append([]string{"emu"}, tc.rules...)...)
			if rc != tc.rc || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, output %q; want exit %d and %q", rc, out, tc.rc, tc.want)
			}
		})
	}
	t.Setenv("CHECK_IMPL", "emu")
	if rc, out := check(t, []string{emuHeader, pass, summary}, "emu"); rc != 1 || !strings.Contains(out, `header: impl "cuda"`) {
		t.Errorf("CHECK_IMPL=emu on a cuda run: exit %d, %q", rc, out)
	}
}

func TestMerged(t *testing.T) {
	head := `{"type":"header","suite":"quick","merged_shards":4}`
	a := rec("k/a", "k", "pass", "", "", "m", "", 0)
	b := rec("k/b", "k", "fail", "mismatch", "", "m", "", 0)
	sum := `{"type":"summary","passed":1,"failed":1}`
	if rc, out := check(t, []string{head, a, b, sum}, "merged", "2", "4"); rc != 0 || out != "ok   r.jsonl: 2 cases merged from 4 shards\n" {
		t.Errorf("good merge: exit %d, %q", rc, out)
	}
	if rc, out := check(t, []string{head, a, a, sum}, "merged", "2", "4"); rc != 1 || !strings.Contains(out, "2 records of 1 cases, want each of the 2 cases once") {
		t.Errorf("a case twice: exit %d, %q", rc, out)
	}
	if rc, out := check(t, []string{head, a, b, sum}, "merged", "2", "3"); rc != 1 || !strings.Contains(out, "merged_shards 4, want 3") {
		t.Errorf("shard count: exit %d, %q", rc, out)
	}
	if rc, out := check(t, []string{head, a, b}, "merged", "2", "4"); rc != 1 || !strings.Contains(out, "summary <nil>") {
		t.Errorf("no summary: exit %d, %q", rc, out)
	}
}

func TestDevices(t *testing.T) {
	head := `{"type":"header","suite":"quick","properties":{"devices":"0: kerneldiff host emulator; 1: kerneldiff host emulator"}}`
	a := rec("k/a", "k", "pass", "", "", "cuda", "0", 0)
	b := rec("k/b", "k", "pass", "", "", "cuda", "1", 0)
	killed := rec("k/b", "k", "fail", "crash", "worker killed", "cuda", "1", 0)
	sum := `{"type":"summary","passed":2,"failed":0}`
	if rc, out := check(t, []string{head, a, b, sum}, "devices", "", "2"); rc != 0 || out != "ok   r.jsonl: 2 cases, device 0 ran 1, device 1 ran 1\n" {
		t.Errorf("both pass: exit %d, %q", rc, out)
	}
	if rc, out := check(t, []string{head, a, killed, sum}, "devices", "1", "2"); rc != 0 || !strings.HasSuffix(out, "; device 1 killed at k/b\n") {
		t.Errorf("device 1 lost: exit %d, %q", rc, out)
	}
	if rc, out := check(t, []string{head, a, killed, sum}, "devices", "", "2"); rc != 1 || !strings.Contains(out, "failures: [k/b on \"1\": crash worker killed]") {
		t.Errorf("a failure where none is expected: exit %d, %q", rc, out)
	}
	if rc, out := check(t, []string{head, a, rec("k/b", "k", "pass", "", "", "cuda", "0", 0), sum}, "devices", "", "2"); rc != 1 || !strings.Contains(out, "want both devices used") {
		t.Errorf("one device idle: exit %d, %q", rc, out)
	}
}

func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := run([]string{"emu"}, &out, &errb); rc != 2 {
		t.Errorf("no report: exit %d", rc)
	}
	if rc := run([]string{"emu", filepath.Join(t.TempDir(), "none.jsonl")}, &out, &errb); rc != 2 {
		t.Errorf("missing report: exit %d", rc)
	}
}
