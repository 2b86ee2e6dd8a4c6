// Escaping text the harness did not write before it reaches a terminal:
// an exec program's stderr, a capture's metadata, a case id or path read
// from a report file. Raw, an ESC sequence can clear the screen and print
// a summary of its own, a newline breaks the table, and a bidi override
// makes a line read other than it is.
package difftest

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// SafeText returns s with every character that could move the cursor,
// break a line or reorder what a terminal shows replaced by a visible
// escape, so that it prints as one inert piece of text:
//
//   - C0 controls U+0000–U+001F and DEL U+007F: \t, \n, \r as such, the
//     others as \xNN (ESC is \x1b);
//   - C1 controls U+0080–U+009F (U+009B is an 8-bit CSI): \u0080 … \u009f;
//   - bidirectional formatting (U+061C, U+200E, U+200F, U+202A–U+202E,
//     U+2066–U+2069), the line and paragraph separators U+2028, U+2029,
//     and the noncharacters U+FFFE, U+FFFF (which XML 1.0 forbids):
//     \uNNNN;
//   - each byte of invalid UTF-8: \xNN.
//
// Everything else, backslashes included, is kept as it is: the result is
// for reading, not for parsing back, so a literal "\x1b" in s and an
// escaped ESC look alike. s without such characters is returned
// unchanged (no allocation).
func SafeText(s string) string {
	i := unsafeAt(s)
	if i < 0 {
		return s
	}
	return escapeFrom(s, i, func(r rune) (string, bool) {
		switch {
		case r == '\t':
			return `\t`, true
		case r == '\n':
			return `\n`, true
		case r == '\r':
			return `\r`, true
		case r < 0x20 || r == 0x7f || unsafeRune(r):
			return hexEscape(r), true
		}
		return "", false
	})
}

// escapeFrom returns s with each rune for which escape gives a
// replacement replaced by it and each byte of invalid UTF-8 by \xNN;
// s[:i] is known to need none. It serves SafeText and XMLSafe.
func escapeFrom(s string, i int, escape func(r rune) (string, bool)) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
		} else if e, ok := escape(r); ok {
			b.WriteString(e)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// hexEscape is the visible escape of r: \xNN below U+0080, \uNNNN above.
func hexEscape(r rune) string {
	if r < 0x80 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// SafeLine is SafeText for a one-line message: runs of white space (line
// breaks and tabs included) become one space and the ends are trimmed
// first, as a multi-line stderr is folded into a table's failure line;
// the other controls are escaped.
func SafeLine(s string) string { return SafeText(strings.Join(strings.Fields(s), " ")) }

// unsafeAt is the byte offset of the first character SafeText escapes,
// or −1.
func unsafeAt(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafeRune(r) {
			return i
		}
		i += n
	}
	return -1
}

// unsafeRune reports the non-ASCII runes SafeText escapes: C1 controls,
// bidi formatting characters and the Unicode line/paragraph separators.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	case r == 0xfffe, r == 0xffff:
		// Noncharacters that XML 1.0 forbids (a JUnit file holding one
		// does not parse).
		return true
	}
	return false
}

// ColumnWidths returns, per column of a text table, the width of its
// widest cell in runes (cells already made safe with SafeText).
func ColumnWidths(rows [][]string) []int {
	var widths []int
	for _, row := range rows {
		for j, c := range row {
			if j == len(widths) {
				widths = append(widths, 0)
			}
			widths[j] = max(widths[j], utf8.RuneCountInString(c))
		}
	}
	return widths
}

// PadRow lays out one row of a text table: each cell but the last
// left-aligned to its column's width (ColumnWidths) and followed by two
// spaces, the last as it is.
func PadRow(row []string, widths []int) string {
	var line strings.Builder
	for j, c := range row {
		line.WriteString(c)
		if j < len(row)-1 {
			line.WriteString(strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c)+2))
		}
	}
	return line.String()
}
