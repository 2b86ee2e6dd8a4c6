"""The pytest plugin (kerneldiff.pytest_plugin) through pytest's own
``pytester``: each test writes a test file, runs pytest on it in a
subprocess (the plugin loads through the package's pytest11 entry point)
and checks the outcomes against what difftest itself says of the same
cases.

Needs a difftest binary in KD_DIFFTEST (scripts/test-python builds one and
sets it); without it these tests are skipped, and under CI they fail.
"""

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import example

DIFFTEST = os.environ.get("KD_DIFFTEST", "")

# An op that writes zeros: every topk_transform case fails, and the
# pipeline's top-k stage with it.
WRONG_TOPK = '''
import kerneldiff

@kerneldiff.implements("topk_transform")
def topk(scores, seq_lens, page_table, page_indices, raw_indices=None, *, K, P, **params):
    page_indices[...] = 0
    if raw_indices is not None:
        raw_indices[...] = 0

def test_topk(kerneldiff_case):
    pass
'''

# The NumPy example, served from its own file (the marker's serve=).
GOOD_TOPK = f'''
import pytest

pytestmark = pytest.mark.kerneldiff(serve={example("numpy_topk.py")!r})

def test_topk(kerneldiff_case):
    # the body runs after the verdict, with the record at hand
    assert kerneldiff_case.record["verdict"] == "pass"
    assert kerneldiff_case.record["case"] == kerneldiff_case.id
'''


@pytest.fixture(scope="module")
def difftest():
    if not DIFFTEST:
        if os.environ.get("CI"):
            pytest.fail("KD_DIFFTEST is not set (scripts/test-python sets it)")
        pytest.skip("KD_DIFFTEST is not set: build cmd/difftest and point KD_DIFFTEST at it")
    return DIFFTEST


@pytest.fixture(scope="module")
def quick_cases(difftest):
    r = subprocess.run([difftest, "list", "cases", "--suite", "quick", "--json"], capture_output=True, text=True,
                       check=True, timeout=60)
    return [json.loads(line) for line in r.stdout.splitlines()]


def difftest_records(difftest, tmp_path, impl, run_re):
    """What difftest itself says of the quick suite's cases matching run_re."""
    out = tmp_path / "direct.jsonl"
    subprocess.run([difftest, "run", "--suite", "quick", "--impl", impl, "--run", run_re, "--json", str(out)],
                   capture_output=True, text=True, timeout=600, cwd=tmp_path)
    return {o["case"]: o for o in map(json.loads, out.read_text().splitlines()) if o["type"] == "case"}


def run(pytester, difftest, *args):
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--kerneldiff-difftest={difftest}",
                                         "--kerneldiff-suite=quick", "-rs", *args, timeout=600)


def outcomes_by_id(result):
    """{case id: PASSED|FAILED|SKIPPED} from -rA's short summary and -v lines."""
    got = {}
    for line in result.outlines:
        m = re.match(r"^\S+::test_\w+\[(.+)\] (PASSED|FAILED|SKIPPED)", line)
        if m:
            got[m.group(1)] = m.group(2)
    return got


def test_entry_point():
    eps = importlib.metadata.entry_points(group="pytest11")
    assert {(e.name, e.value) for e in eps if e.name == "kerneldiff"} == {("kerneldiff", "kerneldiff.pytest_plugin")}


def test_one_item_per_case_ids_are_case_names(pytester, difftest, quick_cases):
    pytester.makepyfile(test_ops=WRONG_TOPK)
    r = run(pytester, difftest, "--collect-only", "-q")
    assert r.ret == 0, r.stdout.str()
    ids = [line for line in r.outlines if "::" in line]
    assert ids == [f"test_ops.py::test_topk[{c['case']}]" for c in quick_cases]
    assert len(ids) == 38


def test_failing_op_message_is_the_diagnosis(pytester, difftest, tmp_path, quick_cases):
    f = pytester.makepyfile(test_ops=WRONG_TOPK)
    junit = tmp_path / "junit.xml"
    r = run(pytester, difftest, "-v", f"--junitxml={junit}")
    assert r.ret == 1
    topk = {c["case"] for c in quick_cases if c["kernel"] == "topk_transform"}
    got = outcomes_by_id(r)
    assert {i for i, o in got.items() if o == "FAILED"} == topk | {"pipeline/fp8/S=1200/K=512/H=4"}
    assert {i for i, o in got.items() if o == "SKIPPED"} == {c["case"] for c in quick_cases
                                                             if c["kernel"] in ("indexer_logits", "norm_rope_store")}
    r.assert_outcomes(failed=21, skipped=17)

    # The message is difftest's own record of the case, replay line included.
    impl = f"serve:{sys.executable} -m kerneldiff serve {f}"
    direct = difftest_records(difftest, tmp_path, impl, "^topk_transform/lengths-k512$")["topk_transform/lengths-k512"]
    text = r.stdout.str()
    first = direct["worst"][0]
    assert (f"topk_transform/lengths-k512 (seed 1): mismatch: {direct['message']}\n"
            "  no diagnosis (behaves like no catalog mutant or semantic variant)\n"
            f"  first broken element: {first['tensor']}{first['index']}: got {first['got']}, want {first['want']}\n"
            ) in text
    assert first == {"tensor": "raw_indices", "index": "[0][0]", "got": "0", "want": "a position in [0, L = 0)"}
    assert f"  replay: {direct['replay']}" in text
    assert direct["replay"].endswith("--run '^topk_transform/lengths-k512$'")
    assert "unavailable: the serve program implements topk_transform, not norm_rope_store" in text

    # JUnit: the verdict details as properties of each testcase.
    cases = {tc.get("name"): tc for tc in ET.parse(junit).getroot().iter("testcase")}
    tc = cases["test_topk[topk_transform/lengths-k512]"]
    props = {p.get("name"): p.get("value") for p in tc.iter("property")}
    assert props["kerneldiff_verdict"] == "fail"
    assert props["kerneldiff_class"] == "mismatch"
    assert props["kerneldiff_key_metric"] == direct["key_metric"]
    assert props["kerneldiff_input_sha256"] == direct["input_sha256"]
    assert props["kerneldiff_replay"] == direct["replay"]
    assert props["kerneldiff_metric_out_of_range"] == str(direct["metrics"]["out_of_range"])
    assert tc.find("failure") is not None
    skipped = cases["test_topk[norm_rope_store/zero/v4/N=8/P=64]"]
    assert skipped.find("skipped") is not None
    assert {p.get("name"): p.get("value") for p in skipped.iter("property")}["kerneldiff_class"] == "unavailable"


def test_passing_op_and_the_body_sees_the_record(pytester, difftest, tmp_path):
    pytester.makepyfile(test_good=GOOD_TOPK)
    junit = tmp_path / "junit.xml"
    r = run(pytester, difftest, "-k", "topk_transform or pipeline", f"--junitxml={junit}")
    r.assert_outcomes(passed=21)
    props = {p.get("name"): p.get("value") for tc in ET.parse(junit).getroot().iter("testcase")
             if tc.get("name") == "test_topk[topk_transform/lengths-k512]" for p in tc.iter("property")}
    assert props["kerneldiff_verdict"] == "pass" and props["kerneldiff_metric_valid"] == "true"
    assert props["kerneldiff_seed"] == "1"


def test_k_lf_x_and_family_keywords(pytester, difftest):
    pytester.makepyfile(test_ops=WRONG_TOPK)
    r = pytester.runpytest_subprocess(f"--kerneldiff-difftest={difftest}", "--kerneldiff-suite=quick",
                                      "-k", "topk_transform/lengths-k512", timeout=600)
    r.assert_outcomes(failed=1)
    # --lf: the failures of the last run only (the cache provider is on here)
    r = pytester.runpytest_subprocess(f"--kerneldiff-difftest={difftest}", "--kerneldiff-suite=quick",
                                      "-k", "topk_transform/lengths", timeout=600)
    r.assert_outcomes(failed=2)
    r = pytester.runpytest_subprocess(f"--kerneldiff-difftest={difftest}", "--kerneldiff-suite=quick", "--lf", "-v",
                                      timeout=600)
    r.assert_outcomes(failed=2)
    assert set(outcomes_by_id(r)) == {"topk_transform/lengths-k512", "topk_transform/lengths-noraw-k512"}
    # -x: stops at the first failure (the rest of the run is stopped)
    r = run(pytester, difftest, "-x", "-k", "topk_transform")
    r.assert_outcomes(failed=1)
    # -k matches the input family too (these two ids do not name it)
    r = run(pytester, difftest, "-k", "nan-keys", "--collect-only", "-q")
    assert [line for line in r.outlines if "::" in line] == [
        "test_ops.py::test_topk[indexer_logits/nan/fp8/H=4]", "test_ops.py::test_topk[indexer_logits/nan/fp4/H=4]"]


def test_xdist_gives_the_same_verdicts(pytester, difftest):
    try:
        import xdist  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("pytest-xdist is not installed (scripts/setup-pytools pins it)")
    pytester.makepyfile(test_ops=WRONG_TOPK, test_good=GOOD_TOPK)
    serial = run(pytester, difftest, "-v", f"--junitxml={pytester.path / 'serial.xml'}")
    par = run(pytester, difftest, "-v", "-n", "2", f"--junitxml={pytester.path / 'par.xml'}")
    assert "2 workers" in par.stdout.str() or "created: 2/2 workers" in par.stdout.str(), par.stdout.str()[:2000]
    par.assert_outcomes(failed=21, passed=21, skipped=34)
    serial.assert_outcomes(failed=21, passed=21, skipped=34)

    def by_node(result):
        got = {}
        for line in result.outlines:
            m = re.search(r"(PASSED|FAILED|SKIPPED) (test_\w+\.py::test_\w+\[.+\])\s*$", line)  # xdist's -v lines
            if m:
                got[m.group(2)] = m.group(1)
            m = re.match(r"^(test_\w+\.py::test_\w+\[.+\]) (PASSED|FAILED|SKIPPED)", line)  # serial -v lines
            if m:
                got[m.group(1)] = m.group(2)
        return got

    assert len(by_node(serial)) == 76
    assert by_node(par) == by_node(serial)

    def run_cases(xml):
        return [int(p.get("value")) for p in ET.parse(pytester.path / xml).getroot().iter("property")
                if p.get("name") == "kerneldiff_run_cases"]

    # serially one run per file gives every verdict; a worker batches the
    # items it has been handed (runs of more than one case)
    assert run_cases("serial.xml") == [38] * 76
    par_cases = run_cases("par.xml")
    assert len(par_cases) == 76 and max(par_cases) > 1 and min(par_cases) >= 1, par_cases


def test_mutant_impl_diagnosis_and_seed(pytester, difftest):
    # -k takes no "=": the marker's select= picks the one case
    pytester.makepyfile(test_any="import pytest\n\n"
                                 "@pytest.mark.kerneldiff(select=r'^indexer_logits/fp8/P=64/H=8$')\n"
                                 "def test_logits(kerneldiff_case):\n    pass\n")
    r = run(pytester, difftest, "--kerneldiff-impl=mutant:logits-no-relu", "--kerneldiff-seed=3")
    r.assert_outcomes(failed=1)
    text = r.stdout.str()
    assert "indexer_logits/fp8/P=64/H=8 (seed 3): mismatch: logits [" in text
    assert "  behaves like logits-no-relu: adds each head's dot product without the ReLU\n" in text
    assert ("  replay: " + difftest + " run --suite quick --seed 3 --impl mutant:logits-no-relu "
            "--run '^indexer_logits/fp8/P=64/H=8$'") in text


def test_unsupported_is_a_skip_with_the_reason(pytester, difftest):
    pytester.makepyfile(test_ops='''
import kerneldiff

@kerneldiff.implements("topk_transform")
def topk(scores, seq_lens, page_table, page_indices, raw_indices=None, *, K, P, **params):
    raise kerneldiff.Unsupported(f"K = {K} (this op does K = 2048 only)")

def test_topk(kerneldiff_case):
    pass
''')
    r = run(pytester, difftest, "-k", "topk_transform/lengths-k512")
    r.assert_outcomes(skipped=1)
    assert "K = 512 (this op does K = 2048 only)" in r.stdout.str()
    assert re.search(r"SKIPPED \[1\] test_ops.py:\d+: ", r.stdout.str()), r.stdout.str()


def test_ini_keys_marker_and_command_line(pytester, difftest):
    pytester.makeini(f"[pytest]\nkerneldiff_difftest = {difftest}\nkerneldiff_suite = quick\nkerneldiff_seed = 5\n")
    pytester.makepyfile(test_ops=WRONG_TOPK.replace("def test_topk", "import pytest\n\n"
                                                   "@pytest.mark.kerneldiff(kernels=['topk_transform'], seed=7)\n"
                                                   "def test_topk"))
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-x", timeout=600)
    r.assert_outcomes(failed=1)
    assert "(seed 7): mismatch" in r.stdout.str()  # the marker over the ini key
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-x", "--kerneldiff-seed=9", timeout=600)
    assert "(seed 9): mismatch" in r.stdout.str()  # the command line over the marker
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q", timeout=600)
    assert len([line for line in r.outlines if "::" in line]) == 20  # kernels= keeps topk_transform's


def test_two_files_may_implement_one_contract(pytester, difftest):
    pytester.makepyfile(test_a=WRONG_TOPK, test_b=WRONG_TOPK.replace("page_indices[...] = 0", "page_indices[...] = 1"))
    r = run(pytester, difftest, "-k", "topk_transform/lengths-k512")
    r.assert_outcomes(failed=2)
    assert "test_b.py' --run '^topk_transform/lengths-k512$'" in r.stdout.str()
    assert "test_a.py' --run '^topk_transform/lengths-k512$'" in r.stdout.str()


@pytest.mark.parametrize("source, args, error", [
    ("def test_x(kerneldiff_case):\n    pass\n", [],
     "test_x.py registers no kernel: decorate the op with @kerneldiff.implements(NAME)"),
    ("import pytest\n@pytest.mark.kerneldiff(suit='quick')\ndef test_x(kerneldiff_case):\n    pass\n",
     ["--kerneldiff-impl=reference"], "@pytest.mark.kerneldiff: unknown keyword suit"),
    ("def test_x(kerneldiff_case):\n    pass\n", ["--kerneldiff-impl=reference", "--kerneldiff-suite=nosuch"],
     "kerneldiff: suite 'nosuch': difftest list cases exited 2"),
    ("def test_x(kerneldiff_case):\n    pass\n", ["--kerneldiff-impl=reference", "--kerneldiff-seed=-1"],
     "kerneldiff: seed '-1' is not a non-negative integer"),
    ("import pytest\n@pytest.mark.kerneldiff(kernels='topk')\ndef test_x(kerneldiff_case):\n    pass\n",
     ["--kerneldiff-impl=reference"], "suite 'quick' has no case of topk"),
    ("def test_x(kerneldiff_case):\n    pass\n", ["--kerneldiff-impl=reference", "--kerneldiff-args=--run x"],
     "--kerneldiff-args must not set -run"),
    ("def test_x(kerneldiff_case):\n    pass\n", ["--kerneldiff-impl=reference", "--kerneldiff-args=--failfast"],
     "--kerneldiff-args must not set -failfast"),
], ids=["registers-nothing", "unknown-marker-keyword", "unknown-suite", "negative-seed", "unknown-kernel",
        "args-set-run", "args-set-failfast"])
def test_bad_settings_are_collection_errors(pytester, difftest, source, args, error):
    pytester.makepyfile(test_x=source)
    r = run(pytester, difftest, *args)
    assert r.ret == 2, r.stdout.str()
    assert error in r.stdout.str(), r.stdout.str()


def test_no_verdict_fails_with_the_harness_output(pytester, difftest):
    pytester.makepyfile(test_x="def test_x(kerneldiff_case):\n    pass\n")
    r = run(pytester, difftest, "--kerneldiff-impl=serve:false", "-k", "topk_transform/lengths-k512")
    r.assert_outcomes(failed=1)
    text = r.stdout.str()
    assert "kerneldiff: difftest exited 125 without a verdict on topk_transform/lengths-k512:" in text
    assert "the program ended before its hello" in text


def test_marks_from_a_conftest_hook(pytester, difftest):
    """A conftest marks cases by their CaseInfo (kernel, family): an xfail
    on a failing case is xfailed, and -k combines ids with and/not."""
    pytester.makeconftest('''
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        info = item.callspec.params.get("kerneldiff_case")
        if info is not None and info.family == "nan16":
            item.add_marker(pytest.mark.xfail(reason="known: NaN order", strict=True))
''')
    pytester.makepyfile(test_ops=WRONG_TOPK)
    r = run(pytester, difftest, "-k", "topk_transform and (nan16 or lengths) and not bf16")
    r.assert_outcomes(xfailed=1, failed=3)  # f16-nan16; lengths-k512, lengths-noraw-k512, f16-lengths-k512
