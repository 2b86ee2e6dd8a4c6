package report

import (
	"strings"
	"testing"
)

// TestReadJSONLSummaryProperties: what the implementation stated only once
// it had run (an exec program's version line, after the header line was
// written) comes with the summary line and reads back into the header.
func TestReadJSONLSummaryProperties(t *testing.T) {
	data := `{"type":"header","suite":"quick","impl":"exec:prog","properties":{"device":"old"}}
{"type":"summary","passed":0,"failed":0,"elapsed_ns":0,"properties":{"impl_version":"kerneldiff-py 0.3 (python 3.11.2, numpy 2.2.6)","device":"cpu"}}
`
	rep, err := ReadJSONL("r.jsonl", strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Header.Properties; p["impl_version"] != "kerneldiff-py 0.3 (python 3.11.2, numpy 2.2.6)" || p["device"] != "cpu" {
		t.Errorf("header properties %v, want the summary's impl_version and device", p)
	}
}
