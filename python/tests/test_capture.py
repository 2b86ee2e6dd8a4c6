"""capture() and record(): files read back with safetensors, metadata, limit/when."""

import json
import os
import struct
import warnings

import numpy as np
import pytest
import safetensors
from safetensors.numpy import load_file

import kerneldiff
from conftest import load_example
from kerneldiff import CaptureError
from kerneldiff.execmode import run_exec
from kerneldiff.numerics import bf16_from_f32
from kerneldiff.stfile import read_file


def header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n))


def topk_tensors(rng, B=2, stride=20, P=4):
    return dict(
        scores=rng.standard_normal((B, stride)).astype(np.float32),
        seq_lens=np.array([7, stride], np.int32)[:B],
        page_table=np.arange(B * ((stride + P - 1) // P), dtype=np.int32).reshape(B, -1),
    )


def test_capture_numpy_topk(tmp_path):
    rng = np.random.default_rng(0)
    t = topk_tensors(rng)
    p = kerneldiff.capture(tmp_path / "a.safetensors", "topk_transform", {"K": 8, "P": 4, "return_raw": False}, **t)
    with safetensors.safe_open(p, framework="numpy") as f:
        meta = f.metadata()
    assert meta["kernel"] == "topk_transform"
    assert meta["case"] == "topk_transform/a"
    assert json.loads(meta["params"]) == {"K": 8, "P": 4, "return_raw": False}
    back = load_file(p)
    assert set(back) == {"scores", "seq_lens", "page_table"}
    for k, v in t.items():
        assert back[k].dtype == v.dtype and np.array_equal(back[k], v)


def test_capture_is_an_exec_input(tmp_path):
    # A capture is the exec protocol's in.safetensors: run the example on it.
    load_example("numpy_topk.py")
    rng = np.random.default_rng(1)
    p = kerneldiff.capture(tmp_path / "c.safetensors", "topk_transform", {"K": 8, "P": 4}, case="mine",
                           **topk_tensors(rng))
    assert header(p)["__metadata__"]["case"] == "topk_transform/mine"
    run_exec(p, str(tmp_path / "out.safetensors"))
    out, _ = read_file(tmp_path / "out.safetensors")
    assert out["page_indices"].array[0].tolist() == [0, 1, 2, 3, 4, 5, 6, -1]


def test_capture_store_bf16_header_and_rms_bias(tmp_path):
    rng = np.random.default_rng(2)
    x = bf16_from_f32(rng.standard_normal((3, 128)).astype(np.float32))
    params = {"norm": "rms", "rope_offset": 64, "rope_style": "interleaved", "hadamard": True, "store": "fp8",
              "scale_fmt": "plain", "page_size": 1, "num_pages": 4, "eps": 1e-6, "model": "v4"}
    p = kerneldiff.capture(tmp_path / "s.safetensors", "norm_rope_store", params, x=x,
                           weight=np.ones(128, np.float32), freqs=np.zeros((8, 64), np.float32),
                           positions=np.arange(3), out_loc=np.array([0, -1, 3]),
                           cache=np.full((4, 132), 0x5A, np.uint8))
    h = header(p)
    assert h["x"]["dtype"] == "BF16" and h["x"]["shape"] == [3, 128]
    assert h["bias"]["dtype"] == "F32"  # zeros written for RMSNorm
    assert h["cache"]["dtype"] == "U8" and h["positions"]["dtype"] == "I64"
    got, meta = read_file(p)
    assert np.array_equal(got["x"].array, x) and not got["bias"].array.any()


@pytest.mark.parametrize("change, words", [
    (lambda t, p: t.pop("seq_lens"), "'seq_lens' missing"),
    (lambda t, p: t.update(seq_lens=t["seq_lens"].astype(np.int64)), "contract says I32, got I64"),
    (lambda t, p: t.update(extra=np.zeros(1)), "'extra' are not inputs"),
    (lambda t, p: p.pop("P"), "'P' missing"),
    (lambda t, p: p.update(page_size=4), "'page_size' unknown"),
    (lambda t, p: p.update(K=object()), "params"),
])
def test_capture_rejects_what_replay_would(tmp_path, change, words):
    t, p = topk_tensors(np.random.default_rng(3)), {"K": 8, "P": 4}
    change(t, p)
    with pytest.raises(CaptureError, match=words):
        kerneldiff.capture(tmp_path / "x.safetensors", "topk_transform", p, **t)
    assert not os.listdir(tmp_path)


def test_capture_unknown_kernel_with_dtypes(tmp_path):
    p = kerneldiff.capture(tmp_path / "u.safetensors", "my_kernel", {"n": np.int64(3)},
                           dtypes={"h": "BF16"}, h=np.zeros(4, np.uint16), i=np.zeros(2, np.uint16))
    h = header(p)
    assert h["h"]["dtype"] == "BF16" and h["i"]["dtype"] == "U16"
    assert json.loads(h["__metadata__"]["params"]) == {"n": 3}


def out_param_topk(scores, seq_lens, page_table, out_page_indices, page_size, out_raw_indices=None):
    """An sgl-kernel-style op: fills its out tensors, scribbles on scores afterwards."""
    out_page_indices[...] = 1
    if out_raw_indices is not None:
        out_raw_indices[...] = 2
    scores[...] = 0  # the capture must hold the scores the op SAW
    return "result"


TOPK_MAP = {"scores": "scores", "seq_lens": "seq_lens", "page_table": "page_table",
            "out_page_indices": "page_indices", "out_raw_indices": "raw_indices"}


def test_record_out_param_op(tmp_path):
    op = kerneldiff.record(out_param_topk, tmp_path, kernel="topk_transform", map=TOPK_MAP,
                           params={"P": kerneldiff.arg("page_size")})
    rng = np.random.default_rng(4)
    t = topk_tensors(rng)
    seen = t["scores"].copy()
    out = np.zeros((2, 8), np.int32)
    raw = np.zeros((2, 8), np.int32)
    assert op(t["scores"], t["seq_lens"], t["page_table"], out, 4, out_raw_indices=raw) == "result"
    assert (out == 1).all() and (raw == 2).all()  # the real op ran
    assert op.calls == 1 and len(op.captured) == 1
    path = op.captured[0]
    assert os.path.basename(path) == "topk_transform-out_param_topk-00000.safetensors"
    back = load_file(path)
    assert np.array_equal(back["scores"], seen)
    assert set(back) == {"scores", "seq_lens", "page_table"}
    meta = header(path)["__metadata__"]
    assert json.loads(meta["params"]) == {"P": 4, "K": 8, "return_raw": True}
    assert meta["case"] == "topk_transform/out_param_topk-00000"
    op(t["scores"], t["seq_lens"], t["page_table"], out, 4)  # no raw: return_raw false
    assert json.loads(header(op.captured[1])["__metadata__"]["params"])["return_raw"] is False


def test_record_limit_and_when(tmp_path):
    rng = np.random.default_rng(5)
    t = topk_tensors(rng)
    op = kerneldiff.record(out_param_topk, tmp_path, kernel="topk_transform", map=TOPK_MAP,
                           params={"P": lambda a: a["page_size"]}, limit=2,
                           when=lambda a: a["out_page_indices"].shape[1] == 4)
    for k in (8, 4, 8, 4, 4, 4):
        op(t["scores"].copy(), t["seq_lens"], t["page_table"], np.zeros((2, k), np.int32), 4)
    assert op.calls == 6 and len(op.captured) == 2
    assert all(json.loads(header(p)["__metadata__"]["params"])["K"] == 4 for p in op.captured)
    assert sorted(os.listdir(tmp_path)) == ["topk_transform-out_param_topk-00000.safetensors",
                                            "topk_transform-out_param_topk-00001.safetensors"]


def test_record_convert_and_store_inout_before_call(tmp_path):
    def store_op(k, w, cos_sin, pos, slots, kv_cache):
        kv_cache[slots[slots >= 0]] = 7  # the op writes its cache

    op = kerneldiff.record(
        store_op, tmp_path, kernel="norm_rope_store",
        map={"k": "x", "w": "weight", "cos_sin": "freqs", "pos": ("positions", lambda v: v.astype(np.int64)),
             "slots": "out_loc", "kv_cache": "cache"},
        params={"norm": "rms", "rope_offset": 64, "rope_style": "interleaved", "hadamard": True, "store": "fp8",
                "scale_fmt": "plain", "page_size": 1, "eps": 1e-6, "model": "v4"},
        on_error="raise")
    cache = np.full((4, 132), 0x5A, np.uint8)
    op(np.zeros((2, 128), np.uint16), np.ones(128, np.float32), np.zeros((8, 64), np.float32),
       np.array([1, 2], np.int32), np.array([3, -1]), cache)
    assert (cache[3] == 7).all()
    back, meta = read_file(op.captured[0])
    assert (back["cache"].array == 0x5A).all()  # before the call
    assert back["positions"].dtype == "I64" and back["x"].dtype == "BF16"
    assert json.loads(meta["params"])["num_pages"] == 4


def test_record_failure_warns_and_op_runs(tmp_path):
    op = kerneldiff.record(out_param_topk, tmp_path, kernel="topk_transform", map=TOPK_MAP,
                           params={"P": kerneldiff.arg("page_size")})
    t = topk_tensors(np.random.default_rng(6))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = op(t["scores"].astype(np.float64), t["seq_lens"], t["page_table"], np.zeros((2, 8), np.int32), 4)
    assert r == "result" and op.captured == []
    assert any("contract says F32 or BF16 or F16, got F64" in str(x.message) for x in w)


def test_record_checks_the_map_up_front(tmp_path):
    with pytest.raises(ValueError, match="'logits' is not a tensor of topk_transform"):
        kerneldiff.record(out_param_topk, tmp_path, kernel="topk_transform", map={"scores": "logits"})
    with pytest.raises(ValueError, match="argnames"):
        kerneldiff.record(max, tmp_path, kernel="topk_transform", map={})


def test_record_with_argnames_for_builtin(tmp_path):
    class Op:
        def __call__(self, *a, **k):
            return None

    op = kerneldiff.record(Op(), tmp_path, kernel="topk_transform", map=TOPK_MAP, name="ext",
                           argnames=["scores", "seq_lens", "page_table", "out_page_indices", "page_size"],
                           params={"P": kerneldiff.arg("page_size")}, on_error="raise")
    t = topk_tensors(np.random.default_rng(7))
    op(t["scores"], t["seq_lens"], t["page_table"], np.zeros((2, 8), np.int32), 4)
    assert os.path.basename(op.captured[0]) == "topk_transform-ext-00000.safetensors"


def test_capture_torch(tmp_path):
    torch = pytest.importorskip("torch")
    x = torch.randn(2, 128).to(torch.bfloat16)
    p = kerneldiff.capture(tmp_path / "t.safetensors", "topk_transform", {"K": 4, "P": 1},
                           scores=torch.randn(2, 8), seq_lens=torch.tensor([3, 8], dtype=torch.int32),
                           page_table=torch.arange(16, dtype=torch.int32).reshape(2, 8))
    assert header(p)["scores"]["dtype"] == "F32"
    q = kerneldiff.capture(tmp_path / "u.safetensors", "k", {}, x=x)
    got, _ = read_file(q)
    assert got["x"].dtype == "BF16"
    assert np.array_equal(got["x"].array, x.view(torch.int16).numpy().view(np.uint16))
