package report_test

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/report"
	"github.com/kerneldiff/kerneldiff/internal/texttest"
)

// Text from a child or a file with characters XML 1.0 forbids (U+FFFE,
// U+FFFF, C0 controls, invalid UTF-8) still makes a JUnit file that
// parses, with each such character shown as an escape.
func TestJUnitValidXMLForHostileText(t *testing.T) {
	bad := "a\uFFFEb\uFFFFc\x01d\x1b[2Je\x00f\xff\xfe]]>g\U0010FFFF"
	rep := &report.Report{Header: difftest.Header{Suite: "s" + bad, Properties: map[string]string{"device": bad}}}
	rep.Records = append(rep.Records, &difftest.Record{Case: "k/c" + bad, Kernel: "k" + bad, Verdict: difftest.VerdictFail, Class: difftest.Crash,
		Message: bad, Warnings: []string{bad}, Replay: bad, InputSHA256: bad})
	junit := texttest.Render(t, func(w io.Writer) error { return report.WriteJUnit(w, rep) })
	d := xml.NewDecoder(strings.NewReader(junit))
	text := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("JUnit does not parse: %v\n%s", err, junit)
		}
		if cd, ok := tok.(xml.CharData); ok {
			text += string(cd)
		}
	}
	texttest.Contains(t, "failure text", text, `a\ufffeb\uffffc\x01d\x1b[2Je\x00f\xff\xfe]]>g`)
}
