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
	// SystemOut holds the suite's failures grouped by cause, one block
	// each (Cause.Block).
	SystemOut *junitText `xml:"system-out,omitempty"`
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
// property in name order, the shard, and params (the --param overrides,
// space-separated) when the run had any.
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
	if len(h.Params) > 0 {
		props = append(props, [2]string{"params", strings.Join(h.Params, " ")})
	}
	return props
}

// WriteJUnit writes rep as JUnit XML. Times are in seconds with
// millisecond resolution (the case's wall time). Each seed's failures are
// grouped by cause (Causes): every <failure> names its cause, the first
// case of a cause carries its worst elements and the ids of the others,
// which refer to it; the <testsuite>'s <system-out> holds one block per
// cause, as the table prints them.
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
		causes := Causes(bySeed[seed])
		causeOf := map[*difftest.Record]int{}
		var blocks []string
		for i, c := range causes {
			for _, r := range c.Records {
				causeOf[r] = i
			}
			blocks = append(blocks, strings.Join(c.Block(i+1, 0), "\n"))
		}
		if len(blocks) > 0 {
			s.SystemOut = &junitText{difftest.XMLSafe(fmt.Sprintf("failures by cause (%d):\n\n", len(causes)) + strings.Join(blocks, "\n\n") + "\n")}
		}
		for _, r := range bySeed[seed] {
			jc := junitCase{Classname: r.Kernel, Name: r.Case, Time: seconds(r.WallTime)}
			if r.Failed() {
				i := causeOf[r]
				jc.Failure = &junitFailure{Message: difftest.SafeLine(string(r.Class) + ": " + r.Message), Type: string(r.Class), Text: difftest.XMLSafe(failureDetails(r, i+1, len(causes), causes[i]))}
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

// failureDetails is the body of a <failure> of cause n of total:
// message, the cause's title, diagnosis, seed and input digest, params,
// all metrics (JSON, keys sorted); for the cause's first case its worst
// elements that break the rule (difftest.Breaking) and the ids of the
// cause's other cases, for another case the first one's id; then the
// replay command(s).
func failureDetails(r *difftest.Record, n, total int, c *Cause) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", difftest.SafeText(string(r.Class)), difftest.SafeLine(r.Message))
	fmt.Fprintf(&b, "cause [%d] of %d: %s\n", n, total, c.Title())
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
	if first := c.Records[0]; first == r {
		for _, e := range difftest.Breaking(r.Worst) {
			fmt.Fprintf(&b, "worst: %s got %s want %s", elementName(e), difftest.SafeText(e.Got), difftest.SafeText(e.Want))
			if e.Ratio != nil {
				fmt.Fprintf(&b, " ratio %.3g", *e.Ratio)
			}
			b.WriteString("\n")
		}
		if more := c.More(); more > 0 {
			fmt.Fprintf(&b, "%s: %s\n", MoreLine(more), CaseList(c.Records[1:], 0))
		}
	} else {
		fmt.Fprintf(&b, "like %s (seed %d), whose failure lists the worst elements of this cause\n", difftest.SafeText(first.Case), first.Seed)
	}
	for _, l := range replayLines(r) {
		fmt.Fprintf(&b, "replay: %s\n", l)
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
