// JSON Lines reports (docs/interfaces.md): a header line, one line per case
// written as the case ends, a summary line. Each line goes out in one
// Write with no buffering in between, so a crash loses nothing already
// decided.

package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/filekind"
)

// JSONLWriter streams a report as JSON Lines.
type JSONLWriter struct{ w io.Writer }

// NewJSONLWriter returns a writer on w (typically an *os.File).
func NewJSONLWriter(w io.Writer) *JSONLWriter { return &JSONLWriter{w: w} }

func (j *JSONLWriter) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = j.w.Write(append(b, '\n'))
	return err
}

// Header writes the header line (Type is set to "header").
func (j *JSONLWriter) Header(h difftest.Header) error { h.Type = "header"; return j.line(h) }

// Record writes one case line (Type is set to "case").
func (j *JSONLWriter) Record(r *difftest.Record) error { r.Type = "case"; return j.line(r) }

// Summary writes the summary line (Type is set to "summary").
func (j *JSONLWriter) Summary(s difftest.Summary) error { s.Type = "summary"; return j.line(s) }

// Report is a whole report read back from JSON Lines.
type Report struct {
	Header  difftest.Header
	Records []*difftest.Record
	Summary *difftest.Summary // nil when the run did not finish (the file ends early)
}

// MaxReportLine is the longest line ReadJSONL accepts, in bytes: far
// above any header or case line difftest writes (a record's message keeps
// at most ExecStderrTail bytes of a program's stderr, its worst list a
// few dozen elements), and what one line may cost before it is refused.
const MaxReportLine = 8 << 20

// ReadJSONL reads a report written by JSONLWriter. A file cut short by a
// crash reads fine (Summary is nil); a malformed line, a missing header,
// an unknown line type or a line longer than MaxReportLine is an error
// naming the line.
func ReadJSONL(name string, r io.Reader) (*Report, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxReportLine)
	rep := &Report{}
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var probe struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &probe); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, n, err)
		}
		if rep.Header.Type == "" && probe.Type != "header" {
			return nil, fmt.Errorf("%s:%d: first line is %q, want a header", name, n, probe.Type)
		}
		var err error
		switch probe.Type {
		case "header":
			if rep.Header.Type != "" {
				return nil, fmt.Errorf("%s:%d: a second header", name, n)
			}
			err = json.Unmarshal(line, &rep.Header)
		case "case":
			if rep.Summary != nil {
				return nil, fmt.Errorf("%s:%d: a case line after the summary line", name, n)
			}
			rec := new(difftest.Record)
			err = json.Unmarshal(line, rec)
			rep.Records = append(rep.Records, rec)
		case "summary":
			if rep.Summary != nil {
				return nil, fmt.Errorf("%s:%d: a second summary line", name, n)
			}
			rep.Summary = new(difftest.Summary)
			err = json.Unmarshal(line, rep.Summary)
		default:
			return nil, fmt.Errorf("%s:%d: unknown line type %q", name, n, probe.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: line longer than %d MiB, the limit of a report line: not a JSON Lines report written by difftest", name, n+1, MaxReportLine>>20)
		}
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if n == 0 || rep.Header.Type != "header" {
		return nil, fmt.Errorf("%s: empty report", name)
	}
	return rep, nil
}

// ReadJSONLFile reads the report in the file at path (ReadJSONL). Only a
// regular file is read: a folder, a device such as /dev/zero, a named pipe
// or a socket is refused by its type before anything is read (a FIFO is
// never waited on).
func ReadJSONLFile(path string) (*Report, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, not a regular file: a report is the file difftest run --json writes", path, filekind.Of(st.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err = f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s changed into something other than a regular file as it was opened", path)
	}
	if st.Size() > difftest.MaxReportFile {
		return nil, fmt.Errorf("%s: %d bytes, above the limit of %d MiB for a report file (MaxReportFile): not a report difftest wrote", path, st.Size(), difftest.MaxReportFile>>20)
	}
	return ReadJSONL(path, io.LimitReader(f, difftest.MaxReportFile))
}
