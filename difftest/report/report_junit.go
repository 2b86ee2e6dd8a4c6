// JUnit XML reports (docs/interfaces.md), in the schema CI servers read
// (Jenkins' and Ant's junit.xsd): one <testsuite> per seed, one <testcase>
// per case with classname = kernel and name = case id, a <failure> whose
// type is the failure class, and <properties> for the run.

package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut *junitText    `xml:"system-out,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

type junitText struct {
	Text string `xml:",cdata"`
}

// JUnitProperties lists the <properties> of one seed's <testsuite>: seed,
// impl, suite, generator_version, device, driver, cuda, fatbin_sha256 and
// git_commit (present and empty when unknown), then any other header
// property in name order.
func JUnitProperties(h difftest.Header, seed uint64) [][2]string {
	props := [][2]string{
		{difftest.PropSeed, fmt.Sprint(seed)},
		{difftest.PropImpl, h.Impl},
		{difftest.PropSuite, h.Suite},
		{difftest.PropGeneratorVersion, fmt.Sprint(h.GeneratorVersion)},
		{difftest.PropDevice, h.Properties[difftest.PropDevice]},
		{difftest.PropDriver, h.Properties[difftest.PropDriver]},
		{difftest.PropCUDA, h.Properties[difftest.PropCUDA]},
		{difftest.PropFatbin, h.Properties[difftest.PropFatbin]},
		{difftest.PropGitCommit, h.GitCommit},
	}
	var extra []string
	for k := range h.Properties {
		switch k {
		case difftest.PropDevice, difftest.PropDriver, difftest.PropCUDA, difftest.PropFatbin:
		default:
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		props = append(props, [2]string{k, h.Properties[k]})
	}
	if h.Shard != "" {
		props = append(props, [2]string{"shard", h.Shard})
	}
	return props
}

// WriteJUnit writes rep as JUnit XML. Times are in seconds with
// millisecond resolution (the case's wall time).
func WriteJUnit(w io.Writer, rep *Report) error {
	bySeed := map[uint64][]*difftest.Record{}
	var seeds []uint64
	for _, r := range rep.Records {
		if _, ok := bySeed[r.Seed]; !ok {
			seeds = append(seeds, r.Seed)
		}
		bySeed[r.Seed] = append(bySeed[r.Seed], r)
	}
	sort.Slice(seeds, func(i, j int) bool { return seeds[i] < seeds[j] })
	if len(seeds) == 0 {
		seeds = []uint64{rep.Header.Seed}
	}
	doc := junitSuites{Name: "difftest " + rep.Header.Suite}
	var total time.Duration
	for _, seed := range seeds {
		s := junitSuite{Name: fmt.Sprintf("%s seed=%d", rep.Header.Suite, seed)}
		for _, p := range JUnitProperties(rep.Header, seed) {
			s.Properties = append(s.Properties, junitProperty{Name: p[0], Value: p[1]})
		}
		var st time.Duration
		for _, r := range bySeed[seed] {
			jc := junitCase{Classname: r.Kernel, Name: r.Case, Time: seconds(r.WallTime)}
			if r.Failed() {
				jc.Failure = &junitFailure{Message: difftest.SafeLine(string(r.Class) + ": " + r.Message), Type: string(r.Class), Text: difftest.XMLSafe(failureDetails(r))}
				s.Failures++
			}
			if r.Verdict == difftest.VerdictSkip {
				jc.Skipped = &junitSkipped{Message: difftest.SafeLine(string(r.Class) + ": " + r.Message)}
				s.Skipped++
			}
			if len(r.Warnings) > 0 {
				ws := make([]string, len(r.Warnings))
				for i, wn := range r.Warnings {
					ws[i] = difftest.SafeLine(wn)
				}
				jc.SystemOut = &junitText{difftest.XMLSafe("warnings:\n  " + strings.Join(ws, "\n  ") + "\n")}
			}
			s.Tests++
			st += r.WallTime
			s.Cases = append(s.Cases, jc)
		}
		s.Time = seconds(st)
		total += st
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Suites = append(doc.Suites, s)
	}
	doc.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// failureDetails is the body of a <failure>: message, diagnosis, key metric, all
// metrics (JSON, keys sorted), worst elements, replay command(s).
func failureDetails(r *difftest.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", difftest.SafeText(string(r.Class)), difftest.SafeLine(r.Message))
	for _, l := range triage.DiagnosisLines(r) {
		b.WriteString(l + "\n")
	}
	fmt.Fprintf(&b, "seed %d, input sha256 %s, generator %d\n", r.Seed, difftest.SafeText(r.InputSHA256), r.GeneratorVersion)
	if len(r.Params) > 0 {
		fmt.Fprintf(&b, "params: %s\n", difftest.SafeText(string(r.Params)))
	}
	if len(r.Metrics) > 0 {
		m, _ := json.Marshal(r.Metrics) // map keys come out sorted
		fmt.Fprintf(&b, "metrics: %s\n", difftest.SafeText(string(m)))
	}
	for _, e := range r.Worst {
		fmt.Fprintf(&b, "worst: %s%s got %s want %s", difftest.SafeText(e.Tensor), difftest.SafeText(e.Index), difftest.SafeText(e.Got), difftest.SafeText(e.Want))
		if e.Ratio != nil {
			fmt.Fprintf(&b, " ratio %.3g", *e.Ratio)
		}
		b.WriteString("\n")
	}
	if r.Replay != "" {
		fmt.Fprintf(&b, "replay: %s\n", difftest.SafeText(r.Replay))
	}
	if r.Capture != "" {
		fmt.Fprintf(&b, "replay: %s\n", difftest.SafeText(ReplayCaptureCommand(r)))
	}
	return b.String()
}

// ReplayCaptureCommand is the command that replays a record's saved
// capture with the same implementation: r.ReplayCapture when the run set
// it (Config.ReplayCapture, with the program name and every
// verdict-changing flag), else "difftest replay --impl IMPL FILE".
func ReplayCaptureCommand(r *difftest.Record) string {
	if r.ReplayCapture != "" {
		return r.ReplayCapture
	}
	return difftest.ReplayCaptureLine(difftest.ReplayOptions{Impl: r.Impl, Timeout: difftest.DefaultTimeout}, r.Capture)
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
