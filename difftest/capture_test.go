// Tests of the capture file format (safetensors), on the test-only kernel
// copy_kernel (fakekernel.CopyKernel) that the capture and exec tests share.

package difftest_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
	_ "github.com/kerneldiff/kerneldiff/kernels/logits"   // registers indexer_logits
	_ "github.com/kerneldiff/kerneldiff/kernels/normrope" // registers norm_rope_store
	_ "github.com/kerneldiff/kerneldiff/kernels/pipeline" // registers pipeline
	_ "github.com/kerneldiff/kerneldiff/kernels/topk"     // registers topk_transform
)

func TestCaptureRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rows, cols int
		extra      bool
	}{
		{"inputs and every kind of extra", 3, 5, true},
		{"inputs only", 2, 4, false},
		{"zero rows: x is [0, 4]", 0, 4, true},
		{"zero cols: x is [3, 0], cache is [0]", 3, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakekernel.CopyCase(tc.rows, tc.cols)
			c.Impl = "serve:python -m kerneldiff serve  mine.py" // two spaces: kept as given
			var extra []*difftest.Tensor
			if tc.extra {
				want := []*difftest.Tensor{difftest.MustTensor("want.y", difftest.F32, tc.rows, tc.cols), fakekernel.Canary(2 * tc.cols)}
				want[1].Name = "want.cache"
				if err := (fakekernel.CopyKernel{}).Reference(c, want); err != nil {
					t.Fatal(err)
				}
				got := want[0].Clone()
				got.Name = "got.y"
				if got.Len() > 0 {
					got.SetF32(0, 1e9)
				}
				extra = []*difftest.Tensor{fakekernel.Canary(2 * tc.cols), got, want[0], want[1]}
			}
			path := filepath.Join(t.TempDir(), "case.safetensors")
			if err := difftest.WriteCapture(path, c, extra); err != nil {
				t.Fatal(err)
			}
			back, gotExtra, err := difftest.ReadCapture(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(back.Inputs) != len(c.Inputs) {
				t.Fatalf("read %d inputs, wrote %d", len(back.Inputs), len(c.Inputs))
			}
			if back.Impl != c.Impl {
				t.Errorf("impl %q came back as %q", c.Impl, back.Impl)
			}
			for _, in := range c.Inputs {
				b := back.Input(in.Name)
				if b == nil || b.Digest() != in.Digest() {
					t.Errorf("input %s: SHA-256 changed across the capture", in.Name)
				}
			}
			if diff := cmp.Diff(c.Params, back.Params); diff != "" {
				t.Errorf("params (-wrote +read):\n%s", diff)
			}
			if diff := cmp.Diff(c.Outputs, back.Outputs); diff != "" {
				t.Errorf("outputs (-wrote +read):\n%s", diff)
			}
			if back.ID != c.ID || back.Kernel != c.Kernel || back.Family != c.Family || back.Seed != c.Seed || back.Key != c.Key {
				t.Errorf("identity: read %q %q %q %d %#x, wrote %q %q %q %d %#x",
					back.ID, back.Kernel, back.Family, back.Seed, back.Key, c.ID, c.Kernel, c.Family, c.Seed, c.Key)
			}
			if len(gotExtra) != len(extra) {
				t.Errorf("read %d extra tensors, wrote %d", len(gotExtra), len(extra))
			}
			for _, e := range extra {
				g := gotExtra[e.Name]
				if g == nil || g.Digest() != e.Digest() {
					t.Errorf("extra %s: not read back byte-identical", e.Name)
				}
			}
		})
	}
}

// TestCaptureMetadata pins the __metadata__ keys and spellings a capture
// carries, read with the plain safetensors reader.
func TestCaptureMetadata(t *testing.T) {
	c := fakekernel.CopyCase(1, 2)
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := difftest.WriteCapture(path, c, nil); err != nil {
		t.Fatal(err)
	}
	_, meta, err := difftest.ReadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"kernel":    "copy_kernel",
		"params":    `{"rows":1,"cols":2,"stamp":11}`,
		"case":      "copy_kernel/r1c2",
		"family":    "ramp",
		"seed":      "42",
		"key":       "0x9e3779b97f4a7c15",
		"generator": fmt.Sprint(difftest.GeneratorVersion),
	}
	if diff := cmp.Diff(want, meta); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("capture mode: %v %v, want 0644", st.Mode(), err)
	}
}

// TestReadSafetensorsLayout reads a file written byte by byte here, so
// the reader is checked against the format itself, not against the writer.
func TestReadSafetensorsLayout(t *testing.T) {
	header := `{"__metadata__":{"kernel":"k"},"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]},` +
		`"b":{"dtype":"BF16","shape":[1,1],"data_offsets":[8,10]},"e":{"dtype":"F64","shape":[0,3],"data_offsets":[10,10]}}`
	data := []byte{1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0x80, 0x3f}
	path := filepath.Join(t.TempDir(), "hand.safetensors")
	if err := os.WriteFile(path, captureFile(header, data), 0o644); err != nil {
		t.Fatal(err)
	}
	tensors, meta, err := difftest.ReadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	if meta["kernel"] != "k" || len(meta) != 1 {
		t.Errorf("metadata %v, want kernel=k only", meta)
	}
	a, b, e := tensors["a"], tensors["b"], tensors["e"]
	if a == nil || a.DType != difftest.I32 || a.I32(0) != 1 || a.I32(1) != -2 {
		t.Errorf("a = %+v, want I32 [1 -2]", a)
	}
	if b == nil || b.DType != difftest.BF16 || !slices.Equal(b.Shape, []int{1, 1}) || b.U16(0) != 0x3f80 {
		t.Errorf("b = %+v, want BF16 [[1.0]] (0x3f80)", b)
	}
	if e == nil || e.DType != difftest.F64 || !slices.Equal(e.Shape, []int{0, 3}) || len(e.Data) != 0 {
		t.Errorf("e = %+v, want F64 [0 3] with no bytes", e)
	}
}

// captureFile assembles a safetensors file: 8-byte little-endian header
// length, the header, the data.
func captureFile(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

// TestReadCaptureErrors: every malformed capture gives one line that names
// the file and the problem, and wraps ErrCapture (and ErrInvalidInput when
// the kernel rejects the inputs).
func TestReadCaptureErrors(t *testing.T) {
	good := fakekernel.CopyCase(2, 3)
	goodMeta := map[string]string{"kernel": "copy_kernel", "case": good.ID, "params": `{"rows":2,"cols":3,"stamp":1}`}
	with := func(k, v string) map[string]string {
		m := maps.Clone(goodMeta)
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	x := good.Input("x")
	xAsI32 := x.Clone()
	xAsI32.DType = difftest.I32
	xNaN := x.Clone()
	xNaN.SetF32(4, float32(math.NaN()))
	cacheI32 := difftest.MustTensor("cache", difftest.I32, 6)
	gotZ := difftest.MustTensor("got.z", difftest.F32, 2, 3)
	stray := difftest.MustTensor("stray", difftest.U8, 1)
	wrongShapeY := difftest.MustTensor("want.y", difftest.F32, 3, 2)

	// Files built with the writer, then tampered with.
	viaWriter := func(ts []*difftest.Tensor, meta map[string]string, tamper func([]byte) []byte) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			if err := difftest.WriteSafetensors(path, ts, meta); err != nil {
				t.Fatal(err)
			}
			if tamper == nil {
				return
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tamper(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	raw := func(b []byte) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	xs := []*difftest.Tensor{x}
	for _, tc := range []struct {
		name    string
		make    func(t *testing.T, path string)
		want    []string // substrings of the message
		invalid bool     // also wraps ErrInvalidInput
	}{
		// Container.
		{"empty file", raw(nil), []string{"header", "0 bytes, too short"}, false},
		{"5-byte file", raw([]byte{1, 2, 3, 4, 5}), []string{"5 bytes, too short"}, false},
		{"header length beyond the file", viaWriter(xs, goodMeta, func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b, 1<<40)
			return b
		}), []string{"header length 1099511627776 runs past the end"}, false},
		{"truncated data", viaWriter(xs, goodMeta, func(b []byte) []byte { return b[:len(b)-3] }),
			[]string{`"x"`, "run past the 21-byte data section (truncated file)"}, false},
		{"trailing bytes", viaWriter(xs, goodMeta, func(b []byte) []byte { return append(b, 0, 0) }),
			[]string{"tensors cover 24 bytes, the data section holds 26"}, false},
		{"header is not JSON", raw(captureFile(`{"x": {"dtype": "F32",`, nil)), []string{"header: not a JSON object"}, false},
		{"header entry is not an object", raw(captureFile(`{"x": 3}`, nil)), []string{`"x": header entry must be {"dtype": string,`, "got 3"}, false},
		{"metadata value not a string", raw(captureFile(`{"__metadata__": {"kernel": 1}}`, nil)), []string{`__metadata__["kernel"]: must be a string, got 1`}, false},
		{"dtype kerneldiff does not use", raw(captureFile(`{"x":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}}`, []byte{0})),
			[]string{`"x": dtype "F8_E4M3" is not one of`}, false},
		{"offsets that skip bytes", raw(captureFile(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, []byte{0, 0})),
			[]string{"header: data bytes [0, 1) belong to no tensor"}, false},
		{"offsets that overlap", raw(captureFile(`{"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"y":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, make([]byte, 3))),
			[]string{`"y": data_offsets [1 3] overlap tensor "x"`}, false},
		{"offsets that run backwards", raw(captureFile(`{"x":{"dtype":"U8","shape":[0],"data_offsets":[2,1]}}`, make([]byte, 2))),
			[]string{`"x": data_offsets [2 1] run backwards`}, false},
		{"entry with an unknown key", raw(captureFile(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"strides":[1]}}`, make([]byte, 1))),
			[]string{`"x": header entry must be`}, false},
		{"entry without a shape", raw(captureFile(`{"x":{"dtype":"U8","data_offsets":[0,1]}}`, make([]byte, 1))),
			[]string{`"x": header entry must be`}, false},
		{"negative dimension", raw(captureFile(`{"x":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}`, make([]byte, 1))),
			[]string{`"x": header entry must be`}, false},
		{"dimension above 2^31-1", raw(captureFile(`{"x":{"dtype":"U8","shape":[2147483648],"data_offsets":[0,1]}}`, make([]byte, 1))),
			[]string{`"x": dimension 0 is 2147483648, above 2^31-1`}, false},
		{"shape beyond any file", raw(captureFile(`{"x":{"dtype":"F64","shape":[2147483647,2147483647,2147483647],"data_offsets":[0,8]}}`, make([]byte, 8))),
			[]string{`"x": shape [2147483647 2147483647 2147483647] of F64 needs 2^62 bytes or more`}, false},
		{"offsets that disagree with the shape", raw(captureFile(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4))),
			[]string{`"x": data_offsets [0 4] hold 4 bytes, shape [2] of F32 needs 8`}, false},
		// Metadata.
		{"no kernel", viaWriter(xs, with("kernel", ""), nil), []string{`__metadata__["kernel"]: missing`}, false},
		{"no metadata at all", viaWriter(xs, nil, nil), []string{`__metadata__["kernel"]: missing`}, false},
		{"params not JSON", viaWriter(xs, with("params", `{"rows":2,`), nil), []string{`__metadata__["params"]: not valid JSON`}, false},
		{"seed not a number", viaWriter(xs, with("seed", "forty-two"), nil), []string{`__metadata__["seed"]: must be a decimal uint64, got "forty-two"`}, false},
		{"key not a number", viaWriter(xs, with("key", "0xZZ"), nil), []string{`__metadata__["key"]`}, false},
		{"unknown kernel", viaWriter(xs, with("kernel", "topk_transfrom"), nil), []string{`unknown kernel "topk_transfrom"`, "copy_kernel"}, false},
		// What the kernel rejects.
		{"params the kernel rejects", viaWriter(xs, with("params", `{"rows":2,"colz":3}`), nil), []string{"kernel copy_kernel rejects the tensors", "colz"}, false},
		{"input of the wrong dtype", viaWriter([]*difftest.Tensor{xAsI32}, goodMeta, nil), []string{"x: dtype must be F32, got I32"}, true},
		{"missing input", viaWriter([]*difftest.Tensor{stray}, goodMeta, nil), []string{"x: missing from the capture"}, true},
		{"input of the wrong shape", viaWriter(xs, with("params", `{"rows":3,"cols":2,"stamp":1}`), nil), []string{"x: shape must be [3 2]"}, true},
		{"input breaking the contract", viaWriter([]*difftest.Tensor{xNaN}, goodMeta, nil), []string{"x[1][1]: must be finite, got NaN"}, true},
		// Extras.
		{"InOut state of the wrong dtype", viaWriter([]*difftest.Tensor{x, cacheI32}, goodMeta, nil), []string{`"cache": must be U8[6] like output cache, got I32[6]`}, false},
		{"got. naming no output", viaWriter([]*difftest.Tensor{x, gotZ}, goodMeta, nil), []string{`"got.z": is neither an input nor an output (y, cache`}, false},
		{"want. of the wrong shape", viaWriter([]*difftest.Tensor{x, wrongShapeY}, goodMeta, nil), []string{`"want.y": must be F32[2 3]`}, false},
		{"stray tensor", viaWriter([]*difftest.Tensor{x, stray}, goodMeta, nil), []string{`"stray": is neither`}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.safetensors")
			tc.make(t, path)
			c, extra, err := difftest.ReadCapture(path)
			if err == nil {
				t.Fatalf("ReadCapture accepted it: case %v, extra %v", c, extra)
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.HasPrefix(msg, "capture "+path+": ") || strings.Contains(msg, "\n") {
				t.Errorf("want one line starting %q, got %q", "capture "+path+": ", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			if !errors.Is(err, difftest.ErrCapture) {
				t.Errorf("%v does not wrap ErrCapture", err)
			}
			if got := errors.Is(err, difftest.ErrInvalidInput); got != tc.invalid {
				t.Errorf("errors.Is(err, ErrInvalidInput) = %v, want %v", got, tc.invalid)
			}
		})
	}
}

func TestReadCaptureMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.safetensors")
	_, _, err := difftest.ReadCapture(path)
	if !errors.Is(err, os.ErrNotExist) || !errors.Is(err, difftest.ErrCapture) {
		t.Errorf("got %v, want an ErrCapture wrapping ErrNotExist", err)
	}
}

// TestReadCaptureExecInput: an exec protocol in.safetensors (kernel,
// params and case only) replays as a capture.
func TestReadCaptureExecInput(t *testing.T) {
	c := fakekernel.CopyCase(2, 2)
	path := filepath.Join(t.TempDir(), "in.safetensors")
	meta := map[string]string{"kernel": c.Kernel, "params": `{"rows":2,"cols":2,"stamp":11}`, "case": c.ID}
	if err := difftest.WriteSafetensors(path, []*difftest.Tensor{c.Input("x"), fakekernel.Canary(4)}, meta); err != nil {
		t.Fatal(err)
	}
	back, extra, err := difftest.ReadCapture(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Seed != 0 || back.Key != 0 || back.ID != c.ID || back.Input("x").Digest() != c.Input("x").Digest() {
		t.Errorf("read %+v", back)
	}
	if extra["cache"] == nil || !bytes.Equal(extra["cache"].Data, fakekernel.Canary(4).Data) {
		t.Errorf("cache not returned as extra: %v", extra)
	}
}

func TestWriteCaptureErrors(t *testing.T) {
	c := fakekernel.CopyCase(2, 3)
	short := difftest.MustTensor("want.y", difftest.F32, 2, 3)
	short.Data = short.Data[:20]
	bad := *c
	bad.Params = func() {}
	for _, tc := range []struct {
		name  string
		c     *difftest.Case
		extra []*difftest.Tensor
		want  string
	}{
		{"extra reusing an input name", c, []*difftest.Tensor{c.Input("x").Clone()}, `"x": is also an input of the case`},
		{"extra naming no output", c, []*difftest.Tensor{difftest.MustTensor("got.q", difftest.U8, 1)}, `"got.q": is neither an input nor an output`},
		{"extra of the wrong shape", c, []*difftest.Tensor{difftest.MustTensor("cache", difftest.U8, 5)}, `"cache": must be U8[6] like output cache, got U8[5]`},
		{"extra named twice", c, []*difftest.Tensor{fakekernel.Canary(6), fakekernel.Canary(6)}, `"cache": name used twice`},
		{"data shorter than the shape", c, []*difftest.Tensor{short}, `"want.y": bad layout`},
		{"params that do not marshal", &bad, nil, `__metadata__["params"]: cannot marshal`},
		{"no case", nil, nil, "case has no kernel or id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "w.safetensors")
			err := difftest.WriteCapture(path, tc.c, tc.extra)
			if err == nil || !errors.Is(err, difftest.ErrCapture) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("got %v, want an ErrCapture naming %s and %q", err, path, tc.want)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("left files behind: %v", ents)
			}
		})
	}
}

// FuzzReadSafetensors: no input makes the reader panic, and what it
// accepts has consistent tensors.
func FuzzReadSafetensors(f *testing.F) {
	f.Add(captureFile(`{"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add(captureFile(`{"__metadata__":{"k":"v"},"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}`, nil))
	f.Add(captureFile(`{"a":{"dtype":"F64","shape":[18446744073709551615,2],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add(captureFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,18446744073709551615]}}`, make([]byte, 8)))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "f.safetensors")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		tensors, _, err := difftest.ReadSafetensors(path)
		if err != nil {
			if !errors.Is(err, difftest.ErrCapture) {
				t.Fatalf("error %v does not wrap ErrCapture", err)
			}
			return
		}
		for name, ts := range tensors {
			if err := ts.CheckLayout(ts.DType, -1); err != nil {
				t.Fatalf("accepted tensor %s with a bad layout: %v", name, err)
			}
		}
	})
}

// TestCaptureTopK round-trips a real topk_transform case (registered by
// the import in exec_test.go), then replays it with scores stored as I32.
func TestCaptureTopK(t *testing.T) {
	k, ok := difftest.LookupKernel("topk_transform")
	if !ok {
		t.Fatal("topk_transform is not registered")
	}
	spec := difftest.CaseSpec{Kernel: "topk_transform", Family: "straddle", Name: "capture",
		Params: map[string]any{"K": int64(8), "P": int64(2), "lengths": []any{int64(40), int64(0), int64(9)}}}
	c, err := k.NewCase(spec, 3, 0x13198a2e03707344)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]*difftest.Tensor, len(c.Outputs))
	for i, o := range c.Outputs {
		want[i] = difftest.MustTensor(difftest.WantPrefix+o.Name, o.DType, o.Shape...)
	}
	if err := k.Reference(c, want); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "topk.safetensors")
	if err := difftest.WriteCapture(path, c, want); err != nil {
		t.Fatal(err)
	}
	back, extra, err := difftest.ReadCapture(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range c.Inputs {
		if b := back.Input(in.Name); b == nil || b.Digest() != in.Digest() {
			t.Errorf("input %s: SHA-256 changed across the capture", in.Name)
		}
	}
	if diff := cmp.Diff(c.Params, back.Params); diff != "" {
		t.Errorf("params (-wrote +read):\n%s", diff)
	}
	if back.Seed != 3 || back.Key != 0x13198a2e03707344 || back.Family != "straddle" || back.ID != c.ID {
		t.Errorf("identity: %q %q seed %d key %#x", back.ID, back.Family, back.Seed, back.Key)
	}
	// The replayed case gives the same reference as the captured one.
	again := make([]*difftest.Tensor, len(back.Outputs))
	for i, o := range back.Outputs {
		again[i] = difftest.MustTensor(o.Name, o.DType, o.Shape...)
	}
	if err := k.Reference(back, again); err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if !bytes.Equal(again[i].Data, w.Data) || !bytes.Equal(extra[w.Name].Data, w.Data) {
			t.Errorf("%s: the replay's reference or the saved result differs", w.Name)
		}
	}

	// scores stored as I32 (same bytes, wrong dtype): exit-2 material.
	tensors, meta, err := difftest.ReadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	tensors["scores"].DType = difftest.I32
	all := slices.Collect(maps.Values(tensors))
	bad := filepath.Join(dir, "bad.safetensors")
	if err := difftest.WriteSafetensors(bad, all, meta); err != nil {
		t.Fatal(err)
	}
	_, _, err = difftest.ReadCapture(bad)
	t.Log(err)
	if err == nil || !errors.Is(err, difftest.ErrCapture) || !strings.Contains(err.Error(), "scores") ||
		!strings.Contains(err.Error(), "F32") || strings.Contains(err.Error(), "\n") {
		t.Errorf("got %v, want one line naming scores and F32", err)
	}
}
