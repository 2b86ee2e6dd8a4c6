"""misbehaving_server.py does what each mode says (the Go harness tests
classify them; here only the observable behaviour is pinned)."""

import os
import signal
import struct

import numpy as np
import pytest

from conftest import HERE
from fakeharness import Layout, Server

PROG = os.path.join(HERE, "misbehaving_server.py")


def topk_layout(srv):
    lay = Layout()
    lay.input("scores", "F32", np.arange(6, dtype=np.float32)[None])
    lay.input("seq_lens", "I32", np.array([6], np.int32))
    lay.input("page_table", "I32", np.array([[0, 1, 2, 3, 4, 5]], np.int32))
    lay.output("page_indices", "I32", (1, 4))
    lay.write(srv)
    return lay


def start(mode, *extra):
    return Server([PROG, mode, *extra])


def send(srv, lay, case="topk_transform/victim"):
    srv.send(lay.request(srv, "topk_transform", {"K": 4, "P": 1}, case=case))


def test_only_matching_cases_misbehave():
    with start("wrongseq", "--case", "victim") as srv:
        assert srv.recv()["type"] == "hello"
        lay = topk_layout(srv)
        send(srv, lay, "topk_transform/innocent")
        rep = srv.recv()
        assert rep["seq"] == 1 and rep["status"] == "ok"
        assert sorted(lay.read(srv, "page_indices")[0].tolist()) == [2, 3, 4, 5]
        send(srv, lay)
        assert srv.recv()["seq"] == 1002


@pytest.mark.parametrize("mode", ["guard", "underguard", "writeinput", "unwritten", "error", "stderr50mb", "fork"])
def test_reply_modes(mode):
    with start(mode) as srv:
        srv.recv()
        lay = topk_layout(srv)
        send(srv, lay)
        rep = srv.recv(timeout=60)
        assert rep["seq"] == 1
        assert rep["status"] == ("error" if mode == "error" else "ok")
        got = lay.read(srv, "page_indices")
        inputs_ok = srv.get(lay.inputs[0]["offset"], 24) == np.arange(6, dtype=np.float32).tobytes()
        assert lay.guards_intact(srv) == (mode not in ("guard", "underguard"))
        assert inputs_ok == (mode != "writeinput")
        assert (got.view(np.uint8) == 0xA5).all() == (mode in ("unwritten", "error"))
        if mode == "fork":
            os.killpg(srv.proc.pid, signal.SIGKILL)  # the harness kills the group; so do we


@pytest.mark.parametrize("mode, check", [
    ("die", lambda srv: srv.wait()[0] == 7),
    ("biglen", lambda srv: struct.unpack("<I", srv._read(4, 10))[0] == 0xFFFFFFFF),
    ("badjson", lambda srv: srv._read(13, 10)[4:] == b"{not json"),
])
def test_broken_modes(mode, check):
    with start(mode) as srv:
        srv.recv()
        send(srv, topk_layout(srv))
        assert check(srv)
        if srv.proc.poll() is None:
            srv.proc.kill()


def test_badproto_hello():
    with start("badproto") as srv:
        assert srv.recv()["protocol"] == 2
