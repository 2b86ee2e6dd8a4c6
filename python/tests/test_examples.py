"""The examples on hand-made cases (the Go harness checks them on the suites:
scripts/test-python runs them through `difftest run --impl exec:...`)."""

import itertools
import os
import subprocess
import sys
import zlib

import numpy as np
import pytest

from conftest import ROOT, example, load_example
import kerneldiff.registry as registry
from kerneldiff.numerics import bf16_from_f32, bf16_to_f32, e4m3fn_to_f32


def nan(sign):
    return np.array([0xFFC00000 if sign < 0 else 0x7FC00000], np.uint32).view(np.float32)[0]


def run_topk(scores, lens, table, K, P, raw=True):
    impl = registry.get("topk_transform")
    B = scores.shape[0]
    pi = np.full((B, K), 0x5A5A5A5A, np.int32)
    ri = np.full((B, K), 0x5A5A5A5A, np.int32) if raw else None
    outs = {"page_indices": pi, **({"raw_indices": ri} if raw else {})}
    registry.call(impl, {"scores": scores, "seq_lens": lens, "page_table": table}, outs,
                  {"K": K, "P": P, "return_raw": raw})
    return pi, ri


@pytest.fixture(params=["numpy_topk.py", "record_from_server.py"])
def topk_example(request):
    load_example(request.param)


def test_topk_key32_order_with_specials(topk_example):
    row = np.array([nan(+1), nan(-1), 1.0, -np.inf, 0.0, -0.0, np.inf, -1.0], np.float32)
    scores = np.stack([row, row])
    lens = np.array([8, 7], np.int32)
    table = np.array([[0, 1, 2, 3], [4, 5, 6, 7]], np.int32)
    _, raw = run_topk(scores, lens, table, K=4, P=2)
    # +NaN > +inf > 1 > +0 > -0 > -1 > -inf > -NaN
    assert set(raw[0].tolist()) == {0, 6, 2, 4}
    assert set(raw[1].tolist()) == {0, 6, 2, 4}   # position 7 (-1.0) is past L in row 1
    _, raw = run_topk(scores, lens, table, K=6, P=2)
    assert set(raw[0].tolist()) == {0, 6, 2, 4, 5, 7}


def test_topk_short_rows_in_order_and_page_transform(topk_example):
    scores = np.zeros((3, 6), np.float32)
    lens = np.array([0, 3, 5], np.int32)
    table = np.array([[9, 9, 9], [4, 2, 0], [1, 3, 5]], np.int32)
    pi, raw = run_topk(scores, lens, table, K=5, P=2)
    assert pi.tolist() == [[-1] * 5, [8, 9, 4, -1, -1], [2, 3, 6, 7, 10]]
    assert raw.tolist() == [[-1] * 5, [0, 1, 2, -1, -1], [0, 1, 2, 3, 4]]


def test_topk_ties_straddling_kth(topk_example):
    scores = np.array([[3, 2, 2, 2, 1, 2]], np.float32)
    _, raw = run_topk(scores, np.array([6], np.int32), np.arange(6, dtype=np.int32)[None], K=2, P=1)
    r = raw[0].tolist()
    assert 0 in r and len(set(r)) == 2 and scores[0, r].min() == 2


def test_topk_no_raw_output(topk_example):
    pi, _ = run_topk(np.ones((1, 4), np.float32), np.array([2], np.int32), np.array([[3]], np.int32), K=3, P=4,
                     raw=False)
    assert pi.tolist() == [[12, 13, -1]]


# --- norm_rope_store against an independent f64 reference ---------------

def reference_token(x, w, bias, cs, norm, off, style, had, eps=1e-6):
    x = x.astype(np.float64)
    if norm == "rms":
        y = x / np.sqrt(np.mean(x * x) + eps) * w
    else:
        d = x - x.mean()
        y = d / np.sqrt(np.mean(d * d) + eps) * w + bias
    y = y.copy()
    for j in range(32):
        ia, ib = (off + 2 * j, off + 2 * j + 1) if style == "interleaved" else (off + j, off + j + 32)
        c, s = float(cs[2 * j]), float(cs[2 * j + 1])
        a, b = y[ia], y[ib]
        y[ia], y[ib] = a * c - b * s, a * s + b * c
    if had:
        k = np.arange(128)
        sign = np.array([[(-1) ** bin(i & j).count("1") for j in k] for i in k], np.float64)
        y = sign @ y / np.sqrt(128)
    return y


CONFIGS = list(itertools.product(["rms", "layer"], [0, 64], ["neox", "interleaved"], [False, True],
                                 ["bf16", "fp8-plain", "fp8-ue8m0"]))


@pytest.mark.parametrize("norm, off, style, had, store", CONFIGS, ids=["-".join(map(str, c)) for c in CONFIGS])
def test_normrope_matches_f64_reference(norm, off, style, had, store):
    load_example("numpy_normrope.py")
    rng = np.random.default_rng(zlib.crc32(repr((norm, off, style, had, store)).encode()))
    N, P, pages = 5, 2, 4
    x = bf16_from_f32(rng.standard_normal((N, 130)).astype(np.float32))
    w = (1 + 0.25 * rng.standard_normal(128)).astype(np.float32)
    bias = (0.1 * rng.standard_normal(128)).astype(np.float32)
    ang = rng.uniform(0, 2 * np.pi, (8, 32))
    freqs = np.stack([np.cos(ang), np.sin(ang)], axis=-1).reshape(8, 64).astype(np.float32)
    pos = rng.integers(0, 8, N)
    loc = np.array([7, -1, 0, 3, 4])
    fp8 = store.startswith("fp8")
    pb = 132 * P if fp8 else 256 * P
    canary = rng.integers(0, 256, (pages, pb), dtype=np.uint8)
    cache = canary.copy()
    params = {"norm": norm, "rope_offset": off, "rope_style": style, "hadamard": had,
              "store": "fp8" if fp8 else "bf16", "scale_fmt": "ue8m0" if store == "fp8-ue8m0" else "plain",
              "page_size": P, "num_pages": pages, "eps": 1e-6, "model": "v4"}
    registry.call(registry.get("norm_rope_store"),
                  {"x": x, "weight": w, "bias": bias, "freqs": freqs, "positions": pos, "out_loc": loc},
                  {"cache": cache}, params)
    flat, cflat = cache.reshape(-1), canary.reshape(-1)
    touched = np.zeros(flat.size, bool)
    for t in range(N):
        slot = loc[t]
        if slot < 0:
            continue
        page, o = slot // P, slot % P
        ref = reference_token(bf16_to_f32(x[t, :128]), w, bias, freqs[pos[t]], norm, off, style, had)
        floor = 1e-5 * np.abs(ref).max()
        if not fp8:
            at = page * pb + o * 256
            touched[at : at + 256] = True
            got = bf16_to_f32(flat[at : at + 256].view(np.uint16)).astype(np.float64)
            ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(ref), 1e-30))) - 7)
            assert (np.abs(got - ref) <= ulp + floor).all(), (t, np.abs(got - ref).max())
            continue
        at, sat = page * pb + o * 128, page * pb + 128 * P + o * 4
        touched[at : at + 128] = True
        touched[sat : sat + 4] = True
        scale = float(flat[sat : sat + 4].view("<f4")[0])
        want = max(np.abs(ref).max(), 1e-4) / 448
        if params["scale_fmt"] == "ue8m0":
            assert scale in (2.0 ** np.ceil(np.log2(want)), 2.0 ** np.floor(np.log2(want)))
        else:
            assert abs(scale - want) <= 1e-6 * want
        got = e4m3fn_to_f32(flat[at : at + 128].copy()).astype(np.float64) * scale
        q = np.abs(ref / scale)
        step = np.where(q < 2.0 ** -6, 2.0 ** -9, 2.0 ** (np.floor(np.log2(np.maximum(q, 2.0 ** -6))) - 3)) * scale
        assert (np.abs(got - ref) <= step + floor).all(), (t, np.abs(got - ref).max())
    np.testing.assert_array_equal(flat[~touched], cflat[~touched])


def test_normrope_no_tokens_written():
    load_example("numpy_normrope.py")
    cache = np.full((1, 132), 7, np.uint8)
    registry.call(registry.get("norm_rope_store"),
                  {"x": np.zeros((2, 128), np.uint16), "weight": np.ones(128, np.float32),
                   "bias": np.zeros(128, np.float32), "freqs": np.zeros((1, 64), np.float32),
                   "positions": np.zeros(2, np.int64), "out_loc": np.array([-1, -1])},
                  {"cache": cache},
                  {"norm": "rms", "rope_offset": 0, "rope_style": "neox", "store": "fp8", "scale_fmt": "plain",
                   "page_size": 1, "num_pages": 1, "eps": 1e-6, "model": "v4"})
    assert (cache == 7).all()


def test_normrope_zero_token_scale_floor():
    load_example("numpy_normrope.py")
    cache = np.zeros((1, 132), np.uint8)
    registry.call(registry.get("norm_rope_store"),
                  {"x": np.zeros((1, 128), np.uint16), "weight": np.ones(128, np.float32),
                   "bias": np.zeros(128, np.float32), "freqs": np.zeros((1, 64), np.float32),
                   "positions": np.zeros(1, np.int64), "out_loc": np.array([0])},
                  {"cache": cache},
                  {"norm": "rms", "rope_offset": 0, "rope_style": "neox", "store": "fp8", "scale_fmt": "plain",
                   "page_size": 1, "num_pages": 1, "eps": 1e-6, "model": "v4", "hadamard": True})
    assert cache[0, 128:].view("<f4")[0] == np.float32(np.float32(1e-4) / np.float32(448))
    assert not cache[0, :128].any()


def test_record_from_server_script(tmp_path):
    out = tmp_path / "caps"
    r = subprocess.run([sys.executable, example("record_from_server.py"), "--out", str(out), "--limit", "3"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    files = sorted(os.listdir(out))
    assert files == [f"topk_transform-fast_topk-0000{i}.safetensors" for i in range(3)]
    assert f"difftest run --suite {out} --impl 'serve:python -m kerneldiff serve examples/record_from_server.py'" in r.stdout


def test_torch_ops_on_cpu():
    torch = pytest.importorskip("torch")
    load_example("torch_ops.py")
    impl = registry.get("topk_transform")
    scores = torch.tensor([[3.0, float("nan"), 1.0, 2.0]])
    pi = torch.full((1, 2), -7, dtype=torch.int32)
    registry.call(impl, {"scores": scores, "seq_lens": torch.tensor([4], dtype=torch.int32),
                         "page_table": torch.tensor([[0, 1, 2, 3]], dtype=torch.int32)},
                  {"page_indices": pi}, {"K": 2, "P": 1, "return_raw": False})
    assert set(pi[0].tolist()) == {0, 1}


# --- the FP4 store (store "fp4"), hand-worked --------------------------------

def _fp4_token_case():
    """One token x = 1 (RMSNorm: z = w · 1/sqrt(1 + 1e-6) = 0.9999995 · w),
    identity RoPE, no Hadamard, written to slot 3 (page 1, offset 1) of a
    P = 2 cache of 68·P-byte pages; a second token is not written."""
    w = np.zeros(128, np.float32)
    w[0:7] = [6, -4, 3, 1.5, 0.6, -0.2, 1.1]  # block 0: s1 = s2 = 1
    w[32:64] = 0.001                          # block 1: s1 = s2 = 2^-12, codes 4
    w[96:128] = -2                            # block 3: s1 = s2 = 0.5, codes -4; block 2 is zero
    x = bf16_from_f32(np.ones((2, 128), np.float32))
    freqs = np.tile(np.array([1, 0], np.float32), (1, 32))  # cos 1, sin 0
    rng = np.random.default_rng(7)
    canary = rng.integers(0, 256, (3, 68 * 2), dtype=np.uint8)
    inputs = {"x": x, "weight": w, "bias": np.zeros(128, np.float32), "freqs": freqs,
              "positions": np.zeros(2, np.int64), "out_loc": np.array([3, -1])}
    params = {"norm": "rms", "rope_offset": 64, "rope_style": "interleaved", "hadamard": False, "store": "fp4",
              "scale_fmt": "ue8m0", "page_size": 2, "num_pages": 3, "eps": 1e-6, "model": "v4", "preset": "v4-fp4"}
    # Block 0: 5.999997 -> 6 (0x7), -3.999998 -> -4 (0xE), 2.9999985 -> 3 (0x5), 1.4999992 -> 1.5 (0x3),
    # 0.5999997 -> 0.5 (0x1), -0.1999999 -> -0 stored as 0x0, 1.0999994 -> 1 (0x2); dim 2i low, 2i+1 high.
    codes = [0xE7, 0x35, 0x01, 0x02] + [0] * 12
    # Block 1: 0.0009999995 / 2^-12 = 4.096 -> 4 (0x6); block 2: zero; block 3: -1.999999 / 0.5 -> -4 (0xE).
    codes += [0x66] * 16 + [0x00] * 16 + [0xEE] * 16
    scales = [127, 127 - 12, 127 - 13, 127 - 1]  # 1, 2^-12, the floor 2^-13 (1e-4 rounded up), 0.5
    want = canary.copy()
    want[1, 64:128] = codes   # page 1: [P × 64 code bytes][P × 4 scale bytes], offset 1
    want[1, 132:136] = scales
    return inputs, canary, params, want


@pytest.mark.parametrize("tensors", ["numpy", "torch"])
def test_normrope_fp4_hand_worked_token(tensors):
    inputs, canary, params, want = _fp4_token_case()
    cache = canary.copy()
    if tensors == "torch":
        torch = pytest.importorskip("torch")
        load_example("torch_ops.py")
        ins = {k: torch.from_numpy(v) for k, v in inputs.items()}
        ins["x"] = ins["x"].view(torch.int16).view(torch.bfloat16)
        out = torch.from_numpy(cache)
    else:
        load_example("numpy_normrope.py")
        ins, out = inputs, cache
    registry.call(registry.get("norm_rope_store"), ins, {"cache": out}, params)
    np.testing.assert_array_equal(cache, want)
