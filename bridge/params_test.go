package bridge

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/testfatbin"
)

// The kernel build's real outputs, when present (make kernels; CI builds
// them before the Go tests): every image of the fatbin and of each fault
// build defines all five entry points, each taking exactly the struct the
// launcher packs.
func TestBuiltFatbinsMatchLaunchers(t *testing.T) {
	main := os.Getenv("KD_FATBIN")
	if main == "" {
		main = filepath.Join("..", "build", "kernels.fatbin")
	}
	if _, err := os.Stat(main); os.IsNotExist(err) {
		t.Skipf("%s not built (make kernels)", main)
	}
	faults, _ := filepath.Glob(filepath.Join(filepath.Dir(main), "faults", "*.fatbin"))
	entries := entryParams()
	if len(entries) != 5 {
		t.Fatalf("entryParams lists %d entries, want 5: %v", len(entries), entries)
	}
	for _, path := range append([]string{main}, faults...) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkFatbinParams(path, b, entries); err != nil {
			t.Error(err)
			continue
		}
		imgs, err := cuda.ParseFatbin(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range imgs {
			decl, err := cuda.ImageParams(b, im)
			if err != nil {
				t.Fatal(err)
			}
			for name := range entries {
				if _, ok := decl[name]; !ok {
					t.Errorf("%s: %s image does not define %s", path, im.ArchName(), name)
				}
			}
		}
	}
	t.Logf("%d fatbins checked (%d fault builds)", 1+len(faults), len(faults))
}

func TestCheckFatbinParams(t *testing.T) {
	fb := testfatbin.KParams
	imgs, err := cuda.ParseFatbin(fb)
	if err != nil {
		t.Fatal(err)
	}
	var cubin, ptx []byte
	for _, im := range imgs {
		if im.Kind == cuda.KindELF {
			cubin = fb[im.Offset : im.Offset+im.Size]
		} else {
			ptx = fb[im.Offset : im.Offset+im.Size]
		}
	}
	one := func(name string, size int) map[string]entryParam {
		return map[string]entryParam{name: {"kd_x_params", "kernels/x/x.h", size}}
	}
	tests := []struct {
		name    string
		file    []byte
		entries map[string]entryParam
		want    string // "" for no error
	}{
		{"entries the file lacks", fb, one("kd_topk_transform_512", 72), ""},
		{"one struct of another size", fb, one("kp_structs", 64),
			"fatbin F: sm_90 image: kp_structs takes 4 parameter(s) [4 bytes at offset 0, 24 bytes at offset 8, 20 bytes at offset 32, 8 bytes at offset 56]; the launcher packs one kd_x_params of 64 bytes (kernels/x/x.h as this difftest was built): the fatbin and difftest come from different versions of the header; rebuild both (make kernels difftest)"},
		{"no parameters", fb, one("kp_none", 8), "fatbin F: sm_90 image: kp_none takes 0 parameter(s) []; the launcher packs one kd_x_params of 8 bytes"},
		{"lone cubin", cubin, one("kp_scalars", 8), "fatbin F: cubin image: kp_scalars takes 5 parameter(s) [8 bytes at offset 0, 4 bytes at offset 8,"},
		{"lone PTX", ptx, one("kp_scalars", 8), "fatbin F: PTX image: kp_scalars takes 5 parameter(s)"},
		{"broken container", fb[:20], one("kp_none", 0), "F: fatbin: offset 0: container (16-byte header, 8928 bytes of entries) runs past the end of the file (20 bytes)"},
		{"not a module: left to the driver", []byte("not a module"), one("kp_none", 0), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkFatbinParams("F", tt.file, tt.entries)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err %v\nwant prefix %q", err, tt.want)
			}
		})
	}
}

// NewImpl refuses a module whose kernels take another layout before it
// starts a worker: Unavailable (exit 125) with the reason, on any machine.
func TestNewImplRefusesOtherLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.ptx")
	ptx := ".version 9.0\n.target sm_90\n.address_size 64\n" +
		".visible .entry kd_norm_rope_store(\n.param .align 8 .b8 kd_norm_rope_store_param_0[112]\n)\n{\nret;\n}\n"
	if err := os.WriteFile(path, []byte(ptx), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := NewImpl(difftest.ImplOptions{Fatbin: path})
	var re *difftest.RunError
	if !errors.As(err, &re) || re.Class != difftest.Unavailable {
		t.Fatalf("err %#v, want a *difftest.RunError of class Unavailable", err)
	}
	want := fmt.Sprintf("fatbin %s: PTX image: kd_norm_rope_store takes 1 parameter(s) [112 bytes at offset 0]; the launcher packs one kd_normrope_params of %d bytes (kernels/normrope/normrope.h as this difftest was built)", path, normRopeParamsSize)
	if !strings.HasPrefix(re.Msg, want) {
		t.Fatalf("message %q\nwant prefix %q", re.Msg, want)
	}
}
