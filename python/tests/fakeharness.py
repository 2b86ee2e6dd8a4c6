"""A pure-Python stand-in for the Go harness side of serve protocol 1.

It starts ``python -m kerneldiff serve TARGET`` with fd 3 (requests), fd 4
(replies) and fd 5 (a memfd) as docs/python.md describes, writes tensors into the
shared memory, sends requests and reads replies with time-outs.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import select
import struct
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

PAGE = 4096
DTYPES = {"F32": np.float32, "I32": np.int32, "I64": np.int64, "U8": np.uint8, "BF16": np.uint16}

# Runs in the child before exec: moves the three descriptors to 3, 4, 5
# (through high numbers first, so no dup2 overwrites a descriptor still
# needed), closes the originals, then execs the real command.
_LAUNCH = r"""
import fcntl, os, sys
src = [int(a) for a in sys.argv[1:4]]
high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in src]
for fd in src:
    if fd not in high:
        os.close(fd)
for want, fd in zip((3, 4, 5), high):
    os.dup2(fd, want)
    os.close(fd)
os.execv(sys.executable, [sys.executable] + sys.argv[4:])
"""


def frame(obj: Any) -> bytes:
    body = json.dumps(obj).encode()
    return struct.pack("<I", len(body)) + body


class Server:
    """One served program; use as a context manager."""

    def __init__(self, args: Sequence[str], shm_size: int = 1 << 20, env: Optional[Dict[str, str]] = None,
                 cwd: Optional[str] = None) -> None:
        self.req_r, self.req_w = os.pipe()
        self.rep_r, self.rep_w = os.pipe()
        self.memfd = os.memfd_create("kd-test-shm")
        os.ftruncate(self.memfd, shm_size)
        self.size = shm_size
        self.mm = mmap.mmap(self.memfd, shm_size)
        e = dict(os.environ)
        e["KD_SERVE_PROTOCOL"] = "1"
        if env:
            e.update(env)
        self.err = tempfile.TemporaryFile()  # a file, not a pipe: a chatty program never blocks
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCH, str(self.req_r), str(self.rep_w), str(self.memfd), *args],
            pass_fds=(self.req_r, self.rep_w, self.memfd),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.err,
            env=e,
            cwd=cwd,
            start_new_session=True,
        )
        os.close(self.req_r)
        os.close(self.rep_w)
        self.seq = 0

    # --- shared memory -------------------------------------------------
    def grow(self, size: int) -> None:
        os.ftruncate(self.memfd, size)
        self.mm.close()
        self.mm = mmap.mmap(self.memfd, size)
        self.size = size

    def put(self, offset: int, arr: np.ndarray) -> None:
        b = np.ascontiguousarray(arr).tobytes()
        self.mm[offset : offset + len(b)] = b

    def get(self, offset: int, nbytes: int) -> bytes:
        return bytes(self.mm[offset : offset + nbytes])

    # --- messages ------------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        os.write(self.req_w, data)

    def send(self, obj: Any) -> None:
        self.send_raw(frame(obj))

    def _read(self, n: int, timeout: float) -> bytes:
        out = b""
        deadline = time.monotonic() + timeout
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.rep_r], [], [], left)[0]:
                raise TimeoutError(f"no reply within {timeout}s (got {len(out)} of {n} bytes)")
            b = os.read(self.rep_r, n - len(out))
            if not b:
                raise EOFError(f"reply pipe closed after {len(out)} of {n} bytes")
            out += b
        return out

    def recv(self, timeout: float = 30.0) -> Dict[str, Any]:
        (n,) = struct.unpack("<I", self._read(4, timeout))
        assert 1 <= n <= 1 << 20, n
        return json.loads(self._read(n, timeout))

    def close_requests(self) -> None:
        if self.req_w >= 0:
            os.close(self.req_w)
            self.req_w = -1

    def wait(self, timeout: float = 10.0) -> Tuple[int, str]:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        return self.proc.returncode, self.stderr()

    def stderr(self) -> str:
        self.err.seek(0)
        return self.err.read().decode(errors="replace")

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close_requests()
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()
        os.close(self.rep_r)
        self.mm.close()
        os.close(self.memfd)


class Layout:
    """Places tensors at 4 KiB-aligned offsets; outputs get guard bands."""

    def __init__(self, guard: int = PAGE) -> None:
        self.at = PAGE
        self.guard = guard
        self.inputs: List[Dict[str, Any]] = []
        self.outputs: List[Dict[str, Any]] = []
        self.data: List[Tuple[int, np.ndarray]] = []

    def _place(self, nbytes: int, guard: int) -> int:
        off = self.at + guard
        off = (off + PAGE - 1) // PAGE * PAGE
        self.at = off + nbytes + guard
        return off

    def input(self, name: str, dtype: str, arr: np.ndarray) -> int:
        arr = np.ascontiguousarray(arr, dtype=DTYPES[dtype])
        off = self._place(arr.nbytes, 0)
        self.inputs.append({"name": name, "dtype": dtype, "shape": list(arr.shape), "offset": off, "nbytes": arr.nbytes})
        self.data.append((off, arr))
        return off

    def output(self, name: str, dtype: str, shape: Sequence[int], poison: int = 0xA5,
               content: Optional[np.ndarray] = None) -> int:
        nbytes = math.prod(shape) * np.dtype(DTYPES[dtype]).itemsize
        off = self._place(nbytes, self.guard)
        self.outputs.append({"name": name, "dtype": dtype, "shape": list(shape), "offset": off, "nbytes": nbytes,
                             "guard": self.guard})
        whole = np.full(nbytes + 2 * self.guard, poison, dtype=np.uint8)
        if content is not None:
            whole[self.guard : self.guard + nbytes] = np.ascontiguousarray(content).view(np.uint8).reshape(-1)
        self.data.append((off - self.guard, whole))
        return off

    @property
    def size(self) -> int:
        return (self.at + PAGE - 1) // PAGE * PAGE + PAGE

    def write(self, srv: Server) -> None:
        if self.size > srv.size:
            srv.grow(self.size)
        for off, arr in self.data:
            srv.put(off, arr)

    def request(self, srv: Server, kernel: str, params: Dict[str, Any], case: str = "test/case") -> Dict[str, Any]:
        srv.seq += 1
        return {"type": "run", "seq": srv.seq, "kernel": kernel, "case": case, "params": params,
                "shm_size": self.size,
                "inputs": self.inputs, "outputs": self.outputs}

    def read(self, srv: Server, name: str) -> np.ndarray:
        o = next(o for o in self.outputs if o["name"] == name)
        raw = srv.get(o["offset"], o["nbytes"])
        return np.frombuffer(raw, dtype=DTYPES[o["dtype"]]).reshape(o["shape"])

    def guards_intact(self, srv: Server, poison: int = 0xA5) -> bool:
        for o in self.outputs:
            g = o["guard"]
            before = srv.get(o["offset"] - g, g)
            after = srv.get(o["offset"] + o["nbytes"], g)
            if before != bytes([poison]) * g or after != bytes([poison]) * g:
                return False
        return True
