package cuda

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/internal/testfatbin"
)

// kparamsWant is what cuobjdump 13.2 lists for testfatbin.KParams
// (EIATTR_KPARAM_INFO of the sm_90 ELF; the .param lines of the PTX):
// ordinal, offset, size.
var kparamsWant = map[string][]KernelParam{
	"kp_none":    {},
	"kp_scalars": {{0, 0, 8}, {1, 8, 4}, {2, 12, 1}, {3, 16, 8}, {4, 24, 2}},
	"kp_structs": {{0, 0, 4}, {1, 8, 24}, {2, 32, 20}, {3, 56, 8}},
}

func TestImageParamsKnownAnswers(t *testing.T) {
	b := testfatbin.KParams
	imgs, err := ParseFatbin(b)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[ImageKind]bool{}
	for _, im := range imgs {
		kinds[im.Kind] = true
		got, err := ImageParams(b, im)
		if err != nil {
			t.Fatalf("%s: %v", im.ArchName(), err)
		}
		if !reflect.DeepEqual(got, kparamsWant) {
			t.Errorf("%s %s:\n got %v\nwant %v", im.ArchName(), im.Kind, got, kparamsWant)
		}
	}
	if !kinds[KindELF] || !kinds[KindPTX] {
		t.Fatalf("testfatbin.KParams images %v, want an ELF and a PTX", imgs)
	}
}

func TestPTXParams(t *testing.T) {
	tests := []struct {
		name, ptx string
		want      map[string][]KernelParam
		err       string
	}{
		{"pointer with pointee alignment", ".visible .entry k(\n\t.param .u64 .ptr .global .align 16 k_param_0,\n\t.param .u32 k_param_1\n)\n{ ret; }\x00\x00",
			map[string][]KernelParam{"k": {{0, 0, 8}, {1, 8, 4}}}, ""},
		{"vector-aligned struct after a byte", ".entry k(.param .u8 k_param_0, .param .align 16 .b8 k_param_1[48])",
			map[string][]KernelParam{"k": {{0, 0, 1}, {1, 16, 48}}}, ""},
		{"two entries", ".entry a() {} .entry b(.param .f32 b_param_0) {}",
			map[string][]KernelParam{"a": {}, "b": {{0, 0, 4}}}, ""},
		{"no type", ".entry k(.param .align 8 k_param_0)", nil, `k: parameter 0 ".param .align 8 k_param_0": no .b/.s/.u/.f type`},
		{"not a param", ".entry k(.reg .u32 r)", nil, `k: parameter 0 ".reg .u32 r": not a .param declaration`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ptxParams([]byte(tt.ptx))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestImageParamsErrors(t *testing.T) {
	b := testfatbin.KParams
	imgs, err := ParseFatbin(b)
	if err != nil {
		t.Fatal(err)
	}
	var elfImg FatbinImage
	for _, im := range imgs {
		if im.Kind == KindELF {
			elfImg = im
		}
	}
	// A KPARAM_INFO record whose length runs past its section: find the
	// first sized record of kind 0x17 and inflate its length.
	bad := append([]byte(nil), b...)
	payload := bad[elfImg.Offset : elfImg.Offset+elfImg.Size]
	i := strings.Index(string(payload), "\x04\x17\x0c\x00")
	if i < 0 {
		t.Fatal("no KPARAM_INFO record in the sm_90 image")
	}
	payload[i+2] = 0xff
	payload[i+3] = 0x7f
	compressed := elfImg
	compressed.Compressed = true
	past := elfImg
	past.Size = len(b)
	tests := []struct {
		name string
		fb   []byte
		im   FatbinImage
		want string
	}{
		{"record past section", bad, elfImg, "sm_90 image: section .nv.info.kp_"},
		{"compressed", b, compressed, "sm_90 image: stored compressed"},
		{"payload past file", b, past, "sm_90 image: payload ["},
		{"not an ELF", b, FatbinImage{Kind: KindELF, Arch: 90, Offset: 0, Size: 64}, "sm_90 image: not a readable ELF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ImageParams(tt.fb, tt.im)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err %v, want prefix %q", err, tt.want)
			}
		})
	}
}

// ImageParams reads files users pass with --fatbin: on any bytes it returns
// layouts or an error, never a panic. Seeds: both images of
// testfatbin.KParams, alone (as a cubin or PTX) and in the container.
func FuzzImageParams(f *testing.F) {
	imgs, err := ParseFatbin(testfatbin.KParams)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(testfatbin.KParams, uint16(KindELF))
	for _, im := range imgs {
		f.Add(testfatbin.KParams[im.Offset:im.Offset+im.Size], uint16(im.Kind))
	}
	f.Fuzz(func(t *testing.T, b []byte, kind uint16) {
		if imgs, err := ParseFatbin(b); err == nil {
			for _, im := range imgs {
				_, _ = ImageParams(b, im)
			}
		}
		_, _ = ImageParams(b, FatbinImage{Kind: ImageKind(kind), Size: len(b)})
	})
}
