// Fuzz target of the escaping of text for the terminal and XML (SafeText,
// XMLSafe): every output is valid UTF-8 with no control character left.
//
//	go test -run '^$' -fuzz FuzzSafeText -fuzztime 20s ./difftest

package difftest

import (
	"bytes"
	"encoding/xml"
	"testing"
	"unicode/utf8"
)

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
