"""The serve loop of protocol 1 in a subprocess, driven by a fake harness."""

import copy
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from conftest import HERE, example
from fakeharness import Layout, Server

SERVE = ["-m", "kerneldiff", "serve"]
KERNELS = os.path.join(HERE, "servekernels.py")


def topk_case(rng, B=3, stride=40, K=8, P=4):
    scores = rng.standard_normal((B, stride)).astype(np.float32)
    seq_lens = np.array([0, 5, stride][:B], dtype=np.int32)
    pages = (stride + P - 1) // P
    table = np.stack([rng.permutation(pages) + 100 * b for b in range(B)]).astype(np.int32)
    return scores, seq_lens, table


def expected_topk(scores, seq_lens, table, K, P):
    want = np.full((scores.shape[0], K), -1, dtype=np.int64)
    sets = []
    for b, L in enumerate(seq_lens):
        raw = list(range(L)) if L <= K else list(np.argsort(-scores[b, :L], kind="stable")[:K])
        sets.append(set(int(table[b, r // P]) * P + r % P for r in raw))
        if L <= K:
            want[b, :L] = [table[b, r // P] * P + r % P for r in raw]
    return want, sets


def four_ones(srv, **output):
    """The layout of the small requests to servekernels.py: input a, four
    F32 ones; output b, F32 [4] (`output`: Layout.output's options, such as
    poison); written to srv's shared memory."""
    lay = Layout()
    lay.input("a", "F32", np.ones(4, np.float32))
    lay.output("b", "F32", (4,), **output)
    lay.write(srv)
    return lay


def test_hello():
    with Server([*SERVE, example("numpy_topk.py")]) as srv:
        hello = srv.recv()
        assert hello["type"] == "hello"
        assert hello["protocol"] == 1
        assert hello["kernels"] == ["topk_transform"]
        assert isinstance(hello["device"], str) and 0 < len(hello["device"].encode()) <= 256
        assert hello["version"].startswith("kerneldiff-py 0.1.0 (")
        assert "numpy " + np.__version__ in hello["version"]
        assert "torch" not in hello["version"]  # a NumPy-only server never imports torch
        srv.close_requests()
        assert srv.wait()[0] == 0


def test_several_targets_one_server():
    with Server([*SERVE, example("numpy_topk.py"), example("numpy_normrope.py")]) as srv:
        assert srv.recv()["kernels"] == ["norm_rope_store", "topk_transform"]
        srv.close_requests()
        assert srv.wait()[0] == 0


def test_version_text_and_hello_first():
    with Server([*SERVE, KERNELS, "--version", "my-kernels 0.3.1"]) as srv:
        hello = srv.recv()
        assert hello["version"].startswith("my-kernels 0.3.1 kerneldiff-py")
        assert hello["kernels"] == sorted(["copy", "boom", "returns", "oob", "writes_input", "reshape", "rebinds", "swallows"])


def test_topk_round_trip_real_values():
    rng = np.random.default_rng(1)
    K, P = 8, 4
    scores, seq_lens, table = topk_case(rng, K=K, P=P)
    with Server([*SERVE, example("numpy_topk.py")]) as srv:
        srv.recv()
        lay = Layout()
        lay.input("scores", "F32", scores)
        lay.input("seq_lens", "I32", seq_lens)
        lay.input("page_table", "I32", table)
        lay.output("page_indices", "I32", (3, K))
        lay.output("raw_indices", "I32", (3, K))
        lay.write(srv)
        srv.send(lay.request(srv, "topk_transform", {"K": K, "P": P, "return_raw": True, "batch": 3}))
        rep = srv.recv()
        assert rep == {"type": "result", "seq": 1, "status": "ok", "kernel_time_ns": rep["kernel_time_ns"],
                       "device": rep["device"]}
        assert isinstance(rep["kernel_time_ns"], int) and rep["kernel_time_ns"] >= 0
        got = lay.read(srv, "page_indices")
        raw = lay.read(srv, "raw_indices")
        want, sets = expected_topk(scores, seq_lens, table, K, P)
        np.testing.assert_array_equal(got[:2], want[:2])  # L <= K rows: exact, in order, -1 padded
        assert set(got[2].tolist()) == sets[2]
        assert list(raw[1]) == [0, 1, 2, 3, 4, -1, -1, -1]
        assert lay.guards_intact(srv)
        np.testing.assert_array_equal(np.frombuffer(srv.get(lay.inputs[0]["offset"], scores.nbytes), np.float32),
                                      scores.reshape(-1))
        srv.close_requests()
        assert srv.wait()[0] == 0


def test_store_inout_cache_keeps_canary():
    # norm_rope_store's cache: one output holding canary bytes; only written slots change.
    rng = np.random.default_rng(2)
    N, P, pages = 3, 2, 3
    from kerneldiff.numerics import bf16_from_f32

    x = bf16_from_f32(rng.standard_normal((N, 128)).astype(np.float32))
    freqs = np.tile(np.array([1.0, 0.0], np.float32), (4, 32))
    canary = rng.integers(0, 256, (pages, 256 * P), dtype=np.uint8)
    with Server([*SERVE, example("numpy_normrope.py")]) as srv:
        srv.recv()
        lay = Layout()
        lay.input("x", "BF16", x)
        lay.input("weight", "F32", np.ones(128, np.float32))
        lay.input("bias", "F32", np.zeros(128, np.float32))
        lay.input("freqs", "F32", freqs)
        lay.input("positions", "I64", np.array([0, 1, 2], np.int64))
        lay.input("out_loc", "I64", np.array([5, -1, 0], np.int64))
        lay.output("cache", "U8", (pages, 256 * P), content=canary)
        lay.write(srv)
        params = {"norm": "rms", "rope_offset": 64, "rope_style": "interleaved", "hadamard": False, "store": "bf16",
                  "scale_fmt": "plain", "page_size": P, "num_pages": pages, "eps": 1e-6, "model": "v4"}
        srv.send(lay.request(srv, "norm_rope_store", params))
        assert srv.recv()["status"] == "ok"
        cache = lay.read(srv, "cache").reshape(-1)
        written = np.zeros(cache.size, bool)
        written[0:256] = True          # slot 0: page 0, offset 0
        written[2 * 512 + 256: 2 * 512 + 512] = True  # slot 5: page 2, offset 1
        np.testing.assert_array_equal(cache[~written], canary.reshape(-1)[~written])
        # cos 1, sin 0, unit weight, no hadamard: the stored value is x / rms(x), rounded to bf16
        xs = (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        y = xs[2] / np.sqrt(np.mean(xs[2] ** 2) + 1e-6)  # token 2 went to slot 0
        got = (cache[0:256].view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        np.testing.assert_allclose(got, y, rtol=2 ** -7)
        assert lay.guards_intact(srv)


def test_remap_when_shm_grows():
    with Server([*SERVE, KERNELS], shm_size=64 << 10) as srv:
        srv.recv()
        for n, scale in ((100, 2.0), (200_000, 3.0), (10, 0.5)):
            a = np.arange(n, dtype=np.float32)
            lay = Layout()
            lay.input("a", "F32", a)
            lay.output("b", "F32", (n,))
            lay.write(srv)  # grows the memfd when needed; shm_size only grows in the real harness
            req = lay.request(srv, "copy", {"scale": scale})
            req["shm_size"] = srv.size
            srv.send(req)
            rep = srv.recv()
            assert rep["status"] == "ok", rep
            np.testing.assert_array_equal(lay.read(srv, "b"), a * np.float32(scale))
        assert srv.size > 64 << 10


def test_error_reply_and_server_goes_on():
    with Server([*SERVE, KERNELS]) as srv:
        srv.recv()
        lay = four_ones(srv)
        srv.send(lay.request(srv, "boom", {}))
        rep = srv.recv()
        assert rep["status"] == "error" and rep["seq"] == 1
        assert rep["message"].startswith("ValueError: boom: the kernel failed (at servekernels.py:")
        assert "\n" not in rep["message"]
        srv.send(lay.request(srv, "returns", {}))
        rep = srv.recv()
        assert rep["status"] == "error" and "ContractError" in rep["message"] and "must return None" in rep["message"]
        srv.send(lay.request(srv, "reshape", {}))
        rep = srv.recv()
        assert rep["status"] == "error" and "'b'" in rep["message"] and "shape changed" in rep["message"]
        srv.send(lay.request(srv, "nope", {}))
        rep = srv.recv()
        assert rep["status"] == "error" and "'nope' is not implemented" in rep["message"]
        srv.send(lay.request(srv, "copy", {}))
        assert srv.recv()["status"] == "ok"
        srv.close_requests()
        code, err = srv.wait()
        assert code == 0
        assert "Traceback" in err and "boom: the kernel failed" in err


def test_oob_write_lands_in_guard():
    with Server([*SERVE, KERNELS]) as srv:
        srv.recv()
        lay = four_ones(srv)
        srv.send(lay.request(srv, "oob", {}))
        assert srv.recv()["status"] == "ok"  # the program cannot know; the harness's guard check does
        assert not lay.guards_intact(srv)


@pytest.mark.parametrize(
    "mutate, rule",
    [
        (lambda r: r["inputs"][0].update(offset=1 << 30), "past shm_size"),
        (lambda r: r["inputs"][0].update(nbytes=3), "nbytes 3 must be 16"),
        (lambda r: r["inputs"][0].update(dtype="F8"), "dtype 'F8'"),
        (lambda r: r["inputs"][0].update(shape=[-1]), "shape must be"),
        (lambda r: r["outputs"][0].update(guard=1 << 40), "guard"),
        (lambda r: r.update(shm_size=1 << 40), "exceeds the size of fd 5"),
        (lambda r: r.update(params=[1]), "params must be an object"),
        (lambda r: r.update(type="ping"), "accepts only \"run\""),
        (lambda r: r["inputs"].append(dict(r["inputs"][0])), "appears twice"),
    ],
)
def test_bad_request_with_seq_gets_error_reply(mutate, rule):
    with Server([*SERVE, KERNELS]) as srv:
        srv.recv()
        lay = four_ones(srv)
        req = copy.deepcopy(lay.request(srv, "copy", {}))
        mutate(req)
        srv.send(req)
        rep = srv.recv()
        assert rep["status"] == "error" and rep["seq"] == req["seq"], rep
        assert rule in rep["message"], rep["message"]
        srv.send(lay.request(srv, "copy", {}))  # and the next request works
        assert srv.recv()["status"] == "ok"


@pytest.mark.parametrize(
    "data, words",
    [
        (struct.pack("<I", (1 << 20) + 1) + b"{}", "outside [1, 1048576]"),
        (struct.pack("<I", 0), "outside [1, 1048576]"),
        (struct.pack("<I", 5) + b"{nope", "not UTF-8 JSON"),
        (struct.pack("<I", 2) + b"[]", "not an object"),
        (struct.pack("<I", 4) + b"\xff\xfe{}", "not UTF-8 JSON"),
        (struct.pack("<I", 100) + b"{}", "end of file"),
        (struct.pack("<I", 2) + b"{}", "no valid seq"),
        (b"\x01\x00", "end of file"),
    ],
)
def test_broken_stream_exits_2(data, words):
    with Server([*SERVE, KERNELS]) as srv:
        srv.recv()
        srv.send_raw(data)
        srv.close_requests()
        code, err = srv.wait()
        assert code == 2, err
        assert words in err


def test_eof_before_any_request_exits_0():
    with Server([*SERVE, KERNELS]) as srv:
        srv.recv()
        srv.close_requests()
        assert srv.wait()[0] == 0


def test_without_fds_says_how_to_run():
    r = subprocess.run([sys.executable, *SERVE, KERNELS], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL, close_fds=True)
    assert r.returncode == 2
    assert "fd 3 (requests) is not open" in r.stderr and "difftest run --impl 'serve:CMD'" in r.stderr


def test_other_protocol_env_refused():
    with Server([*SERVE, KERNELS], env={"KD_SERVE_PROTOCOL": "2"}) as srv:
        code, err = srv.wait()
        assert code == 2 and "KD_SERVE_PROTOCOL='2'" in err


def test_load_failures_exit_2(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("raise ImportError('no such kernel library')\n")
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    for target, words in ((str(bad), "no such kernel library"), (str(empty), "registers no kernel"),
                          (str(tmp_path / "missing.py"), "no such file"), ("no_such_module_kd", "no module named")):
        r = subprocess.run([sys.executable, *SERVE, target], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2, (target, r.stderr)
        assert words in r.stderr, r.stderr


def test_torch_cpu_round_trip(tmp_path):
    pytest.importorskip("torch")
    with Server([*SERVE, example("torch_ops.py"), "--device", "cpu"]) as srv:
        hello = srv.recv()
        assert "torch" in hello["version"]
        rng = np.random.default_rng(3)
        K, P = 8, 4
        scores, seq_lens, table = topk_case(rng, K=K, P=P)
        lay = Layout()
        lay.input("scores", "F32", scores)
        lay.input("seq_lens", "I32", seq_lens)
        lay.input("page_table", "I32", table)
        lay.output("page_indices", "I32", (3, K))
        lay.write(srv)
        srv.send(lay.request(srv, "topk_transform", {"K": K, "P": P, "return_raw": False}))
        assert srv.recv()["status"] == "ok"
        want, sets = expected_topk(scores, seq_lens, table, K, P)
        got = lay.read(srv, "page_indices")
        np.testing.assert_array_equal(got[:2], want[:2])
        assert set(got[2].tolist()) == sets[2]


def test_rebinding_an_output_is_hinted_on_stderr():
    with Server([*SERVE, KERNELS]) as srv:
        srv.recv()
        lay = four_ones(srv, poison=0x5A)
        srv.send(lay.request(srv, "rebinds", {}, case="t/rebind"))
        assert srv.recv()["status"] == "ok"  # the harness classes it unwritten
        srv.close_requests()
        code, err = srv.wait()
        assert code == 0
        assert "seq 1 t/rebind: output 'b' still holds only the poison byte" in err
