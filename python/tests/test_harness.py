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


def replay(difftest, path, impl="reference"):
    r = subprocess.run([difftest, "replay", str(path), "--impl", impl], capture_output=True, text=True, timeout=600,
                       cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_capture_16_bit_scores_replay(difftest, tmp_path):
    """Top-k scores captured as bf16 (NumPy uint16 bits, or torch bfloat16)
    and f16 keep their dtype, and replay against the reference and the
    NumPy example served."""
    import numpy as np

    import kerneldiff
    from kerneldiff.numerics import bf16_from_f32
    from kerneldiff.stfile import read_file

    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 700)).astype(np.float32)
    x[0, :50] = 1.0  # ties at the top
    x[1, 3] = np.nan
    t = dict(seq_lens=np.array([700, 600], np.int32), page_table=np.arange(2 * 88, dtype=np.int32).reshape(2, 88))
    scores = {"bf16": bf16_from_f32(x), "f16": x.astype(np.float16)}
    try:
        import torch

        scores["torch-bf16"] = torch.from_numpy(x).to(torch.bfloat16)
    except ImportError:
        pass
    for name, s in scores.items():
        p = kerneldiff.capture(tmp_path / f"{name}.safetensors", "topk_transform", {"K": 512, "P": 8}, scores=s, **t)
        got, _ = read_file(p)
        assert got["scores"].dtype == ("F16" if name == "f16" else "BF16"), name
        replay(difftest, p)
        replay(difftest, p, "serve:" + py("serve", example("numpy_topk.py")))


def test_capture_fp4_store_replays(difftest, tmp_path):
    """A norm_rope_store call with store "fp4" (68·P-byte pages) captured
    and replayed against the reference and the NumPy example."""
    import numpy as np

    import kerneldiff
    from kerneldiff.numerics import bf16_from_f32

    rng = np.random.default_rng(12)
    P, pages, N = 4, 6, 9
    params = {"norm": "rms", "rope_offset": 64, "rope_style": "interleaved", "hadamard": False, "store": "fp4",
              "scale_fmt": "ue8m0", "page_size": P, "eps": 1e-6, "model": "v4"}
    ang = rng.uniform(0, 6.3, (16, 32))
    p = kerneldiff.capture(
        tmp_path / "fp4.safetensors", "norm_rope_store", params,
        x=bf16_from_f32((rng.standard_normal((N, 128)) * 3).astype(np.float32)),
        weight=(1 + 0.1 * rng.standard_normal(128)).astype(np.float32),
        freqs=np.stack([np.cos(ang), np.sin(ang)], -1).reshape(16, 64).astype(np.float32),
        positions=rng.integers(0, 16, N), out_loc=np.where(np.arange(N) == 4, -1, rng.permutation(pages * P)[:N]),
        cache=rng.integers(0, 256, (pages, 68 * P), dtype=np.uint8))  # num_pages derived from the cache
    replay(difftest, p)
    replay(difftest, p, "exec:" + py("exec", example("numpy_normrope.py")))


def test_record_fp4_logits_bf16_out_replays(difftest, tmp_path):
    """record() of an out-param logits op over FP4 keys with bf16 logits:
    the capture derives logits_dtype and every size from the tensors and
    replays against the reference and the NumPy logits example."""
    import numpy as np

    import kerneldiff
    from kerneldiff.loader import load_target
    from kerneldiff import registry
    from kerneldiff.stfile import read_file

    load_target(example("numpy_logits.py"))
    example_fn = registry.get("indexer_logits").fn

    def op(q, kv_cache, weights, context_lens, block_table, out, page_size, clean_logits):
        example_fn(q=q, weights=weights, cache=kv_cache, seq_lens=context_lens, page_table=block_table, logits=out,
                   store="fp4", page_size=page_size, heads=q.shape[-2], clean=clean_logits)

    rec = kerneldiff.record(op, tmp_path / "caps", kernel="indexer_logits",
                            map={"q": "q", "kv_cache": "cache", "weights": "weights", "context_lens": "seq_lens",
                                 "block_table": "page_table", "out": "logits"},
                            params={"store": "fp4", "page_size": kerneldiff.arg("page_size"),
                                    "clean": kerneldiff.arg("clean_logits")}, on_error="raise")
    rng = np.random.default_rng(13)
    B, H, P, pages = 2, 3, 16, 5

    def fp4_records(n):
        r = np.empty((n, 68), np.uint8)
        r[:, :64] = rng.integers(0, 256, (n, 64))
        r[:, 64:] = rng.integers(118, 130, (n, 4))  # ue8m0 scales 2^-9 … 2^2
        return r

    q = fp4_records(B * H).reshape(B, H, 68)
    cache = np.concatenate([fp4_records(pages * P)[:, :64].reshape(pages, 64 * P),
                            fp4_records(pages * P)[:, 64:].reshape(pages, 4 * P)], axis=1)
    lens = np.array([40, 70], np.int32)
    table = np.array([[3, 1, 4, -1, -1], [0, 2, 4, 1, 3]], np.int32)
    out = np.zeros((B, 80), np.uint16)  # bf16 logits
    rec(q, cache, rng.standard_normal((B, H)).astype(np.float32), lens, table, out, P, True)
    (path,) = rec.captured
    got, meta = read_file(path)
    params = json.loads(meta["params"])
    assert params == {"store": "fp4", "page_size": P, "clean": True, "batch": B, "heads": H, "num_pages": pages,
                      "max_pages": 5, "stride": 80, "logits_dtype": "bf16"}
    assert got["q"].dtype == "U8" and got["q"].array.shape == (B, H, 68) and got["cache"].array.shape == (pages, 68 * P)
    replay(difftest, path)
    replay(difftest, path, "serve:" + py("serve", example("numpy_logits.py")))
