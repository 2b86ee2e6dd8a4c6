// Benchmarks of the serve and exec protocols against the Python package
// (python/): the harness's cost per run with a do-nothing implementation,
// and the NumPy examples on the default suite, serve beside exec. They need
// a Python with numpy and safetensors (KD_PYTHON, as make gotest sets it;
// scripts/setup-pytools makes one) and take the package from python/src.
//
//	KD_PYTHON=.venv/bin/python go test ./difftest -run '^$' -bench Python -benchtime 3x

package proc_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/fixtures"
)

// pythonImpl opens "serve:PY -m kerneldiff serve FILES" or the exec form.
func pythonImpl(b *testing.B, mode string, files ...string) difftest.Impl {
	b.Helper()
	py := os.Getenv("KD_PYTHON")
	if py == "" {
		b.Skip("KD_PYTHON is not set (scripts/setup-pytools, then KD_PYTHON=.venv/bin/python)")
	}
	src, err := filepath.Abs("../python/src")
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("PYTHONPATH", src)
	cmd := difftest.ShellQuote(py) + " -m kerneldiff " + mode
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			b.Fatal(err)
		}
		cmd += " " + difftest.ShellQuote(abs)
	}
	impl, err := difftest.NewImpl(mode+":"+cmd, difftest.ImplOptions{Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	return impl
}

// benchSuite runs suite through impl b.N times and reports ms per run of a
// case (each case runs twice, poison A and B, when its first run passes;
// the do-nothing implementation fails every case on its first run, so one
// run per case there).
func benchSuite(b *testing.B, impl difftest.Impl, suiteName string, runsPerCase int) {
	s, err := suite.LoadSuiteFS(fixtures.Suites(), suiteName)
	if err != nil {
		b.Fatal(err)
	}
	defer impl.Close()
	var cases int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		items, err := s.Select(difftest.Selection{Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		sum, err := difftest.Run(context.Background(), difftest.Config{Suite: suiteName, Source: items, Impl: impl, ImplName: impl.Name(), Timeout: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		cases = sum.Passed + sum.Failed
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*cases*runsPerCase), "ms/run")
	b.ReportMetric(float64(cases), "cases")
}

// BenchmarkPythonNoopServe: the quick suite against a do-nothing Python
// implementation over serve (goal: at most 2 ms per run of a case on a
// 2-core machine, generation, checks and reference included).
func BenchmarkPythonNoopServe(b *testing.B) {
	benchSuite(b, pythonImpl(b, "serve", "testdata/python/noop_impl.py"), "quick", 1)
}

// BenchmarkPythonNoopExec: the same over exec (two interpreter start-ups a
// case when a case passes; one here).
func BenchmarkPythonNoopExec(b *testing.B) {
	benchSuite(b, pythonImpl(b, "exec", "testdata/python/noop_impl.py"), "quick", 1)
}

// BenchmarkPythonNumPyDefaultServe: the default suite served by the NumPy
// examples (both contracts in one program).
func BenchmarkPythonNumPyDefaultServe(b *testing.B) {
	benchSuite(b, pythonImpl(b, "serve", "../examples/numpy_topk.py", "../examples/numpy_normrope.py"), "default", 2)
}

// BenchmarkPythonNumPyDefaultExec: the same cases the exec way.
func BenchmarkPythonNumPyDefaultExec(b *testing.B) {
	benchSuite(b, pythonImpl(b, "exec", "../examples/numpy_topk.py", "../examples/numpy_normrope.py"), "default", 2)
}

// BenchmarkPythonNoopRoundTrip: one run of a small case (topk lengths-k512:
// 10 rows of up to 3000 scores) through serve to the do-nothing Python
// implementation and back, without the suite's generation and checks: the
// protocol's own cost per run.
func BenchmarkPythonNoopRoundTrip(b *testing.B) {
	impl := pythonImpl(b, "serve", "testdata/python/noop_impl.py")
	defer impl.Close()
	s, err := suite.LoadSuiteFS(fixtures.Suites(), "quick")
	if err != nil {
		b.Fatal(err)
	}
	var it difftest.Item
	for _, sc := range s.Cases {
		if sc.Spec.ID() == "topk_transform/lengths-k512" {
			it = difftest.Item{Seed: 1, SuiteCase: sc}
		}
	}
	k, c, err := difftest.GenerateCase(it)
	if err != nil {
		b.Fatal(err)
	}
	bufs := difftest.NewBuffers(c, difftest.PoisonA)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := impl.Run(context.Background(), k, c, bufs); err != nil {
			b.Fatal(err)
		}
	}
}
