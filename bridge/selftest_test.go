package bridge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
	"github.com/kerneldiff/kerneldiff/fixtures"
)

// kernels/faults.txt and the Go mutant catalog (docs/mutants.md and docs/contracts/indexer_logits.md)
// describe the same faults: every Go mutant has one CUDA fault build named
// after it, each build names a mutant of its own kernel (or "-" for a
// RACE_* or MEM_* sanitizer control), the kernel's source switches on its
// KD_FAULT_ macro, and exactly the builds of the mutants only the large
// suite catches (a kernel's LargeMutants, logits.LargeMutants) say so in the fifth column.
func TestFaultListCoversCatalog(t *testing.T) {
	builds, err := ReadFaultList(filepath.Join("..", "kernels", "faults.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// The kernels with CUDA source, from kernels/entries.txt (generated
	// from the headers); their mutants from the registered kernel, with
	// those only the large suite catches (an optional LargeMutants method).
	type largeMutanter interface{ LargeMutants() []difftest.Mutant }
	kernels := map[string]struct {
		src     string
		mutants []difftest.Mutant
	}{}
	large := map[string]bool{}
	var largeNames []string
	for _, e := range readEntries(t) {
		k, ok := difftest.LookupKernel(e.contract)
		if !ok {
			t.Fatalf("kernels/entries.txt: %s is not registered", e.contract)
		}
		ms := k.Mutants()
		if lm, ok := k.(largeMutanter); ok {
			for _, m := range lm.LargeMutants() {
				large[m.Name] = true
				largeNames = append(largeNames, m.Name)
			}
			ms = append(ms, lm.LargeMutants()...)
		}
		kernels[e.contract] = struct {
			src     string
			mutants []difftest.Mutant
		}{e.dir + "/" + e.dir + ".cu", ms}
	}
	owner := map[string]string{} // Go mutant → kernel
	for k, kk := range kernels {
		for _, m := range kk.mutants {
			owner[m.Name] = k
		}
	}
	built := map[string]string{} // Go mutant → fault build
	seen := map[string]bool{}
	for _, b := range builds {
		if seen[b.Name] {
			t.Errorf("%s: listed twice", b.Name)
		}
		seen[b.Name] = true
		kk, ok := kernels[b.Kernel]
		if !ok {
			t.Errorf("%s: kernel %q has no CUDA entry point (kernels/entries.txt)", b.Name, b.Kernel)
			continue
		}
		src, err := os.ReadFile(filepath.Join("..", "kernels", kk.src))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), "KD_FAULT_"+b.Name+"\n") && !strings.Contains(string(src), "KD_FAULT_"+b.Name+")") {
			t.Errorf("%s: kernels/%s never tests KD_FAULT_%s", b.Name, kk.src, b.Name)
		}
		if b.Mutant == "-" {
			if !strings.HasPrefix(b.Name, "RACE_") && !strings.HasPrefix(b.Name, "MEM_") {
				t.Errorf("%s: no catalog mutant, but not a sanitizer control (RACE_*, MEM_*)", b.Name)
			}
			continue
		}
		if (b.Suite == LargeSuite) != large[b.Mutant] || (b.Suite != "" && b.Suite != LargeSuite) {
			t.Errorf("%s: suite column %q; want %q exactly for the builds of %v", b.Name, b.Suite, LargeSuite, largeNames)
		}
		if k, ok := owner[b.Mutant]; !ok || k != b.Kernel {
			t.Errorf("%s: %q is not a catalog mutant of %s", b.Name, b.Mutant, b.Kernel)
		}
		if want := strings.ToUpper(strings.ReplaceAll(b.Mutant, "-", "_")); b.Name != want {
			t.Errorf("%s: the build of mutant %s should be named %s", b.Name, b.Mutant, want)
		}
		if prev, ok := built[b.Mutant]; ok {
			t.Errorf("%s: mutant %s already has build %s", b.Name, b.Mutant, prev)
		}
		built[b.Mutant] = b.Name
	}
	for m, k := range owner {
		if _, ok := built[m]; !ok {
			t.Errorf("catalog mutant %s (%s) has no fault build in kernels/faults.txt", m, k)
		}
	}
	if len(built) != 44 {
		t.Errorf("%d catalog mutants have fault builds, want the 22 of docs/mutants.md, the 14 of docs/contracts/indexer_logits.md, the 4 FP4 ones of docs/contracts/norm_rope_store.md and the 4 16-bit top-k ones of docs/contracts/topk_transform.md", len(built))
	}
}

// The selftest of fault builds on the fake device: a build whose kernel
// is wrong is caught, one that is right is reported as not caught,
// sanitizer controls (RACE_*, MEM_*) are left to compute-sanitizer, and a
// missing build means nothing could be tested. (`difftest gpu-selftest`'s
// exit codes: cmd/difftest's TestGPUSelftestExitCodes.)
func TestGPUSelftest(t *testing.T) {
	t.Setenv(envWorker, "fake-by-fatbin") // workers are this test binary, serving a fake topk
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("kernels.fatbin", "real build")
	write("faults/TOPK_OFF_BY_ONE.fatbin", "TOPK_BUG")
	write("faults/TOPK_HARMLESS.fatbin", "a fault that changes nothing")
	write("faults/RACE_MISSING_BARRIER.fatbin", "not run")
	header := "# NAME\tmutant\tkernel\twhat\n"
	caught := "TOPK_OFF_BY_ONE\ttopk-page-row0\ttopk_transform\tfirst slot of each row off by one\n"
	race := "RACE_MISSING_BARRIER\t-\ttopk_transform\tmissing barrier\n"
	mem := "MEM_OOB_READ\t-\ttopk_transform\tstray read (no fatbin: a sanitizer control is not run)\n"
	quick, err := suite.Resolve("quick", fixtures.Suites())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		list  string
		ok    bool
		err   string
		table []string
	}{
		{"every build caught", header + caught + race + mem, true, "", []string{"TOPK_OFF_BY_ONE", "yes", "mismatch"}},
		{"a build not caught", header + caught + "TOPK_HARMLESS\ttopk-tie-hole\ttopk_transform\tnothing\n", false, "", []string{"TOPK_HARMLESS", "NO"}},
		{"a build missing", header + "TOPK_ABSENT\ttopk-past-length\ttopk_transform\tnever built\n", false, "fault build TOPK_ABSENT missing: ", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			write("faults.txt", tt.list)
			builds, err := ReadFaultList(filepath.Join(dir, "faults.txt"))
			if err != nil {
				t.Fatal(err)
			}
			rows, ok, err := GPUSelftest(context.Background(), GPUSelftestConfig{
				Suite: quick, Seed: 1, Fatbin: filepath.Join(dir, "kernels.fatbin"), Builds: builds,
				FaultsDir: filepath.Join(dir, "faults"), Timeout: 2 * time.Minute, Parallel: 2,
			})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var table strings.Builder
			if err := triage.WriteSelftestTable(&table, rows, ok); err != nil {
				t.Fatal(err)
			}
			if ok != tt.ok {
				t.Fatalf("ok %v, want %v\n%s", ok, tt.ok, table.String())
			}
			for _, w := range tt.table {
				if !strings.Contains(table.String(), w) {
					t.Errorf("table lacks %q:\n%s", w, table.String())
				}
			}
			if strings.Contains(table.String(), "RACE_") || strings.Contains(table.String(), "MEM_") {
				t.Errorf("a sanitizer control ran:\n%s", table.String())
			}
			t.Logf("\n%s", table.String())
		})
	}
}

// A fault list line with fewer than four columns is refused with its line
// number.
func TestReadFaultListMalformed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "faults.txt")
	if err := os.WriteFile(path, []byte("# comment\n\nTOPK_OFF_BY_ONE topk_transform\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFaultList(path)
	if want := path + ":3: want NAME<TAB>mutant<TAB>kernel<TAB>description, got \"TOPK_OFF_BY_ONE topk_transform\""; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}
