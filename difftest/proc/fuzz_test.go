// Fuzz targets for every parser of input the harness does not write
// itself: suite TOML, a capture file's header, a JSON Lines report
// record, a serve protocol frame, and the escaping of text for the
// terminal and XML. Each must return an error or a value that keeps its
// invariants, never panic, and never allocate from an unchecked size.
//
//	go test -run '^$' -fuzz FuzzParseSuite -fuzztime 20s -fuzzminimizetime 1s ./difftest/proc
//
// (The engine minimizes each new interesting input for up to 60 s by
// default, during which its exec count stands still.)

package proc

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"
)

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
