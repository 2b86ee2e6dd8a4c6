// Tests of gpu-check against fake tools: a fake difftest and a fake
// compute-sanitizer, each a shell script that prints what the real one
// prints in the situation a test names.

package gpucheck

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// fakeDifftest stands in for the difftest binary the steps run. "info" prints a device; "list
// cases" two cases; "bench" writes a bench report of two timed cases to
// its --json FILE and a table to stdout (FAKE_DT=benchfail: one case
// failed its checks, exit 1); "run" appends its arguments to FAKE_DT_LOG when set and
// writes a JSON Lines report to its --json FILE as FAKE_DT says:
// pass (2 cases pass, exit 0), fail (1 pass, 1 time-out, exit 1), cut
// (one case line, no summary, killed: exit 137) or nodevice (no report,
// exit 125, as difftest does on a machine it cannot use).
const fakeDifftest = `#!/usr/bin/env bash
cmd=$1; shift
[[ $cmd == run && -n ${FAKE_DT_LOG:-} ]] && echo "$*" >>"$FAKE_DT_LOG"
json=""
while [[ $# -gt 0 ]]; do
	case $1 in --json) json=$2; shift 2 ;; *) shift ;; esac
done
case $cmd in
info) printf 'device 0:\n  name: Fake H200\n  loads: sm_90 SASS\n'; exit 0 ;;
bench)
	if [[ ${FAKE_DT:-} == benchfail ]]; then
		printf '{"type":"bench","bandwidth":{"gbps":4012.5},"results":[{"case":"topk_transform/decode-b1-l2048-k512","builds":[{"verdict":"fail","class":"mismatch"}]}]}\n' >"$json"
		echo "failures: topk_transform/decode-b1-l2048-k512"; exit 1
	fi
	printf '{"type":"bench","bandwidth":{"gbps":4012.5},"results":[{"case":"topk_transform/decode-b1-l2048-k512","builds":[{"verdict":"pass","stats":{"median_ns":6100},"pct_of_floor":12.5}]},{"case":"norm_rope_store/store-v4-N65536","builds":[{"verdict":"pass","stats":{"median_ns":9000},"pct_of_floor":40}]}]}\n' >"$json"
	printf 'CASE  MEDIAN  %% OF FLOOR\ntopk_transform/decode-b1-l2048-k512  6.100µs ±1%%  12.50%%\n'
	exit 0 ;;
list) printf 'CASE FAMILY FILE\nnorm_rope_store/g/N=9 g quick/normrope.toml\ntopk_transform/a.b+ a quick/topk.toml\ntopk_transform/c c quick/topk.toml\n'; exit 0 ;;
run) ;;
*) exit 2 ;;
esac
hdr='{"type":"header","suite":"quick","seed":1}'
pass='{"type":"case","case":"topk_transform/a","verdict":"pass","kernel_time_ns":1000000}'
case ${FAKE_DT:-pass} in
pass) printf '%s\n%s\n%s\n%s\n' "$hdr" "$pass" "$pass" '{"type":"summary","passed":2,"failed":0}' >"$json"; exit 0 ;;
fail) printf '%s\n%s\n%s\n%s\n' "$hdr" "$pass" '{"type":"case","case":"topk_transform/b","verdict":"fail","class":"timeout"}' '{"type":"summary","passed":1,"failed":1}' >"$json"; exit 1 ;;
cut) printf '%s\n%s\n' "$hdr" "$pass" >"$json"; exit 137 ;;
nodevice) echo "difftest: cuda unavailable: no usable CUDA device" >&2; exit 125 ;;
esac
`

// fakeSanitizer stands in for compute-sanitizer: it runs the command after
// its options and prints what the real tool prints, as FAKE_SAN says:
// clean (one process summary, 0 errors; the command's exit status),
// detached (the tool never attached, and exits 0 as compute-sanitizer
// 2025.3 does then), errors (2 errors, exit 86), refused (device not
// supported). A fatbin path naming RACE_ gets 3 hazards and exit 86
// unless FAKE_SAN_RACE=miss; one naming MEM_ 1 error and exit 86 unless
// FAKE_SAN_MEM=miss (FAKE_SAN_MEM=other: 1 error, an API error, not an
// invalid read). Its options and command go to FAKE_SAN_LOG when set;
// with FAKE_SAN_OLD set its --help lists neither --require-cuda-init nor
// --padding (an older tool).
const fakeSanitizer = `#!/usr/bin/env bash
if [[ $1 == --help ]]; then
	[[ -n ${FAKE_SAN_OLD:-} ]] || printf '  --require-cuda-init arg (=yes)\n  --padding arg (=0)\n'
	exit 0
fi
opts=""
while [[ $1 == --* ]]; do opts+="$1 $2 "; shift 2; done
[[ -n ${FAKE_SAN_LOG:-} ]] && echo "$opts-- $*" >>"$FAKE_SAN_LOG"
race=0
[[ "$*" == *RACE_* && ${FAKE_SAN_RACE:-} != miss ]] && race=1
mem=0
[[ "$*" == *MEM_* && ${FAKE_SAN_MEM:-} != miss ]] && mem=1
[[ "$*" == *MEM_* && ${FAKE_SAN_MEM:-} == other ]] && mem=2
echo "========= COMPUTE-SANITIZER"
"$@"
rc=$?
case ${FAKE_SAN:-clean} in
clean)
	if [[ $race == 1 ]]; then
		echo "========= RACECHECK SUMMARY: 3 hazards displayed (3 errors, 0 warnings)"
		echo "========= ERROR SUMMARY: 3 errors"
		exit 86
	fi
	if [[ $mem == 1 ]]; then
		echo "========= Invalid __global__ read of size 4 bytes"
		echo "========= ERROR SUMMARY: 1 error"
		exit 86
	fi
	if [[ $mem == 2 ]]; then
		echo "========= Program hit CUDA_ERROR_NO_BINARY_FOR_GPU (error 209) on CUDA API call to cuModuleLoadData."
		echo "========= ERROR SUMMARY: 1 error"
		exit 86
	fi
	echo "========= ERROR SUMMARY: 0 errors"
	exit $rc ;;
detached)
	echo "========= Target application terminated before first instrumented API call"
	echo "========= Error: couldn't find exit code."
	exit 0 ;;
errors)
	echo "========= Invalid __global__ read of size 4 bytes"
	echo "========= ERROR SUMMARY: 2 errors"
	exit 86 ;;
refused)
	echo "========= Error: Device not supported"
	exit 1 ;;
esac
`

// gpuCheck runs Check with steps on a fake bundle with env set, and
// returns the table's rows by step ("result figures") and the exit status
// the command gives (1 when a step failed). The fake tools are bash
// scripts: without bash the test is skipped.
func gpuCheck(t *testing.T, steps string, env ...string) (map[string]string, int) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash for the fake tools")
	}
	dist := t.TempDir()
	bin := t.TempDir()
	files := map[string]string{
		filepath.Join(dist, "difftest"):                              fakeDifftest,
		filepath.Join(dist, "kernels.fatbin"):                        "fatbin",
		filepath.Join(dist, "faults", "RACE_MISSING_BARRIER.fatbin"): "fatbin",
		filepath.Join(dist, "faults", "MEM_OOB_READ.fatbin"):         "fatbin",
		filepath.Join(dist, "faults.txt"):                            "# name\tmutant\tkernel\twhat\nRACE_MISSING_BARRIER\t-\ttopk_transform\tno barrier\nMEM_OOB_READ\t-\ttopk_transform\tstray read\n",
		filepath.Join(bin, "compute-sanitizer"):                      fakeSanitizer,
		filepath.Join(dist, "tests", "hostdevice"):                   fakeHostDevice,
	}
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		texttest.WriteFile(t, p, body, 0o755)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	out := t.TempDir()
	var log strings.Builder
	_, failed, err := Check(context.Background(), Config{Dist: dist, Difftest: filepath.Join(dist, "difftest"),
		Sanitizer: filepath.Join(bin, "compute-sanitizer"), Steps: strings.Fields(steps), Reports: out, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	rc := 0
	if failed {
		rc = 1
	}
	table, err := os.ReadFile(filepath.Join(out, "table.txt"))
	if err != nil {
		t.Fatalf("no table.txt: %v\n%s", err, log.String())
	}
	rows := map[string]string{}
	row := regexp.MustCompile(`^(\S+)\s+(\S+)\s+\d+ (.*)$`)
	for _, line := range strings.Split(string(table), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			rows[m[1]] = m[2] + " " + m[3]
		}
	}
	return rows, rc
}

func TestGPUCheckSanitizerVerdicts(t *testing.T) {
	tests := []struct {
		name      string
		env       []string
		memcheck  string // regexp over "result figures"
		racecheck string
		rc        int
	}{
		{"clean", nil,
			`^ok 0 errors \(1 process\); difftest 2 passed, 0 failed.*; MEM_OOB_READ flagged \(1 error\)$`,
			`^ok 0 errors \(1 process\); difftest 2 passed, 0 failed.*; RACE_MISSING_BARRIER flagged \(3 hazards\)$`, 0},
		// The tool never attached and exited 0: nothing was checked.
		{"detached", []string{"FAKE_SAN=detached", "FAKE_DT=nodevice"},
			`^FAIL exit 0; no summary; difftest no report; MEM_OOB_READ NOT flagged \(exit 0, no invalid read reported, 0 errors\)$`,
			`^FAIL exit 0; no summary; difftest no report; RACE_MISSING_BARRIER NOT flagged \(exit 0, 0 hazards\)$`, 1},
		// A case failed under the tool: that case was not checked.
		{"case failed", []string{"FAKE_DT=fail"},
			`^FAIL exit 1; 0 errors \(1 process\); difftest 1 passed, 1 failed \(timeout=1\)`,
			`^FAIL exit 1; .*RACE_MISSING_BARRIER flagged`, 1},
		// The run was cut short: no summary line, even though no case failed.
		{"cut short", []string{"FAKE_DT=cut"},
			`^FAIL exit 137; 0 errors \(1 process\); difftest 1 passed, 0 failed.*\(no summary line\); MEM_OOB_READ flagged \(1 error\)$`,
			`^FAIL exit 137;`, 1},
		{"errors", []string{"FAKE_SAN=errors"},
			`^FAIL exit 86; 2 errors \(1 process\); difftest 2 passed`,
			`^FAIL exit 86; 2 errors`, 1},
		{"memory error not flagged", []string{"FAKE_SAN_MEM=miss"},
			`^FAIL 0 errors \(1 process\); difftest 2 passed.*; MEM_OOB_READ NOT flagged \(exit 0, no invalid read reported, 0 errors\)$`,
			`^ok .*RACE_MISSING_BARRIER flagged`, 1},
		// An error of another kind is not the memory control's read.
		{"memory control fails otherwise", []string{"FAKE_SAN_MEM=other"},
			`^FAIL 0 errors \(1 process\); difftest 2 passed.*; MEM_OOB_READ NOT flagged \(exit 86, no invalid read reported, 1 error\)$`,
			`^ok `, 1},
		{"race not flagged", []string{"FAKE_SAN_RACE=miss"},
			`^ok `,
			`^FAIL 0 errors \(1 process\); difftest 2 passed.*; RACE_MISSING_BARRIER NOT flagged \(exit 0, 0 hazards\)$`, 1},
		{"refused", []string{"FAKE_SAN=refused"},
			`^skip Error: Device not supported$`,
			`^skip Error: Device not supported$`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows, rc := gpuCheck(t, "memcheck racecheck", tc.env...)
			for step, want := range map[string]string{"memcheck": tc.memcheck, "racecheck": tc.racecheck} {
				if !regexp.MustCompile(want).MatchString(rows[step]) {
					t.Errorf("%s row %q, want match for %q", step, rows[step], want)
				}
			}
			if rc != tc.rc {
				t.Errorf("exit status %d, want %d (rows %q)", rc, tc.rc, rows)
			}
		})
	}
}

// The memcheck control runs on the first quick case of its kernel alone,
// its name quoted for --run; the race control on its kernel's cases.
// Every memcheck run pads the allocations (the tool offers --padding);
// racecheck runs do not.
func TestGPUCheckControlCases(t *testing.T) {
	log := filepath.Join(t.TempDir(), "runs.txt")
	slog := filepath.Join(t.TempDir(), "sanitizer.txt")
	rows, rc := gpuCheck(t, "memcheck racecheck", "FAKE_DT_LOG="+log, "FAKE_SAN_LOG="+slog)
	if rc != 0 {
		t.Fatalf("exit %d, rows %q", rc, rows)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var mem, race []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		switch {
		case strings.Contains(l, "MEM_OOB_READ"):
			mem = append(mem, l)
		case strings.Contains(l, "RACE_MISSING_BARRIER"):
			race = append(race, l)
		}
	}
	if len(mem) != 1 || !strings.HasSuffix(mem[0], `--run ^topk_transform/a\.b\+$`) {
		t.Errorf("memcheck control runs %q, want one ending --run ^topk_transform/a\\.b\\+$", mem)
	}
	if len(race) != 1 || !strings.HasSuffix(race[0], "--run ^topk_transform/ --failfast") {
		t.Errorf("racecheck control runs %q, want one ending --run ^topk_transform/ --failfast", race)
	}
	sb, err := os.ReadFile(slog)
	if err != nil {
		t.Fatal(err)
	}
	runs := strings.Split(strings.TrimSpace(string(sb)), "\n")
	if len(runs) != 4 {
		t.Fatalf("%d sanitizer runs, want 4 (memcheck and racecheck, each real and control):\n%s", len(runs), sb)
	}
	for _, r := range runs {
		padded := strings.Contains(r, "--padding 1024 ")
		if memcheck := strings.Contains(r, "--tool memcheck "); padded != memcheck {
			t.Errorf("sanitizer run %q: --padding 1024 present %v, want %v", r, padded, memcheck)
		}
	}
	// An older tool without --padding or --require-cuda-init gets neither.
	slog2 := filepath.Join(t.TempDir(), "sanitizer-old.txt")
	if rows, rc := gpuCheck(t, "memcheck racecheck", "FAKE_SAN_OLD=1", "FAKE_SAN_LOG="+slog2); rc != 0 {
		t.Fatalf("older tool: exit %d, rows %q", rc, rows)
	}
	sb2, err := os.ReadFile(slog2)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sb2), "--padding") || strings.Contains(string(sb2), "--require-cuda-init") {
		t.Errorf("an older tool was given options it lacks:\n%s", sb2)
	}
}

// The bench step: the row's figures from bench.json, and the bench table
// after the steps table.
func TestGPUCheckBench(t *testing.T) {
	rows, rc := gpuCheck(t, "bench")
	if want := "ok 2 cases timed, copy bandwidth 4012.5 GB/s, % of floor 12.5 … 40 (median 40)"; rows["bench"] != want || rc != 0 {
		t.Errorf("bench row %q (exit %d), want %q", rows["bench"], rc, want)
	}
	rows, rc = gpuCheck(t, "bench", "FAKE_DT=benchfail")
	if want := "FAIL exit 1; 0 cases timed, copy bandwidth 4012.5 GB/s, 1 failed their checks: topk_transform/decode-b1-l2048-k512"; !strings.HasPrefix(rows["bench"], want) || rc != 1 {
		t.Errorf("bench row %q (exit %d), want prefix %q", rows["bench"], rc, want)
	}
}

// fakeHostDevice prints what kernels/emu/probe/hostdevice.cu prints: with
// FAKE_HD unset every value agrees; "differ" one f16 NaN differs; "nogpu"
// no driver (exit 125).
const fakeHostDevice = `#!/usr/bin/env bash
case "${FAKE_HD:-}" in
differ)
	echo "f16    0xFFC00000: host 0x7FFF device 0xFE00"
	echo "f16 of -NaN (0xFFC00000): host 0x7FFF device 0xFE00"
	echo "hostdevice: 105 compared, 1 differ, rsqrt max 1 ULP over 65536 values"
	exit 1 ;;
nogpu)
	echo "hostdevice: cudaMalloc(&dx, kN * sizeof(float)): CUDA driver version is insufficient for CUDA runtime version"
	exit 125 ;;
esac
echo "f16 of -NaN (0xFFC00000): host 0x7FFF device 0x7FFF"
echo "hostdevice: 105 compared, 0 differ, rsqrt max 1 ULP over 65536 values"
`

// TestGPUCheckHostDevice: the hostdevice step passes when the probe finds
// host and device agree, fails naming the first differing value, and is
// skipped without a GPU.
func TestGPUCheckHostDevice(t *testing.T) {
	for _, tt := range []struct {
		env, want string
		rc        int
	}{
		{"", "ok 105 compared, 0 differ, rsqrt max 1 ULP over 65536 values; f16 of -NaN (0xFFC00000): host 0x7FFF device 0x7FFF", 0},
		{"differ", "FAIL exit 1; 105 compared, 1 differ, rsqrt max 1 ULP over 65536 values; f16 of -NaN (0xFFC00000): host 0x7FFF device 0xFE00; f16    0xFFC00000: host 0x7FFF device 0xFE00", 1},
		{"nogpu", "skip no GPU: cudaMalloc(&dx, kN * sizeof(float)): CUDA driver version is insufficient for CUDA runtime version", 0},
	} {
		rows, rc := gpuCheck(t, "hostdevice", "FAKE_HD="+tt.env)
		if got := rows["hostdevice"]; got != tt.want || rc != tt.rc {
			t.Errorf("FAKE_HD=%q: row %q exit %d, want %q exit %d", tt.env, got, rc, tt.want, tt.rc)
		}
	}
}
