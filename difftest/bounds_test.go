// Tests of the bounded reads (docs/interfaces.md, issue 9 item 4): hostile
// capture files and exec outputs — /dev/zero, FIFOs, sparse files of
// 2 and 64 GiB, headers declaring tensors no contract allows — are refused
// within seconds and a few MB, never read whole.

package difftest_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/proc"
	"github.com/kerneldiff/kerneldiff/internal/boundtest"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
)

// boundedAlloc is what one hostile input may cost: far below the file
// sizes (2 and 64 GiB) the tests use, above what the checks need.
const boundedAlloc = 64 << 20

// bounded runs f and fails the test when it does not return within 10 s
// (a FIFO open that blocks, a read of 64 GiB) or allocates more than
// boundedAlloc bytes.
func bounded(t *testing.T, f func()) {
	t.Helper()
	boundtest.Within(t, t.Name(), 10*time.Second, boundedAlloc, f)
}

// sparseFile writes a safetensors file at path whose header is header and
// whose data section is dataLen bytes of holes (os.Truncate: no disk).
func sparseFile(t *testing.T, path, header string, dataLen int64) {
	t.Helper()
	if err := os.WriteFile(path, captureFile(header, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 8+int64(len(header))+dataLen); err != nil {
		t.Fatal(err)
	}
}

// hostileFiles are the files every reader of safetensors must refuse
// quickly; each makes the file at path and returns what the error says.
func hostileFiles(t *testing.T, dir string) []struct {
	name string
	make func(path string)
	want []string
} {
	x2x3 := `"x":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}`
	meta := `"__metadata__":{"kernel":"copy_kernel","case":"copy_kernel/big","params":"{\"rows\":131072,\"cols\":131072,\"stamp\":1}"}`
	return []struct {
		name string
		make func(path string)
		want []string
	}{
		{"/dev/zero", func(p string) { must(t, os.Symlink("/dev/zero", p)) }, []string{"must be a regular file", "not a regular file (a character device)"}},
		{"FIFO", func(p string) { boundtest.FIFO(t, p) }, []string{"not a regular file (a FIFO)"}},
		{"folder", func(p string) { must(t, os.Mkdir(p, 0o755)) }, []string{"not a regular file (a folder)"}},
		{"sparse 64 GiB of zeros", func(p string) {
			must(t, os.WriteFile(p, nil, 0o644))
			must(t, os.Truncate(p, 64<<30))
		}, []string{"header: not a JSON object"}},
		{"sparse 64 GiB, header length 2^34", func(p string) {
			must(t, os.WriteFile(p, binary.LittleEndian.AppendUint64(nil, 1<<34), 0o644))
			must(t, os.Truncate(p, 64<<30))
		}, []string{"header: header length 17179869184 is above the limit of 16777216 bytes (MaxHeaderBytes)"}},
		{"good header, 64 GiB of trailing bytes", func(p string) { sparseFile(t, p, "{"+x2x3+"}", 64<<30) },
			[]string{"tensors cover 24 bytes, the data section holds 68719476736 (trailing bytes)"}},
		{"header declaring a 64 GiB tensor", func(p string) {
			sparseFile(t, p, `{`+meta+`,"x":{"dtype":"F32","shape":[131072,131072],"data_offsets":[0,68719476736]}}`, 64<<30)
		}, nil}, // what is refused depends on the reader: see the callers
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadCaptureBounded: replay's reader refuses every hostile file with
// a *CaptureError naming the file and the rule, quickly and cheaply.
func TestReadCaptureBounded(t *testing.T) {
	dir := t.TempDir()
	for i, tc := range hostileFiles(t, dir) {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("c%d.safetensors", i))
			tc.make(path)
			want := tc.want
			if want == nil {
				// copy_kernel has no size limit of its own: the backstop.
				want = []string{"the case's tensors hold 68719476736 bytes, above the limit of 8589934592 (MaxSafetensorsData)"}
			}
			var err error
			bounded(t, func() { _, _, err = difftest.ReadCapture(path) })
			t.Log(err)
			if err == nil || !errors.Is(err, difftest.ErrCapture) {
				t.Fatalf("got %v, want an ErrCapture", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "capture "+path+": ") {
				t.Errorf("%q does not name the file first", msg)
			}
			for _, w := range want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
			// The generic reader refuses it the same way.
			bounded(t, func() { _, _, err = difftest.ReadSafetensors(path) })
			if err == nil || !errors.Is(err, difftest.ErrCapture) {
				t.Errorf("ReadSafetensors: got %v, want an ErrCapture", err)
			}
		})
	}
}

// TestReadCaptureKernelBounds: a header that declares tensors of sizes
// the kernel's contract does not allow is refused by the kernel's own
// rule, naming the tensor or parameter, before a byte of data is read.
func TestReadCaptureKernelBounds(t *testing.T) {
	dir := t.TempDir()
	topkMeta := `"__metadata__":{"kernel":"topk_transform","case":"topk_transform/big","params":"{\"K\":512,\"P\":64,\"return_raw\":true}"}`
	nrParams := `{\"norm\":\"rms\",\"rope_offset\":64,\"rope_style\":\"interleaved\",\"hadamard\":true,\"store\":\"fp8\",\"scale_fmt\":\"plain\",\"page_size\":64,\"num_pages\":1,\"eps\":1e-06,\"model\":\"v4\"}`
	nrMeta := `"__metadata__":{"kernel":"norm_rope_store","case":"norm_rope_store/big","params":"` + nrParams + `"}`
	entry := func(name, dtype string, shape string, begin, end int64) string {
		return fmt.Sprintf(`%q:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, name, dtype, shape, begin, end)
	}
	for _, tc := range []struct {
		name, header string
		dataLen      int64
		want         string
	}{
		{"topk scores of 64 GiB", "{" + topkMeta + "," +
			entry("scores", "F32", "[65536,262144]", 0, 64<<30) + "," +
			entry("seq_lens", "I32", "[65536]", 64<<30, 64<<30+4*65536) + "," +
			entry("page_table", "I32", "[65536,1]", 64<<30+4*65536, 64<<30+8*65536) + "}",
			64<<30 + 8*65536, "batch·stride: exceeds the limit of 268435456 scores: got 17179869184"},
		{"topk seq_lens of 8 GiB", "{" + topkMeta + "," +
			entry("scores", "F32", "[2,8]", 0, 64) + "," +
			entry("seq_lens", "I32", "[2147483647]", 64, 64+4*2147483647) + "," +
			entry("page_table", "I32", "[2,1]", 64+4*2147483647, 72+4*2147483647) + "}",
			72 + 4*2147483647, "seq_lens: shape must be [2] (from the params), got [2147483647]"},
		{"norm_rope_store x of 64 GiB", "{" + nrMeta + "," +
			entry("x", "BF16", "[4194304,8192]", 0, 64<<30) + "," +
			entry("weight", "F32", "[128]", 64<<30, 64<<30+512) + "," +
			entry("bias", "F32", "[128]", 64<<30+512, 64<<30+1024) + "," +
			entry("freqs", "F32", "[1,64]", 64<<30+1024, 64<<30+1280) + "," +
			entry("positions", "I64", "[4194304]", 64<<30+1280, 64<<30+1280+8*4194304) + "," +
			entry("out_loc", "I64", "[4194304]", 64<<30+1280+8*4194304, 64<<30+1280+16*4194304) + "}",
			64<<30 + 1280 + 16*4194304, "x: x of N·x_stride = 4194304·8192 bf16 values is 68719476736 bytes, over the limit of 1073741824 (MaxXBytes)"},
		{"norm_rope_store freqs of 2 GiB", "{" + nrMeta + "," +
			entry("x", "BF16", "[1,128]", 0, 256) + "," +
			entry("weight", "F32", "[128]", 256, 768) + "," +
			entry("bias", "F32", "[128]", 768, 1280) + "," +
			entry("freqs", "F32", "[8388608,64]", 1280, 1280+256*8388608) + "," +
			entry("positions", "I64", "[1]", 1280+256*8388608, 1288+256*8388608) + "," +
			entry("out_loc", "I64", "[1]", 1288+256*8388608, 1296+256*8388608) + "}",
			1296 + 256*8388608, "freqs: max_pos (rows of freqs) must be in [1, 2097152] (MaxPositions), got 8388608"},
		{"norm_rope_store a saved cache of 64 GiB", "{" + nrMeta + "," +
			entry("x", "BF16", "[1,128]", 0, 256) + "," +
			entry("weight", "F32", "[128]", 256, 768) + "," +
			entry("bias", "F32", "[128]", 768, 1280) + "," +
			entry("freqs", "F32", "[1,64]", 1280, 1536) + "," +
			entry("positions", "I64", "[1]", 1536, 1544) + "," +
			entry("out_loc", "I64", "[1]", 1544, 1552) + "," +
			entry("got.cache", "U8", "[8134407,8448]", 1552, 1552+8134407*8448) + "}",
			1552 + 8134407*8448, `"got.cache": must be U8[1 8448] like output cache, got U8[8134407 8448]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".safetensors")
			sparseFile(t, path, tc.header, tc.dataLen)
			var err error
			bounded(t, func() { _, _, err = difftest.ReadCapture(path) })
			t.Log(err)
			if err == nil || !errors.Is(err, difftest.ErrCapture) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an ErrCapture saying %q", err, tc.want)
			}
		})
	}
}

// TestExecOutputBounded: an exec program whose out.safetensors is hostile
// fails its case as bad-output, quickly and cheaply, and a huge tensor the
// contract does not ask for is never read.
func TestExecOutputBounded(t *testing.T) {
	dir := t.TempDir()
	// A 2 GiB out.safetensors whose header declares y as 2^29 floats.
	y2G := filepath.Join(dir, "y-2GiB.safetensors")
	sparseFile(t, y2G, `{"y":{"dtype":"F32","shape":[536870912],"data_offsets":[0,2147483648]},"cache":{"dtype":"U8","shape":[6],"data_offsets":[2147483648,2147483654]}}`, 2<<30+6)
	// Correct outputs followed by a 64 GiB tensor the contract does not
	// name: the outputs are read, the rest never is.
	c := fakekernel.CopyCase(2, 3)
	want := []*difftest.Tensor{difftest.MustTensor("y", difftest.F32, 2, 3), fakekernel.Canary(6)}
	must(t, fakekernel.CopyKernel{}.Reference(c, want))
	junk := filepath.Join(dir, "junk-64GiB.safetensors")
	header := `{"y":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"cache":{"dtype":"U8","shape":[6],"data_offsets":[24,30]},"junk":{"dtype":"U8","shape":[65536,1048576],"data_offsets":[30,68719476766]}}`
	body := append(append(captureFile(header, nil), want[0].Data...), want[1].Data...)
	must(t, os.WriteFile(junk, body, 0o644))
	must(t, os.Truncate(junk, int64(len(body))+64<<30))

	for _, tc := range []struct {
		name, script string
		class        difftest.Class // Pass: Run succeeds
		want         string
	}{
		{"sparse 64 GiB", `truncate -s 64G "$2"`, difftest.BadOutput, "unreadable out.safetensors: header: not a JSON object"},
		{"sparse 2 GiB", `truncate -s 2G "$2"`, difftest.BadOutput, "unreadable out.safetensors: header: not a JSON object"},
		{"symlink to /dev/zero", `ln -s /dev/zero "$2"`, difftest.BadOutput, "unreadable out.safetensors: refused, a safetensors file must be a regular file: not a regular file (a character device)"},
		{"FIFO", `mkfifo "$2"`, difftest.BadOutput, "unreadable out.safetensors: refused, a safetensors file must be a regular file: not a regular file (a FIFO)"},
		{"y of 2 GiB", `ln -s "$0" "$2"`, difftest.BadOutput, "out.safetensors: y is F32[536870912], the contract says F32[2 3]"},
		{"outputs and 64 GiB of junk", `ln -s "$0" "$2"`, difftest.Pass, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arg0 := "sh"
			switch tc.name {
			case "y of 2 GiB":
				arg0 = y2G
			case "outputs and 64 GiB of junk":
				arg0 = junk
			}
			impl := proc.NewExecImpl("sh -c "+difftest.ShellQuote(tc.script)+" "+difftest.ShellQuote(arg0), 20*time.Second)
			defer impl.Close()
			bufs := fakekernel.Buffers(c)
			var err error
			bounded(t, func() { _, err = impl.Run(context.Background(), fakekernel.CopyKernel{}, c, bufs) })
			t.Log(err)
			if tc.class == difftest.Pass {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if res := (fakekernel.CopyKernel{}).Check(c, difftest.TensorsOf(bufs), want); res.Failed() {
					t.Errorf("outputs read back wrong: %s", res.Message)
				}
				return
			}
			var re *difftest.RunError
			if !errors.As(err, &re) || re.Class != tc.class || !strings.Contains(re.Msg, tc.want) {
				t.Fatalf("got %v, want class %s saying %q", err, tc.class, tc.want)
			}
		})
	}
}

// TestOpenRegular: special files are refused by type, without blocking;
// a link to a regular file is followed.
func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := boundtest.FIFO(t, filepath.Join(dir, "fifo"))
	regular := filepath.Join(dir, "r")
	must(t, os.WriteFile(regular, []byte("12345"), 0o644))
	link := filepath.Join(dir, "link")
	must(t, os.Symlink(regular, link))
	for _, tc := range []struct {
		path, want string
	}{
		{"/dev/zero", "not a regular file (a character device)"},
		{"/dev/null", "not a regular file (a character device)"},
		{fifo, "not a regular file (a FIFO)"},
		{dir, "not a regular file (a folder)"},
	} {
		var err error
		bounded(t, func() { _, err = difftest.ReadFileLimit(tc.path, 1<<20) })
		if !errors.Is(err, difftest.ErrNotRegular) || err.Error() != tc.want {
			t.Errorf("ReadFileLimit(%s) = %v, want %q", tc.path, err, tc.want)
		}
	}
	if b, err := difftest.ReadFileLimit(link, 5); err != nil || string(b) != "12345" {
		t.Errorf("ReadFileLimit(link, 5) = %q, %v; want the file's 5 bytes", b, err)
	}
	if _, err := difftest.ReadFileLimit(regular, 4); !errors.Is(err, difftest.ErrTooLarge) || err.Error() != "file too large: 5 bytes, above the limit of 4 bytes" {
		t.Errorf("ReadFileLimit(5 bytes, 4) = %v, want ErrTooLarge stating both sizes", err)
	}
}
