package cuda

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entry builds one fatbin entry: a header of hsize bytes and the payload
// padded to 8 bytes, as nvcc writes them.
func entry(kind ImageKind, arch, major, minor int, hsize int, payload []byte, compressed bool) []byte {
	padded := (len(payload) + 7) / 8 * 8
	b := make([]byte, hsize+padded)
	le := binary.LittleEndian
	le.PutUint16(b[0:], uint16(kind))
	le.PutUint16(b[2:], 0x0101)
	le.PutUint32(b[4:], uint32(hsize))
	le.PutUint64(b[8:], uint64(padded))
	if compressed {
		le.PutUint32(b[16:], uint32(len(payload)))
		le.PutUint64(b[56:], 4*uint64(len(payload)))
	}
	le.PutUint16(b[24:], uint16(minor))
	le.PutUint16(b[26:], uint16(major))
	le.PutUint32(b[28:], uint32(arch))
	le.PutUint64(b[40:], 0x11)
	copy(b[hsize:], payload)
	return b
}

func container(entries ...[]byte) []byte {
	n := 0
	for _, e := range entries {
		n += len(e)
	}
	b := make([]byte, 16, 16+n)
	binary.LittleEndian.PutUint32(b[0:], FatbinMagic)
	binary.LittleEndian.PutUint16(b[4:], 1)
	binary.LittleEndian.PutUint16(b[6:], 16)
	binary.LittleEndian.PutUint64(b[8:], uint64(n))
	for _, e := range entries {
		b = append(b, e...)
	}
	return b
}

func TestParseFatbinHandBuilt(t *testing.T) {
	elf := []byte("\x7fELF-sm90-cubin") // 15 bytes: padded to 16
	ptx := []byte("//\n.version 9.0\n.target sm_120\n")
	fb := container(
		entry(KindELF, 90, 1, 8, 64, elf, false),
		entry(KindELFAlt, 100, 1, 8, 112, []byte("\x7fELF-sm100"), true),
		entry(KindPTX, 120, 9, 0, 80, ptx, false),
	)
	fb = append(fb, container(entry(KindELF, 120, 1, 8, 112, []byte("\x7fELF-sm120"), false))...)
	imgs, err := ParseFatbin(fb)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name       string
		kind       string
		code       [2]int
		off, size  int
		compressed bool
	}{
		{"sm_90", "SASS", [2]int{1, 8}, 16 + 64, 16, false},
		{"sm_100", "SASS", [2]int{1, 8}, 16 + 64 + 16 + 112, 10, true},
		{"compute_120", "PTX", [2]int{9, 0}, 16 + 64 + 16 + 112 + 16 + 80, 32, false},
		{"sm_120", "SASS", [2]int{1, 8}, len(fb) - 16 - 112 + 16 + 0, 16, false},
	}
	// Second container: header at len(first); its entry payload follows.
	first := 16 + 64 + 16 + 112 + 16 + 80 + 32
	want[3].off = first + 16 + 112
	if len(imgs) != len(want) {
		t.Fatalf("got %d images, want %d: %+v", len(imgs), len(want), imgs)
	}
	for i, w := range want {
		g := imgs[i]
		if g.ArchName() != w.name || g.Kind.String() != w.kind || [2]int{g.CodeMajor, g.CodeMinor} != w.code ||
			g.Offset != w.off || g.Size != w.size || g.Compressed != w.compressed {
			t.Errorf("image %d = %+v (%s %s), want %+v", i, g, g.ArchName(), g.Kind, w)
		}
	}
	if got := string(fb[imgs[0].Offset : imgs[0].Offset+len(elf)]); got != string(elf) {
		t.Errorf("payload of image 0 = %q", got)
	}
	if got := string(fb[imgs[2].Offset : imgs[2].Offset+len(ptx)]); got != string(ptx) {
		t.Errorf("payload of image 2 = %q", got)
	}
}

func TestParseFatbinErrors(t *testing.T) {
	good := container(entry(KindELF, 90, 1, 8, 64, []byte("abcdefgh"), false))
	bad := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty file", nil, "empty file"},
		{"cubin, not a fatbin", []byte("\x7fELF\x02\x01\x01\x33\x07\x00\x00\x00\x00\x00\x00\x00"), "magic 0x464c457f"},
		{"truncated container", good[:len(good)-1], "runs past the end of the file"},
		{"short tail", append(append([]byte(nil), good...), 1, 2, 3), "3 trailing bytes"},
		{"entry header too small", bad(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[16+4:], 8); return b }), "entry header size 8"},
		{"payload past container", bad(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[16+8:], 1<<20); return b }), "runs past its container"},
		// Sizes that wrap a uint64 sum back to the start used to stall the
		// parser in an endless loop.
		{"container size wraps", bad(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[8:], 1<<64-16); return b }), "runs past the end of the file"},
		{"payload size wraps", bad(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[16+8:], 1<<64-64); return b }), "runs past its container"},
		{"entry header past container", bad(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[16+4:], 1<<31); return b }), "runs past its container"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFatbin(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestLoadableImage(t *testing.T) {
	imgs := []FatbinImage{
		{Kind: KindELF, Arch: 90}, {Kind: KindELF, Arch: 100}, {Kind: KindELF, Arch: 120}, {Kind: KindPTX, Arch: 120},
	}
	tests := []struct {
		name         string
		major, minor int
		want         string
		ok           bool
	}{
		{"H200 runs its SASS", 9, 0, "sm_90", true},
		{"B200 runs its SASS", 10, 0, "sm_100", true},
		{"B300 (10.3) runs sm_100 SASS", 10, 3, "sm_100", true},
		{"RTX 5090 runs sm_120 SASS", 12, 0, "sm_120", true},
		{"sm_121 runs sm_120 SASS", 12, 1, "sm_120", true},
		{"A100 has neither SASS nor older PTX", 8, 0, "", false},
		{"a future 13.0 JITs the compute_120 PTX", 13, 0, "compute_120", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			im, ok := LoadableImage(imgs, tt.major, tt.minor)
			if ok != tt.ok || (ok && im.ArchName() != tt.want) {
				t.Fatalf("got %s, %v; want %s, %v", im.ArchName(), ok, tt.want, tt.ok)
			}
		})
	}
}

// The kernel build's real output (KD_FATBIN, or ../build/kernels.fatbin)
// when it is present: every entry parses,
// and it holds SASS for sm_90, sm_100 and sm_120 plus PTX (docs/architecture.md).
func TestParseBuiltFatbin(t *testing.T) {
	path := os.Getenv("KD_FATBIN")
	if path == "" {
		path = filepath.Join("..", "build", "kernels.fatbin")
	}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("%s not built (make kernels)", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	imgs, err := ParseFatbin(b)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	ptx := false
	for _, im := range imgs {
		have[im.ArchName()] = true
		ptx = ptx || im.Kind == KindPTX
		if im.Offset+im.Size > len(b) {
			t.Errorf("%s payload [%d,+%d) past the file", im.ArchName(), im.Offset, im.Size)
		}
	}
	for _, a := range []string{"sm_90", "sm_100", "sm_120"} {
		if !have[a] {
			t.Errorf("%s holds no %s image; has %v", path, a, have)
		}
	}
	if !ptx {
		t.Errorf("%s holds no PTX", path)
	}
}
