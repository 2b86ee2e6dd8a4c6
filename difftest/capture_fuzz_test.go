// Fuzz targets for every parser of input the harness does not write
// itself: suite TOML, a capture file's header, a JSON Lines report
// record, a serve protocol frame, and the escaping of text for the
// terminal and XML. Each must return an error or a value that keeps its
// invariants, never panic, and never allocate from an unchecked size.
//
//	go test -run '^$' -fuzz FuzzParseSuite -fuzztime 20s -fuzzminimizetime 1s ./difftest
//
// (The engine minimizes each new interesting input for up to 60 s by
// default, during which its exec count stands still.)

package difftest_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
)

func fuzzCapture(f *testing.F) []byte {
	k := fakekernel.Kernel{}
	c, err := k.NewCase(difftest.CaseSpec{Kernel: fakekernel.Name, Family: "ramp", Name: "fz", Params: map[string]any{"n": int64(4), "slots": int64(8)}}, 1, 7)
	if err != nil {
		f.Fatal(err)
	}
	c.ID, c.Kernel = fakekernel.Name+"/fz", fakekernel.Name
	path := filepath.Join(f.TempDir(), "seed.safetensors")
	if err := difftest.WriteCapture(path, c, nil); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

func FuzzReadCapture(f *testing.F) {
	good := fuzzCapture(f)
	f.Add(good)
	n := binary.LittleEndian.Uint64(good)
	hdr := good[8 : 8+n]
	for _, edit := range []struct{ from, to string }{
		{`"fake_scatter/fz"`, `"norm_rope_store/fz"`},
		{`"I64"`, `"F8_E4M3"`},
		{`"data_offsets":[0,`, `"data_offsets":[18446744073709551615,`},
		{`"shape":[`, `"shape":[4294967296,4294967296,`},
	} {
		h := bytes.Replace(hdr, []byte(edit.from), []byte(edit.to), 1)
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
		f.Add(append(append(b, h...), good[8+n:]...))
	}
	huge := append(binary.LittleEndian.AppendUint64(nil, 1<<62), good[8:]...)
	f.Add(huge)
	f.Add(good[:len(good)/2])
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.safetensors")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Skip(err)
		}
		t0 := time.Now()
		c, tensors, err := difftest.ReadCapture(path)
		if d := time.Since(t0); d > 10*time.Second {
			t.Fatalf("ReadCapture took %v", d)
		}
		if err != nil {
			return
		}
		if !strings.HasPrefix(c.ID, c.Kernel+"/") {
			t.Fatalf("case id %q accepted for kernel %s", c.ID, c.Kernel)
		}
		total := int64(0)
		for _, in := range c.Inputs {
			total += int64(len(in.Data))
		}
		for _, x := range tensors {
			total += int64(len(x.Data))
		}
		if total > int64(len(data)) {
			t.Fatalf("%d bytes of tensors from a file of %d", total, len(data))
		}
	})
}
