package difftest

import (
	"unicode/utf8"
)

// XMLSafe returns s with every character XML 1.0 forbids (its Char
// production: C0 controls other than tab, newline and carriage return,
// the surrogates, U+FFFE, U+FFFF, invalid UTF-8) replaced by a visible
// escape (\xNN, \uNNNN), so that s can go inside an element or a CDATA
// section and the document still parses. Tab, newline and carriage
// return are kept; everything else, "]]>" included (the encoder splits
// it), is left to the XML encoder. s with nothing to replace is returned
// unchanged.
func XMLSafe(s string) string {
	ok := func(r rune) bool {
		return r == '\t' || r == '\n' || r == '\r' || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
	}
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || !ok(r) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	return escapeFrom(s, i, func(r rune) (string, bool) {
		if ok(r) {
			return "", false
		}
		return hexEscape(r), true
	})
}
