package difftest_test

import (
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
)

func TestXMLSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain \t\n\r text ü 😀": "plain \t\n\r text ü 😀",
		"\uFFFE\uFFFF":          `\ufffe\uffff`,
		"\x00\x08\x0b\x0c\x1f":  `\x00\x08\x0b\x0c\x1f`,
		"\xed\xa0\x80":          `\xed\xa0\x80`, // a surrogate, encoded: invalid UTF-8
		"\uFFFD\U0010FFFF":      "\uFFFD\U0010FFFF",
	} {
		if got := difftest.XMLSafe(in); got != want {
			t.Errorf("XMLSafe(%q) = %q, want %q", in, got, want)
		}
	}
	if got := difftest.SafeText("x\uFFFEy"); got != `x\ufffey` {
		t.Errorf("SafeText = %q", got)
	}
}
