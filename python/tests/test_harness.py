"""The package through the real harness: ``difftest run`` with
``exec:python -m kerneldiff exec`` and ``serve:python -m kerneldiff serve``.

Needs a difftest binary in KD_DIFFTEST (scripts/test-python builds one and
sets it); without it these tests are skipped, and under CI they fail.
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import HERE, ROOT, example
from kerneldiff import contracts
from kerneldiff.contracts import CONTRACTS

DIFFTEST = os.environ.get("KD_DIFFTEST", "")
EVERY = os.path.join(HERE, "everykernel.py")


@pytest.fixture(scope="module")
def difftest():
    if not DIFFTEST:
        if os.environ.get("CI"):
            pytest.fail("KD_DIFFTEST is not set (scripts/test-python sets it)")
        pytest.skip("KD_DIFFTEST is not set: build cmd/difftest and point KD_DIFFTEST at it")
    return DIFFTEST


def run(difftest, tmp_path, impl, run_re, suite="quick", expect=(0,)):
    """difftest run on the suite's cases matching run_re; returns the case
    records by id and the summary."""
    out = tmp_path / "r.jsonl"
    r = subprocess.run([difftest, "run", "--suite", suite, "--run", run_re, "--impl", impl, "--json", str(out)],
                       capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert r.returncode in expect, r.stdout + r.stderr
    recs, summary = {}, None
    for line in out.read_text().splitlines():
        o = json.loads(line)
        if o["type"] == "case":
            recs[o["case"]] = o
        elif o["type"] == "summary":
            summary = o
    return recs, summary


def py(*args):
    return " ".join([sys.executable, "-m", "kerneldiff", *args])


def test_contracts_json_is_the_harness_own(difftest):
    r = subprocess.run([difftest, "list", "contracts", "--json"], capture_output=True, text=True, timeout=60, check=True)
    with open(os.path.join(os.path.dirname(contracts.__file__), "contracts.json")) as f:
        assert f.read() == r.stdout


@pytest.mark.parametrize("mode", ["exec", "serve"])
def test_every_kernel_gets_its_outputs(difftest, tmp_path, mode):
    """Each kernel's first quick-suite case reaches the function with every
    output (exec makes them from the request's stated outputs, serve from
    the shared memory): a wrong answer, never a missing or malformed one."""
    recs, _ = run(difftest, tmp_path, f"{mode}:" + py(mode, EVERY), "^(" + "|".join(CONTRACTS) + ")/", expect=(0, 1))
    seen = {r["kernel"] for r in recs.values()}
    assert seen == set(CONTRACTS)
    for id, r in recs.items():
        assert r["class"] not in ("crash", "bad-output", "missing-output", "unavailable"), (id, r.get("message"))


def test_exec_kernel_not_implemented_is_not_tested(difftest, tmp_path):
    recs, summary = run(difftest, tmp_path, "exec:" + py("exec", example("numpy_topk.py")),
                        "^(topk_transform/lengths-k512|norm_rope_store/zero/)")
    r = recs["norm_rope_store/zero/v4/N=8/P=64"]
    assert r["verdict"] == "skip" and r["class"] == "unavailable", r
    assert "does not implement norm_rope_store (exit status 125): not tested" in r["message"]
    assert recs["topk_transform/lengths-k512"]["verdict"] == "pass"
    assert summary["passed"] == 1 and summary["skipped"] == 1


def test_serve_kernels_not_offered_are_not_drawn(difftest, tmp_path):
    """A kernel the served file does not implement is not tested, and its
    inputs are never drawn (no input digest); a pipeline case, whose
    topk_transform stage the file offers, runs."""
    recs, summary = run(difftest, tmp_path, "serve:" + py("serve", example("numpy_topk.py")),
                        "^(indexer_logits/fp8/P=64/H=8|norm_rope_store/zero/|pipeline/)")
    for id in ("indexer_logits/fp8/P=64/H=8", "norm_rope_store/zero/v4/N=8/P=64"):
        r = recs[id]
        assert r["verdict"] == "skip" and r["class"] == "unavailable", r
        assert r["message"] == f"the serve program implements topk_transform, not {r['kernel']}"
        assert r["input_sha256"] == ""
    p = [r for r in recs.values() if r["kernel"] == "pipeline"]
    assert len(p) == 1 and p[0]["verdict"] == "pass" and p[0]["input_sha256"], p
    assert summary["skipped"] == 2 and summary["passed"] == 1


def test_unwritten_output_note_reaches_the_case(difftest, tmp_path):
    """A function that rebinds its output instead of filling it: the case
    fails unwritten, its record carries the package's note and its worst
    elements say they hold the poison."""
    prog = tmp_path / "rebinds.py"
    prog.write_text(
        "import kerneldiff\n"
        "@kerneldiff.implements('topk_transform')\n"
        "def topk(scores, seq_lens, page_table, page_indices, **params):\n"
        "    page_indices = scores[:, :1]  # the mistake: rebinding writes nothing\n")
    for mode in ("exec", "serve"):
        recs, _ = run(difftest, tmp_path, f"{mode}:" + py(mode, str(prog)), "^topk_transform/lengths-noraw-k512$",
                      expect=(1,))
        r = recs["topk_transform/lengths-noraw-k512"]
        assert r["class"] == "unwritten", r
        assert ("the program says: output 'page_indices' still holds only the harness's poison (never written): "
                "fill it in place (out.copy_(v) / out[...] = v)") in " ".join(r["warnings"]), r["warnings"]
        assert any(w["got"].endswith("(poison: the harness's fill, never written)") for w in r["worst"]), r["worst"]
