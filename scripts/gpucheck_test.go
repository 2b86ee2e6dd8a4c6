// Package scripts holds tests of the shell scripts in this folder. The
// scripts themselves are not Go; these tests run them against fake tools.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGPUCheckWrapper: dist/gpu-check hands its arguments to the bundle's
// `difftest gpu-check --dist DIR`, and stops with exit 2 before running
// anything on a machine whose glibc is older than MANIFEST's. (The steps
// themselves are tested in cmd/difftest/internal/gpucheck.)
func TestGPUCheckWrapper(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	src, err := os.ReadFile("gpu-check")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, glibc string
		rc          int
		want        string
	}{
		{"glibc recent enough", "2.0", 0, "difftest gpu-check --dist DIST --steps info suite\n"},
		{"glibc too old", "99.0", 2, "the bundled binaries need glibc 99.0 or later"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dist := t.TempDir()
			files := map[string]string{
				"gpu-check": string(src),
				"difftest":  "#!/usr/bin/env bash\necho \"difftest $*\"\n",
				"MANIFEST":  "host:    Debian 12\nglibc:   " + tc.glibc + " or later\n",
			}
			for name, body := range files {
				if err := os.WriteFile(filepath.Join(dist, name), []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			out, err := exec.Command("bash", filepath.Join(dist, "gpu-check"), "--steps", "info suite").CombinedOutput()
			rc := 0
			if ee, ok := err.(*exec.ExitError); ok {
				rc = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			got := strings.ReplaceAll(string(out), dist, "DIST")
			if rc != tc.rc || !strings.Contains(got, tc.want) {
				t.Errorf("exit %d, output %q; want exit %d and %q", rc, got, tc.rc, tc.want)
			}
		})
	}
}
