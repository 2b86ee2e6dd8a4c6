"""Hostile inputs to the safetensors reader (kerneldiff.stfile.read_file),
which exec mode, capture and replay read through: special files are
refused by their type without blocking, sizes are bounded before anything
is read, and every malformed file is a ValueError naming the file (and the
tensor, where one is at fault), never a hang or a crash."""

from __future__ import annotations

import json
import os
import struct
import threading

import numpy as np
import pytest

from kerneldiff import stfile
from kerneldiff.stfile import Tensor, read_file, write_file


def _call_within(fn, seconds=10.0):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - reported to the test
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still blocked after {seconds} s"
    return out


def test_special_files_refused_by_type(tmp_path):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    for path, kind in [(fifo, "a FIFO"), ("/dev/zero", "a character device"), (tmp_path, "a folder")]:
        out = _call_within(lambda p=path: read_file(p))
        err = out.get("error")
        assert isinstance(err, ValueError), out
        assert f"not a regular file ({kind})" in str(err)


def test_size_bounded_before_reading(tmp_path, monkeypatch):
    big = tmp_path / "sparse.safetensors"
    with open(big, "wb") as f:
        f.truncate(6 << 30)
    monkeypatch.setattr(stfile, "MAX_FILE", 1 << 20)
    with pytest.raises(ValueError, match=r"6442450944 bytes, above the limit of 1048576 bytes"):
        read_file(big)


def _raw(header: dict, body: bytes) -> bytes:
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + body


@pytest.mark.parametrize(
    "data, want",
    [
        (b"", "need an 8-byte header length"),
        (struct.pack("<Q", 1 << 62) + b"{}", "header length 4611686018427387904 exceeds the file"),
        (struct.pack("<Q", 2) + b"[]", "header is not a JSON object"),
        (struct.pack("<Q", 3) + b"{\x00}", "header is not JSON"),
        (_raw({"__metadata__": {"kernel": 5}}, b""), "__metadata__ must map names to strings"),
        (_raw({"x": {"dtype": "I32", "shape": [4294967296, 4294967296], "data_offsets": [0, 16]}}, b"\0" * 16), ""),
        (_raw({"x": {"dtype": "I32", "shape": [4], "data_offsets": [0, 1 << 40]}}, b"\0" * 16), ""),
        (_raw({"x": {"dtype": "Q99", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 16), ""),
    ],
)
def test_malformed_files_are_value_errors(tmp_path, data, want):
    p = tmp_path / "bad.safetensors"
    p.write_bytes(data)
    with pytest.raises(ValueError) as ei:
        read_file(p)
    assert str(p) in str(ei.value)
    assert want in str(ei.value)


def test_round_trip_still_reads(tmp_path):
    p = tmp_path / "ok.safetensors"
    write_file(p, {"x": Tensor("I32", np.arange(4, dtype=np.int32))}, {"kernel": "topk_transform"})
    got, meta = read_file(p)
    assert got["x"].array.tolist() == [0, 1, 2, 3]
    assert meta == {"kernel": "topk_transform"}
