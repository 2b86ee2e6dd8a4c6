// Fuzz targets for every parser of input the harness does not write
// itself: suite TOML, a capture file's header, a JSON Lines report
// record, a serve protocol frame, and the escaping of text for the
// terminal and XML. Each must return an error or a value that keeps its
// invariants, never panic, and never allocate from an unchecked size.
//
//	go test -run '^$' -fuzz FuzzParseSuite -fuzztime 20s -fuzzminimizetime 1s ./difftest/report
//
// (The engine minimizes each new interesting input for up to 60 s by
// default, during which its exec count stands still.)

package report

import (
	"bytes"
	"testing"
)

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
