package difftest

import (
	"testing"
)

// TestSafeText: every class of character that can steer a terminal is
// escaped, visibly and reversibly enough to read; ordinary text, UTF-8
// included, is left alone.
func TestSafeText(t *testing.T) {
	tests := []struct {
		name, reason, in, want string
	}{
		{"plain", "ASCII text passes through", "topk_transform/gaussian-b1 passed", "topk_transform/gaussian-b1 passed"},
		{"utf8", "non-ASCII letters and symbols are not controls", "µs ≥ 0 ¹ — naïve", "µs ≥ 0 ¹ — naïve"},
		{"backslash", "backslashes are kept as they are", `C:\dir\x1b`, `C:\dir\x1b`},
		{"clear-screen", "the issue's ESC sequence that cleared the screen", "\x1b[2J\x1b[Hall 19 passed", `\x1b[2J\x1b[Hall 19 passed`},
		{"newline", "a newline in a case name broke the table", "topk/a\nFAIL x", `topk/a\nFAIL x`},
		{"tab-cr", "tab and carriage return", "a\tb\rc", `a\tb\rc`},
		{"nul-bel-bs", "other C0 controls as \\xNN", "a\x00b\x07c\x08", `a\x00b\x07c\x08`},
		{"del", "DEL", "a\x7fb", `a\x7fb`},
		{"c1", "C1 controls, U+009B an 8-bit CSI", "a\u009b2Jb\u0085", `a\u009b2Jb\u0085`},
		{"bidi", "right-to-left override and isolates reorder a line", "a\u202eb\u2066c\u2069\u200f\u061c", `a\u202eb\u2066c\u2069\u200f\u061c`},
		{"separators", "Unicode line and paragraph separators", "a\u2028b\u2029", `a\u2028b\u2029`},
		{"invalid-utf8", "a lone byte of invalid UTF-8, e.g. 0x9b read as CSI by an 8-bit terminal", "a\x9b2J\xffb", `a\x9b2J\xffb`},
		{"empty", "empty stays empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reason == "" {
				t.Fatal("row without a reason")
			}
			if got := SafeText(tt.in); got != tt.want {
				t.Errorf("%s: SafeText(%q) = %q, want %q", tt.reason, tt.in, got, tt.want)
			}
		})
	}
}

func TestSafeLine(t *testing.T) {
	in := "  crashed:\n\tpanic: \x1b[31mboom\x1b[0m\r\n  "
	if got, want := SafeLine(in), `crashed: panic: \x1b[31mboom\x1b[0m`; got != want {
		t.Errorf("SafeLine(%q) = %q, want %q", in, got, want)
	}
}

func TestSafeTextNoAlloc(t *testing.T) {
	s := "topk_transform/needle-l131072 (seed 3): mismatch: ≥ K"
	if n := testing.AllocsPerRun(100, func() { _ = SafeText(s) }); n != 0 {
		t.Errorf("SafeText of clean text allocates %v times", n)
	}
}

// A hand-laid table: widths count runes (µ is one), each cell but the
// last is padded to its column plus two spaces.
func TestColumnWidthsPadRow(t *testing.T) {
	rows := [][]string{{"CASE", "TIME", "X"}, {"a", "12µs", "long last"}}
	w := ColumnWidths(rows)
	if len(w) != 3 || w[0] != 4 || w[1] != 4 || w[2] != 9 {
		t.Fatalf("ColumnWidths = %v, want [4 4 9]", w)
	}
	for i, want := range []string{"CASE  TIME  X", "a     12µs  long last"} {
		if got := PadRow(rows[i], w); got != want {
			t.Errorf("PadRow(%q) = %q, want %q", rows[i], got, want)
		}
	}
}
