// End-to-end tests of the serve protocol: testdata/serveimpl, a Go server
// running the kernels' references in the shared memory, is driven through
// NewServeImpl and the suite loop, correct and in every misbehaviour,
// each of which must fail its case with its class while the next case
// passes on the same or a restarted program.

package proc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/proc"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/fixtures"
)

// serveBuild builds testdata/serveimpl once per test binary (testBuild),
// into a folder whose name holds a space.
func serveBuild(t *testing.T) string {
	t.Helper()
	return testBuild(t, "./testdata/serveimpl", "serve impl", "")
}

// serveItems is the quick suite's cases whose ids match re.
func serveItems(t *testing.T, re string) []difftest.Item {
	t.Helper()
	s, err := suite.LoadSuiteFS(fixtures.Suites(), "quick")
	if err != nil {
		t.Fatal(err)
	}
	items := s.Items(difftest.Selection{Seed: 1, Repeat: 1, Run: regexp.MustCompile(re)})
	if len(items) < 2 {
		t.Fatalf("quick suite: %d cases match %q, want ≥ 2", len(items), re)
	}
	return items
}

// serveRun runs items through a serve implementation and returns the
// records by case id, with the run's error.
func serveRun(t *testing.T, impl difftest.Impl, items []difftest.Item, timeout time.Duration) (map[string]*difftest.Record, difftest.Summary, error) {
	t.Helper()
	recs := map[string]*difftest.Record{}
	sum, err := difftest.Run(context.Background(), difftest.Config{
		Suite: "quick", Items: items, Impl: impl, ImplName: impl.Name(), Timeout: timeout,
		OnRecord: func(r *difftest.Record) error { recs[r.Case] = r; return nil },
	})
	return recs, sum, err
}

// serveStart starts the serve program bin with args (each already quoted
// for the shell where it needs to be) and closes it when tb ends.
func serveStart(tb testing.TB, bin string, timeout time.Duration, args ...string) difftest.Impl {
	tb.Helper()
	impl, err := proc.NewServeImpl(strings.Join(append([]string{difftest.ShellQuote(bin)}, args...), " "), timeout)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { impl.Close() })
	return impl
}

func TestServeCorrect(t *testing.T) {
	bin := serveBuild(t)
	impl := serveStart(t, bin, time.Minute)
	items := serveItems(t, ".")
	recs, sum, err := serveRun(t, impl, items, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Passed != len(items) || sum.Failed != 0 {
		for _, r := range recs {
			if r.Failed() {
				t.Errorf("%s: %s: %s", r.Case, r.Class, r.Message)
			}
		}
		t.Fatalf("passed %d, failed %d of %d", sum.Passed, sum.Failed, len(items))
	}
	for id, r := range recs {
		want := time.Microsecond
		if r.Kernel == "pipeline" {
			want *= 3 // a chained case sums its three stages' kernel times
		}
		if r.KernelTime != want {
			t.Errorf("%s: kernel time %v, want the replies' %v", id, r.KernelTime, want)
		}
	}
	props := impl.(difftest.PropertyProvider).Properties()
	if props[difftest.PropDevice] != "serveimpl test device" || props[difftest.PropImplVersion] != "serveimpl 1" {
		t.Errorf("properties %v", props)
	}
	if err := impl.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// Each misbehaviour fails exactly the case it happens in, with its class
// and a message that says what happened; every other case passes.
func TestServeMisbehaviour(t *testing.T) {
	bin := serveBuild(t)
	const bad = "topk_transform/lengths-k512"
	items := serveItems(t, `^topk_transform/(lengths-k512|straddle-k512|masked-k512)$|^norm_rope_store/gaussian/v4/N=96/P=64$`)
	for _, tc := range []struct {
		mode    string
		class   difftest.Class
		msg     string
		timeout time.Duration
	}{
		{"die", difftest.Crash, "exit status 3; stderr: serveimpl: dying on purpose", 0},
		{"hang", difftest.Timeout, "no reply after 2s; process group killed", 2 * time.Second},
		{"garbage", difftest.BadOutput, "not a JSON object", 0},
		{"oversize", difftest.BadOutput, "message length 2147483648", 0},
		{"wrong-seq", difftest.Crash, "protocol error: reply for request 4 to request 3", 0},
		{"error", difftest.Crash, "serveimpl: failing on purpose | second line", 0},
		{"error-exit", difftest.Crash, "serveimpl: failing on purpose | second line", 0},
		{"guard", difftest.Guard, "page_indices", 0},
		{"write-input", difftest.InputModified, "input scores changed during the run: scores[0][0] was 0x", 0},
		{"nondet", difftest.Nondeterministic, "runs with poison A and B disagree", 0},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			timeout := tc.timeout
			if timeout == 0 {
				timeout = time.Minute
			}
			impl := serveStart(t, bin, timeout, "-mode "+tc.mode+" -match "+difftest.ShellQuote("^"+bad+"$"))
			recs, sum, err := serveRun(t, impl, items, timeout)
			if err != nil {
				t.Fatal(err)
			}
			r := recs[bad]
			if r == nil || r.Class != tc.class || !strings.Contains(r.Message, tc.msg) {
				t.Fatalf("%s: got %+v, want class %s with %q", bad, r, tc.class, tc.msg)
			}
			if sum.Failed != 1 || sum.Passed != len(items)-1 {
				for _, r := range recs {
					if r.Failed() && r.Case != bad {
						t.Errorf("%s also failed: %s: %s", r.Case, r.Class, r.Message)
					}
				}
				t.Fatalf("passed %d, failed %d of %d", sum.Passed, sum.Failed, len(items))
			}
		})
	}
}

// 50 MB on stderr costs no memory beyond the tail, and the case passes.
func TestServeStderrFlood(t *testing.T) {
	bin := serveBuild(t)
	impl := serveStart(t, bin, time.Minute, "-mode flood")
	items := serveItems(t, `^topk_transform/(lengths-k512|straddle-k512)$`)
	_, sum, err := serveRun(t, impl, items, time.Minute)
	if err != nil || sum.Failed != 0 {
		t.Fatalf("%v, %+v", err, sum)
	}
}

// A child left in the program's process group is killed with it at Close;
// one that left the group (setsid) is found by its tag, killed, and named.
func TestServeCloseKillsGroup(t *testing.T) {
	bin := serveBuild(t)
	for _, mode := range []string{"fork", "setsid"} {
		t.Run(mode, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "child.pid")
			impl, err := proc.NewServeImpl(difftest.ShellQuote(bin)+" -mode "+mode+" -pidfile "+difftest.ShellQuote(pidfile), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			items := serveItems(t, `^topk_transform/(lengths-k512|straddle-k512)$`)
			if _, sum, err := serveRun(t, impl, items, time.Minute); err != nil || sum.Failed != 0 {
				t.Fatalf("%v, %+v", err, sum)
			}
			b, err := os.ReadFile(pidfile)
			if err != nil {
				t.Fatal(err)
			}
			pid, _ := strconv.Atoi(string(b))
			err = impl.Close()
			switch {
			case mode == "fork" && err != nil:
				t.Errorf("Close: %v", err)
			case mode == "setsid" && (err == nil || !strings.Contains(err.Error(), "the serve program left 1 process(es) running outside its process group")):
				t.Errorf("Close: %v, want the escaped child named", err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for syscall.Kill(pid, 0) == nil {
				if time.Now().After(deadline) {
					t.Fatalf("child %d still running after Close", pid)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// A program that cannot start, dies before its hello or speaks another
// protocol leaves nothing to test: Unavailable, with the reason.
func TestServeUnavailable(t *testing.T) {
	bin := serveBuild(t)
	for _, tc := range []struct{ cmd, msg string }{
		{"/nonexistent/serve-program", "cannot start /nonexistent/serve-program"},
		{difftest.ShellQuote(bin) + " -mode protocol2", "protocol 2; this difftest speaks 1"},
		{difftest.ShellQuote(bin) + " -kernels nothing_known", `names kernels ["nothing_known"], none of this build's`},
		{"sh -c 'echo gone >&2; exit 4'", "ended before its hello: exit status 4; stderr: gone"},
	} {
		_, err := proc.NewServeImpl(tc.cmd, time.Minute)
		var re *difftest.RunError
		if !errors.As(err, &re) || re.Class != difftest.Unavailable || !strings.Contains(re.Msg, tc.msg) {
			t.Errorf("%s: got %v, want unavailable with %q", tc.cmd, err, tc.msg)
		}
	}
}

// A program that never says hello is given up on after the hello time-out.
func TestServeNoHello(t *testing.T) {
	bin := serveBuild(t)
	t0 := time.Now()
	_, err := proc.NewServeImplHello(difftest.ShellQuote(bin)+" -mode no-hello", time.Minute, 500*time.Millisecond)
	var re *difftest.RunError
	if !errors.As(err, &re) || re.Class != difftest.Unavailable || !strings.Contains(re.Msg, "no hello within 500ms") {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

// The framing: a length over the limit or zero is refused before any
// allocation; a message round-trips.
func TestServeFraming(t *testing.T) {
	var b bytes.Buffer
	if err := proc.WriteServeMessage(&b, map[string]int{"seq": 3}); err != nil {
		t.Fatal(err)
	}
	if got := b.Bytes(); binary.LittleEndian.Uint32(got) != uint32(len(`{"seq":3}`)) || string(got[4:]) != `{"seq":3}` {
		t.Fatalf("framed %q", got)
	}
	msg, err := proc.ReadServeMessage(&b)
	if err != nil || string(msg) != `{"seq":3}` {
		t.Fatalf("read %q, %v", msg, err)
	}
	for _, n := range []uint32{0, proc.ServeMaxMessage + 1, 1 << 31} {
		var hdr [4]byte
		binary.LittleEndian.PutUint32(hdr[:], n)
		if _, err := proc.ReadServeMessage(bytes.NewReader(hdr[:])); err == nil || !strings.Contains(err.Error(), "message length") {
			t.Errorf("length %d: %v", n, err)
		}
	}
	if _, err := proc.ReadServeMessage(bytes.NewReader([]byte{5, 0, 0, 0, '{'})); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut message: %v", err)
	}
	if err := proc.WriteServeMessage(&b, strings.Repeat("x", proc.ServeMaxMessage)); err == nil {
		t.Error("an oversize message was written")
	}
}

// BenchmarkServeRoundTrip is the harness's cost of one run of a small case
// through serve (layout, copies into the shared memory, request, reply,
// copies back), against a Go program that answers at once. Compare with
// BenchmarkExecRoundTrip-style costs of starting a process per run.
func BenchmarkServeRoundTrip(b *testing.B) {
	serveBench(b, 1<<12)
}

// BenchmarkServeTransfer1GiB moves a 1 GiB input through the shared memory
// per run (b.SetBytes: the MB/s column is the transfer rate).
func BenchmarkServeTransfer1GiB(b *testing.B) {
	serveBench(b, 1<<30)
}

func serveBench(b *testing.B, nbytes int) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "serveimpl")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/serveimpl").CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	impl := serveStart(b, bin, time.Minute, "-mode noop -kernels topk_transform")
	x := difftest.MustTensor("scores", difftest.U8, nbytes)
	for i := range x.Data {
		x.Data[i] = byte(i)
	}
	c := &difftest.Case{ID: "topk_transform/bench", Kernel: "topk_transform", Params: map[string]int{"n": nbytes},
		Inputs: []*difftest.Tensor{x}, Outputs: []difftest.OutputSpec{{Name: "page_indices", DType: difftest.I32, Shape: []int{512}}}}
	bufs := difftest.NewBuffers(c, difftest.PoisonA)
	b.SetBytes(int64(nbytes))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := impl.Run(context.Background(), nil, c, bufs); err != nil {
			b.Fatal(err)
		}
	}
}

// The cases of a kernel the program does not implement are not tested
// (skip, class unavailable) and the others run; a run where no case could
// be tested exits 125, one with passes and skips 0.
func TestServeUnimplementedKernel(t *testing.T) {
	bin := serveBuild(t)
	impl := serveStart(t, bin, time.Minute, "-kernels topk_transform")
	items := serveItems(t, `^topk_transform/lengths-k512$|^norm_rope_store/gaussian/v4/N=96/P=64$`)
	recs, sum, err := serveRun(t, impl, items, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r := recs["norm_rope_store/gaussian/v4/N=96/P=64"]
	if r == nil || r.Verdict != difftest.VerdictSkip || r.Class != difftest.Unavailable || !strings.Contains(r.Message, "implements topk_transform, not norm_rope_store") {
		t.Fatalf("store case: %+v", r)
	}
	if sum.Passed != 1 || sum.Failed != 0 || sum.Skipped != 1 || difftest.ExitCode(sum, nil) != difftest.ExitPass {
		t.Fatalf("summary %+v, exit %d", sum, difftest.ExitCode(sum, nil))
	}
	_, sum, err = serveRun(t, impl, serveItems(t, `^norm_rope_store/gaussian/v4/`), time.Minute)
	if err != nil || sum.Skipped < 2 || sum.Passed != 0 || difftest.ExitCode(sum, nil) != difftest.ExitUntestable {
		t.Fatalf("all skipped: %v %+v, exit %d", err, sum, difftest.ExitCode(sum, nil))
	}
}

// A program's note on a run it completed (an "ok" reply's message) reaches
// the case's warnings; a case it left unwritten fails as such, and a
// worst element holding the poison says so.
func TestServeOKReplyNote(t *testing.T) {
	bin := serveBuild(t)
	const bad = "topk_transform/lengths-k512"
	impl, err := proc.NewServeImpl(difftest.ShellQuote(bin)+" -mode unwritten -match "+difftest.ShellQuote("^"+bad+"$"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer impl.Close()
	recs, _, err := serveRun(t, impl, serveItems(t, `^topk_transform/(lengths-k512|straddle-k512)$`), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r := recs[bad]
	if r == nil || r.Class != difftest.Unwritten {
		t.Fatalf("%s: %+v", bad, r)
	}
	want := "the program says: output 'page_indices' still holds only the poison: fill it in place"
	if !slices.Contains(r.Warnings, want) {
		t.Errorf("warnings %q lack %q", r.Warnings, want)
	}
	poisoned := 0
	for _, e := range r.Worst {
		if e.Tensor == "page_indices" && strings.HasSuffix(e.Got, difftest.PoisonNote) {
			poisoned++
		}
	}
	if poisoned == 0 {
		t.Errorf("no worst element is labelled as poison: %+v", r.Worst)
	}
	if o := recs["topk_transform/straddle-k512"]; o == nil || o.Verdict != difftest.VerdictPass || len(o.Warnings) != 0 {
		t.Errorf("the other case: %+v", o)
	}
}

// offersNothing offers no kernel and fails the test if it is ever run.
type offersNothing struct{ t *testing.T }

func (offersNothing) Name() string { return "offers-nothing" }
func (offersNothing) Close() error { return nil }
func (o offersNothing) Run(context.Context, difftest.Kernel, *difftest.Case, []*difftest.Buffer) (difftest.RunInfo, error) {
	o.t.Error("Run called for a kernel the implementation does not offer")
	return difftest.RunInfo{}, nil
}
func (offersNothing) Offers(kernel string) (bool, string) {
	return false, "offers-nothing implements nothing, not " + kernel
}

// The serve implementation says which kernels it offers (its hello's),
// and the runner neither draws nor runs the cases of the others: a
// chained case none of whose stages is offered is not tested either.
func TestServeOffers(t *testing.T) {
	bin := serveBuild(t)
	impl, err := proc.NewServeImpl(difftest.ShellQuote(bin)+" -kernels topk_transform", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer impl.Close()
	o, ok := impl.(difftest.KernelOfferer)
	if !ok {
		t.Fatal("the serve implementation is no difftest.KernelOfferer")
	}
	if ok, why := o.Offers("topk_transform"); !ok || why != "" {
		t.Errorf("Offers(topk_transform) = %v, %q", ok, why)
	}
	if ok, why := o.Offers("norm_rope_store"); ok || why != "the serve program implements topk_transform, not norm_rope_store" {
		t.Errorf("Offers(norm_rope_store) = %v, %q", ok, why)
	}

	items := serveItems(t, `^pipeline/|^norm_rope_store/gaussian/v4/N=96/P=64$`)
	recs, sum, err := serveRun(t, offersNothing{t}, items, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != len(items) || sum.Passed+sum.Failed != 0 {
		t.Fatalf("summary %+v of %d items", sum, len(items))
	}
	for id, r := range recs {
		want := "offers-nothing implements nothing, not norm_rope_store"
		if r.Kernel == "pipeline" {
			want = "the implementation offers none of the chain's kernels (norm_rope_store, indexer_logits, topk_transform): not tested"
		}
		if r.Verdict != difftest.VerdictSkip || r.Class != difftest.Unavailable || r.Message != want || r.InputSHA256 != "" {
			t.Errorf("%s: %+v", id, r)
		}
	}
}
