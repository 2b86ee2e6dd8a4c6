package difftest

import (
	"bytes"
	"io"
)

// SafeLineWriter passes text on to a terminal line by line, each line
// through SafeText, so that a path, an environment variable or a child's
// message it carries cannot move the cursor or reorder the screen; the
// newlines between lines are kept. Flush writes a last line without a
// newline.
type SafeLineWriter struct {
	w   io.Writer
	buf []byte
}

// NewSafeLineWriter returns a SafeLineWriter writing to w.
func NewSafeLineWriter(w io.Writer) *SafeLineWriter { return &SafeLineWriter{w: w} }

// Write buffers p and writes every complete line, escaped. It reports
// len(p) written unless w fails.
func (s *SafeLineWriter) Write(p []byte) (int, error) {
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(s.buf[:i])
		s.buf = s.buf[i+1:]
		if _, err := io.WriteString(s.w, SafeText(line)+"\n"); err != nil {
			return len(p), err
		}
	}
}

// Flush writes what is left after the last newline, escaped.
func (s *SafeLineWriter) Flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	line := string(s.buf)
	s.buf = nil
	_, err := io.WriteString(s.w, SafeText(line))
	return err
}
