"""exec mode: python -m kerneldiff exec FILE IN OUT, and run_exec in-process."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import safetensors
from safetensors.numpy import load_file

from conftest import HERE, example, load_example
from kerneldiff.execmode import ExecError, run_exec
from kerneldiff.loader import load_target
from kerneldiff.numerics import bf16_from_f32
from kerneldiff.stfile import Tensor, read_file, write_file

KERNELS = os.path.join(HERE, "servekernels.py")


def write_in(path, kernel, params, case="t/case", **tensors):
    write_file(path, tensors, {"kernel": kernel, "case": case, "params": json.dumps(params)})


def topk_in(tmp_path, return_raw=True):
    scores = np.array([[3, 1, 2, 2, 5, 0], [1, 2, 3, 4, 5, 6]], dtype=np.float32)
    p = tmp_path / "in.safetensors"
    write_in(p, "topk_transform", {"K": 4, "P": 2, "return_raw": return_raw, "batch": 2, "stride": 6, "max_pages": 3},
             scores=Tensor("F32", scores), seq_lens=Tensor("I32", np.array([3, 6], np.int32)),
             page_table=Tensor("I32", np.array([[7, 8, 9], [1, 0, 2]], np.int32)))
    return p


def exec_cli(target, inp, out):
    """`python -m kerneldiff exec TARGET IN OUT` in a subprocess: its
    CompletedProcess, stdout and stderr as text."""
    return subprocess.run([sys.executable, "-m", "kerneldiff", "exec", str(target), str(inp), str(out)],
                          capture_output=True, text=True, timeout=120)


def exec_servekernel(tmp_path, kernel):
    """exec_cli of servekernels.py's `kernel` on one input, a = F32
    [0, 1, 2, 3, 4], in tmp_path; (CompletedProcess, output path)."""
    inp, out = tmp_path / "in.safetensors", tmp_path / "out.safetensors"
    write_in(inp, kernel, {}, a=Tensor("F32", np.arange(5, dtype=np.float32)))
    return exec_cli(KERNELS, inp, out), out


def test_exec_cli_topk(tmp_path):
    inp, out = topk_in(tmp_path), tmp_path / "out.safetensors"
    r = exec_cli(example("numpy_topk.py"), inp, out)
    assert r.returncode == 0, r.stderr
    got = load_file(str(out))  # the standard safetensors reader
    assert got["page_indices"].dtype == np.int32 and got["page_indices"].shape == (2, 4)
    # row 0: L=3 <= K: slots of 0, 1, 2 = 7*2+0, 7*2+1, 8*2+0, then -1
    assert got["page_indices"][0].tolist() == [14, 15, 16, -1]
    assert got["raw_indices"][0].tolist() == [0, 1, 2, -1]
    # row 1: the 4 largest of 1..6 are positions 2..5 -> slots 0*2+0, 0*2+1, 2*2+0, 2*2+1
    assert sorted(got["raw_indices"][1].tolist()) == [2, 3, 4, 5]
    assert sorted(got["page_indices"][1].tolist()) == [0, 1, 4, 5]


def test_exec_states_version_and_device(tmp_path):
    """out.safetensors says which program and device wrote it, as a hello does."""
    load_example("numpy_topk.py")
    inp, out = topk_in(tmp_path), tmp_path / "out.safetensors"
    run_exec(str(inp), str(out))
    _, meta = read_file(out)
    assert meta["version"].startswith("kerneldiff-py ") and "numpy " + np.__version__ in meta["version"]
    assert meta["device"] and len(meta["device"].encode()) <= 256


def test_exec_optional_output_absent(tmp_path):
    load_example("numpy_topk.py")
    inp, out = topk_in(tmp_path, return_raw=False), tmp_path / "out.safetensors"
    run_exec(str(inp), str(out))
    got, _ = read_file(out)
    assert set(got) == {"page_indices"}


def test_exec_inout_cache(tmp_path):
    load_example("numpy_normrope.py")
    rng = np.random.default_rng(0)
    P, pages = 1, 4
    canary = rng.integers(0, 256, (pages, 132 * P), dtype=np.uint8)
    inp, out = tmp_path / "in.safetensors", tmp_path / "out.safetensors"
    params = {"norm": "layer", "rope_offset": 0, "rope_style": "neox", "hadamard": True, "store": "fp8",
              "scale_fmt": "ue8m0", "page_size": P, "num_pages": pages, "eps": 1e-6, "model": "v32"}
    write_in(inp, "norm_rope_store", params,
             x=Tensor("BF16", bf16_from_f32(rng.standard_normal((2, 130)).astype(np.float32))),
             weight=Tensor("F32", np.ones(128, np.float32)), bias=Tensor("F32", np.zeros(128, np.float32)),
             freqs=Tensor("F32", np.tile(np.array([1, 0], np.float32), (8, 32))),
             positions=Tensor("I64", np.array([3, 4])), out_loc=Tensor("I64", np.array([-1, 2])),
             cache=Tensor("U8", canary))
    with safetensors.safe_open(str(inp), framework="numpy") as f:
        assert f.metadata()["kernel"] == "norm_rope_store"
    run_exec(str(inp), str(out))
    got, _ = read_file(out)
    assert set(got) == {"cache"} and got["cache"].dtype == "U8"
    c = got["cache"].array
    assert c.shape == (pages, 132)
    np.testing.assert_array_equal(np.delete(c, 2, axis=0), np.delete(canary, 2, axis=0))
    scale = c[2, 128:132].view("<f4")[0]
    assert scale > 0 and np.log2(scale) == np.round(np.log2(scale))  # ue8m0: a power of two


def test_exec_custom_kernel_outputs(tmp_path):
    load_target(KERNELS)
    inp, out = tmp_path / "in.safetensors", tmp_path / "out.safetensors"
    write_in(inp, "copy", {"scale": 3}, a=Tensor("F32", np.arange(5, dtype=np.float32)))
    run_exec(str(inp), str(out))
    got, _ = read_file(out)
    np.testing.assert_array_equal(got["b"].array, np.arange(5, dtype=np.float32) * 3)


@pytest.mark.parametrize("kernel, code, words", [
    ("oob", 1, "output 'b': a write outside the output, after it (byte 20"),
    ("writes_input", 1, "input 'a' was modified (first at byte 2"),
    ("boom", 1, "ValueError: boom"),
    ("returns", 1, "must return None"),
    ("unknown_kernel", 125, "'unknown_kernel' is not implemented here"),
    ("torchy", 1, "AttributeError: 'numpy.ndarray' object has no attribute 'float'; torchy is handed NumPy arrays"),
])
def test_exec_failures(tmp_path, kernel, code, words):
    r, out = exec_servekernel(tmp_path, kernel)
    assert r.returncode == code, r.stderr
    assert words in r.stderr, r.stderr
    assert not out.exists()


def test_exec_bad_files(tmp_path):
    load_example("numpy_topk.py")
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\xff" * 16)
    with pytest.raises(ExecError, match="cannot read"):
        run_exec(str(junk), str(tmp_path / "o"))
    nometa = tmp_path / "nometa.safetensors"
    write_file(nometa, {"scores": Tensor("F32", np.zeros((1, 1), np.float32))})
    with pytest.raises(ExecError, match='"kernel"] is missing'):
        run_exec(str(nometa), str(tmp_path / "o"))
    wrong = tmp_path / "wrong.safetensors"
    write_in(wrong, "topk_transform", {"K": 1, "P": 1}, scores=Tensor("I32", np.zeros((1, 1), np.int32)),
             seq_lens=Tensor("I32", np.zeros(1, np.int32)), page_table=Tensor("I32", np.zeros((1, 1), np.int32)))
    with pytest.raises(ExecError, match="'scores' is I32, the contract says F32"):
        run_exec(str(wrong), str(tmp_path / "o"))


def test_unknown_kernel_without_outputs_spec(tmp_path):
    import kerneldiff

    @kerneldiff.implements("mystery")
    def mystery(**kw):
        pass

    inp = tmp_path / "in.safetensors"
    write_in(inp, "mystery", {}, a=Tensor("F32", np.zeros(1, np.float32)))
    with pytest.raises(ExecError, match="register it with implements"):
        run_exec(str(inp), str(tmp_path / "o"))


def test_exec_stated_outputs(tmp_path):
    """The harness states the case's outputs in __metadata__["outputs"]: a
    kernel this package has no table for (here one named like none of its
    contracts) runs from them alone."""
    import kerneldiff

    @kerneldiff.implements("stated_only")
    def stated_only(a, logits, **params):
        logits[...] = a.reshape(2, 3) * 2

    inp, out = tmp_path / "in.safetensors", tmp_path / "out.safetensors"
    write_file(inp, {"a": Tensor("F32", np.arange(6, dtype=np.float32))},
               {"kernel": "stated_only", "case": "t/c", "params": "{}",
                "outputs": json.dumps([{"name": "logits", "dtype": "F32", "shape": [2, 3], "inout": False}])})
    run_exec(str(inp), str(out))
    got, _ = read_file(out)
    np.testing.assert_array_equal(got["logits"].array, np.arange(6, dtype=np.float32).reshape(2, 3) * 2)


def test_exec_swallowed_output_hint(tmp_path):
    r, out = exec_servekernel(tmp_path, "swallows")
    assert r.returncode == 0
    assert "fill it in place (out.copy_(v) / out[...] = v)" in r.stderr, r.stderr
    assert "swallows has no parameter 'b', so the output went into its **params unseen" in r.stderr, r.stderr
    # The same note in out.safetensors, for the harness to show on the case.
    _, meta = read_file(out)
    assert meta["note"] == ("output 'b' still holds only the harness's poison (never written): fill it in place "
                            "(out.copy_(v) / out[...] = v); rebinding or returning it writes nothing; "
                            "swallows has no parameter 'b', so the output went into its **params unseen")


def test_exec_rebinding_hint(tmp_path):
    r, out = exec_servekernel(tmp_path, "rebinds")
    assert r.returncode == 0
    assert "output 'b' still holds only the harness's poison (never written)" in r.stderr
    _, meta = read_file(out)
    assert meta["note"].startswith("output 'b' still holds only the harness's poison")


def test_exec_written_output_has_no_note(tmp_path):
    load_target(KERNELS)
    inp, out = tmp_path / "in.safetensors", tmp_path / "out.safetensors"
    write_in(inp, "copy", {}, a=Tensor("F32", np.arange(5, dtype=np.float32)))
    run_exec(str(inp), str(out))
    _, meta = read_file(out)
    assert "note" not in meta


def test_exec_fills_outputs_with_the_run_poison(tmp_path):
    """The request names the run's poison (0x5A for the harness's second
    run): an output the function never writes comes back holding it, so
    the harness sees it unwritten in both runs."""
    load_target(KERNELS)
    inp, out = tmp_path / "in.safetensors", tmp_path / "out.safetensors"
    a = Tensor("F32", np.arange(5, dtype=np.float32))
    write_file(inp, {"a": a}, {"kernel": "rebinds", "case": "t/c", "params": "{}", "poison": "90"})
    run_exec(str(inp), str(out))
    got, _ = read_file(out)
    assert got["b"].array.view(np.uint8).tolist() == [0x5A] * 20
    for bad in ("256", "x"):
        write_file(inp, {"a": a}, {"kernel": "rebinds", "case": "t/c", "params": "{}", "poison": bad})
        with pytest.raises(ExecError, match=r'__metadata__\["poison"\]'):
            run_exec(str(inp), str(out))
