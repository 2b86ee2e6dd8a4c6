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

package difftest

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

func FuzzParseSuite(f *testing.F) {
	for _, s := range []string{
		"[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"a\"\n[case.params]\nn = 4\nslots = 8\n",
		"[[case]]\nkernel = \"fake_scatter\"\nfamily = \"random\"\nname = \"m-{n}\"\n[case.params]\nslots = 64\n[case.matrix]\nn = [1, 2, 3]\n",
		"[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"a\"\nmatrix = 5\n",
		"[case]\nkernel = 1\n",
		"[[case]]\nkernel = \"fake_scatter\"\nfamily = \"ramp\"\nname = \"a\"\n[case.params]\nn = 1099511627776\n",
		strings.Repeat("[", 200),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cases, err := ParseSuite("fuzz.toml", data)
		if err != nil {
			if _, ok := err.(*SuiteError); !ok {
				t.Fatalf("error of type %T, want *SuiteError: %v", err, err)
			}
			return
		}
		if len(cases) == 0 || len(cases) > MaxSuiteCases {
			t.Fatalf("%d cases accepted", len(cases))
		}
		seen := map[string]bool{}
		for _, c := range cases {
			id := c.Spec.ID()
			if seen[id] {
				t.Fatalf("case %q twice", id)
			}
			seen[id] = true
			if c.Spec.Name == "" || strings.IndexFunc(c.Spec.Name, unicode.IsSpace) >= 0 || strings.IndexFunc(c.Spec.Name, unicode.IsControl) >= 0 {
				t.Fatalf("case name %q accepted", c.Spec.Name)
			}
		}
	})
}

// fuzzCapture is a capture of the fake kernel, the seed of FuzzReadCapture.
func fuzzCapture(f *testing.F) []byte {
	k := fakeKernel{}
	c, err := k.NewCase(CaseSpec{Kernel: fakeName, Family: "ramp", Name: "fz", Params: map[string]any{"n": int64(4), "slots": int64(8)}}, 1, 7)
	if err != nil {
		f.Fatal(err)
	}
	c.ID, c.Kernel = fakeName+"/fz", fakeName
	path := filepath.Join(f.TempDir(), "seed.safetensors")
	if err := WriteCapture(path, c, nil); err != nil {
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
		c, tensors, err := ReadCapture(path)
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

func FuzzReadJSONL(f *testing.F) {
	f.Add([]byte(`{"type":"header","suite":"quick","seed":1,"repeat":1,"cases":2,"impl":"reference"}
{"type":"case","case":"topk_transform/a","kernel":"topk_transform","index":0,"seed":1,"verdict":"pass"}
{"type":"case","case":"topk_transform/b","kernel":"topk_transform","index":1,"seed":1,"verdict":"fail","class":"mismatch","message":"\u001b[2J"}
{"type":"summary","passed":1,"failed":1,"classes":{"mismatch":1}}
`))
	f.Add([]byte(`{"type":"case"}`))
	f.Add([]byte(`{"type":"header","cases":-1,"repeat":9223372036854775807,"selected":[3,1]}` + "\n" + `{"type":"case","index":-5}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := ReadJSONL("fuzz.jsonl", bytes.NewReader(data))
		if err != nil {
			return
		}
		if rep.Header.Type != "header" {
			t.Fatalf("report without a header line accepted: %+v", rep.Header)
		}
		// Two shards built from it go through merge's checks without
		// panicking, whatever their headers claim.
		_, _ = MergeNamed([]string{"a", "b"}, []*Report{rep, rep})
		_ = CheckCaseIDs("a", rep, "s", []string{"k/a", "k/b"})
	})
}

func FuzzReadServeMessage(f *testing.F) {
	var b bytes.Buffer
	_ = WriteServeMessage(&b, ServeReply{Type: "result", Seq: 1, Status: "ok"})
	f.Add(b.Bytes())
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f, '{'})
	f.Add([]byte{3, 0, 0, 0, '{', '}'})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for i := 0; ; i++ {
			before := r.Len()
			m, err := ReadServeMessage(r)
			if err != nil {
				if err != io.EOF && err != io.ErrUnexpectedEOF && !strings.Contains(err.Error(), "message length") {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(m) < 1 || len(m) > ServeMaxMessage || before-r.Len() != 4+len(m) {
				t.Fatalf("message of %d bytes from %d consumed", len(m), before-r.Len())
			}
			if binary.LittleEndian.Uint32(data[len(data)-before:]) != uint32(len(m)) {
				t.Fatal("length field and message disagree")
			}
			// Replies and hellos parse or fail, never panic.
			_, _ = parseReply(m, uint64(i))
			_, _ = parseHello(m)
		}
	})
}

func FuzzSafeText(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[2J\x1b]0;t\x07", "a\u202eb\u2066c", "\xff\xfe\xfd", "\uFFFE\uFFFF\x00\x9b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := SafeText(s)
		if !utf8.ValidString(out) {
			t.Fatalf("SafeText(%q) = %q: invalid UTF-8", s, out)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f || unsafeRune(r) {
				t.Fatalf("SafeText(%q) = %q keeps %U", s, out, r)
			}
		}
		x := XMLSafe(s)
		var b bytes.Buffer
		b.WriteString("<a>")
		if err := xml.EscapeText(&b, []byte(x)); err != nil {
			t.Fatal(err)
		}
		b.WriteString("</a>")
		d := xml.NewDecoder(&b)
		var got string
		if err := d.Decode(&got); err != nil {
			t.Fatalf("XMLSafe(%q) = %q does not parse: %v", s, x, err)
		}
	})
}
