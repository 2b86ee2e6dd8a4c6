"""The serve protocol, version 1 (docs/python.md, "The serve protocol,
version 1"): framing and the checks on each request.

A message is a 4-byte little-endian unsigned length N, 1 <= N <= 1 MiB,
then N bytes of one UTF-8 JSON object. Nothing the other side sends is
trusted for a size: a length is checked before anything is allocated, and
every tensor reference is checked against the shared memory's size.
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from .dtypes import DTYPES, itemsize

__all__ = [
    "PROTOCOL",
    "MAX_MESSAGE",
    "FrameError",
    "RequestError",
    "TensorRef",
    "Request",
    "read_message",
    "write_message",
    "encode_message",
    "parse_request",
]

#: The protocol version this package speaks.
PROTOCOL = 1
#: Largest message body, bytes.
MAX_MESSAGE = 1 << 20
#: Most tensors one request may name (inputs and outputs each).
MAX_TENSORS = 256
#: Most dimensions of one tensor.
MAX_RANK = 16
#: Longest tensor or kernel name.
MAX_NAME = 256


class FrameError(Exception):
    """The byte stream is not protocol framing: a bad length, truncation,
    invalid UTF-8 or JSON, or a JSON value that is not an object. The
    stream cannot be resynchronised after it."""


class RequestError(Exception):
    """A well-framed request that breaks a rule; `seq` is its sequence
    number when that much could be read (an error reply is possible),
    otherwise None."""

    def __init__(self, msg: str, seq: Optional[int] = None) -> None:
        super().__init__(msg)
        self.seq = seq


def _read_exact(fd: int, n: int, what: str, eof_ok: bool = False) -> Optional[bytes]:
    chunks: List[bytes] = []
    got = 0
    while got < n:
        b = os.read(fd, min(n - got, 1 << 20))
        if not b:
            if got == 0 and eof_ok:
                return None
            raise FrameError(f"end of file after {got} of the {n} bytes of {what}")
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def read_message(fd: int) -> Optional[Dict[str, Any]]:
    """Read one message from `fd`; None at end of file before a message.

    Raises
    ------
    FrameError
        A length of 0 or over :data:`MAX_MESSAGE` (nothing more is read),
        end of file inside a message, invalid UTF-8 or JSON, or a JSON value
        that is not an object.
    """
    head = _read_exact(fd, 4, "a message length", eof_ok=True)
    if head is None:
        return None
    (n,) = struct.unpack("<I", head)
    if n < 1 or n > MAX_MESSAGE:
        raise FrameError(f"message length {n} is outside [1, {MAX_MESSAGE}]")
    body = _read_exact(fd, n, "a message")
    assert body is not None
    try:
        msg = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise FrameError(f"message is not UTF-8 JSON: {e}") from None
    if not isinstance(msg, dict):
        raise FrameError(f"message is a JSON {type(msg).__name__}, not an object")
    return msg


def encode_message(obj: Dict[str, Any]) -> bytes:
    """Frame `obj` as length + compact UTF-8 JSON (ValueError if > 1 MiB)."""
    body = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    if not 1 <= len(body) <= MAX_MESSAGE:
        raise ValueError(f"message of {len(body)} bytes is outside [1, {MAX_MESSAGE}]")
    return struct.pack("<I", len(body)) + body


def write_message(fd: int, obj: Dict[str, Any]) -> None:
    """Write one framed message to `fd` (all of it; OSError if the pipe broke)."""
    data = memoryview(encode_message(obj))
    while data:
        n = os.write(fd, data)
        data = data[n:]


@dataclass(frozen=True)
class TensorRef:
    """One tensor of a request, checked.

    Attributes
    ----------
    name, dtype : str
        Contract name, safetensors dtype.
    shape : tuple of int
        Dimensions, each >= 0.
    offset, nbytes : int
        The tensor occupies ``[offset, offset + nbytes)`` of the shared memory.
    guard : int
        Outputs only: guard bytes each side; the whole buffer is
        ``[offset - guard, offset + nbytes + guard)``.
    """

    name: str
    dtype: str
    shape: Tuple[int, ...]
    offset: int
    nbytes: int
    guard: int = 0


@dataclass(frozen=True)
class Request:
    """A checked ``run`` request.

    Attributes
    ----------
    seq : int
        Sequence number (>= 1), echoed in the reply.
    kernel, case : str
        Contract name and case id.
    params : dict
        The case's params.
    shm_size : int
        Size of the shared memory for this request, bytes.
    inputs, outputs : tuple of TensorRef
    """

    seq: int
    kernel: str
    case: str
    params: Dict[str, Any]
    shm_size: int
    inputs: Tuple[TensorRef, ...]
    outputs: Tuple[TensorRef, ...]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _tensor(v: Any, where: str, shm_size: int, output: bool) -> TensorRef:
    if not isinstance(v, dict):
        raise ValueError(f"{where}: must be an object")
    name = v.get("name")
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_NAME:
        raise ValueError(f"{where}: name must be a string of 1 to {MAX_NAME} characters")
    where = f"{where} ({name})"
    dtype = v.get("dtype")
    if dtype not in DTYPES:
        raise ValueError(f"{where}: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    shape = v.get("shape")
    if not isinstance(shape, list) or len(shape) > MAX_RANK or not all(_is_int(d) and d >= 0 for d in shape):
        raise ValueError(f"{where}: shape must be a list of at most {MAX_RANK} integers >= 0, got {shape!r}")
    offset, nbytes = v.get("offset"), v.get("nbytes")
    if not _is_int(offset) or offset < 0:
        raise ValueError(f"{where}: offset must be an integer >= 0, got {offset!r}")
    size = itemsize(dtype)
    want = math.prod(shape) * size
    if not _is_int(nbytes) or nbytes != want:
        raise ValueError(f"{where}: nbytes {nbytes!r} must be {want} ({dtype}{shape})")
    if offset % size:
        raise ValueError(f"{where}: offset {offset} is not a multiple of the {dtype} element size {size}")
    guard = 0
    if output:
        guard = v.get("guard", 0)
        if not _is_int(guard) or guard < 0:
            raise ValueError(f"{where}: guard must be an integer >= 0, got {guard!r}")
        if guard > offset:
            raise ValueError(f"{where}: guard {guard} reaches before the shared memory (offset {offset})")
    if offset + nbytes + guard > shm_size:
        raise ValueError(
            f"{where}: [{offset - guard}, {offset + nbytes + guard}) lies past shm_size {shm_size}"
        )
    return TensorRef(name, dtype, tuple(shape), offset, nbytes, guard)


def parse_request(msg: Dict[str, Any], shm_limit: int) -> Request:
    """Check a decoded request message.

    Parameters
    ----------
    msg : dict
        The message.
    shm_limit : int
        The shared memory's real size (fstat of fd 5): ``shm_size`` may not
        exceed it (mapping past the end of a memfd would fault on access).

    Raises
    ------
    RequestError
        The broken rule; ``seq`` set when the message has a valid ``seq``.
    """
    seq = msg.get("seq")
    good_seq = seq if _is_int(seq) and seq >= 1 else None
    try:
        if msg.get("type") != "run":
            raise ValueError(f"type {msg.get('type')!r}: the program accepts only \"run\" requests")
        if good_seq is None:
            raise ValueError(f"seq must be an integer >= 1, got {seq!r}")
        kernel = msg.get("kernel")
        if not isinstance(kernel, str) or not 1 <= len(kernel) <= MAX_NAME:
            raise ValueError(f"kernel must be a non-empty string, got {kernel!r}")
        case = msg.get("case", "")
        if not isinstance(case, str):
            raise ValueError(f"case must be a string, got {case!r}")
        params = msg.get("params", {})
        if not isinstance(params, dict):
            raise ValueError(f"params must be an object, got {type(params).__name__}")
        shm_size = msg.get("shm_size")
        if not _is_int(shm_size) or shm_size < 0:
            raise ValueError(f"shm_size must be an integer >= 0, got {shm_size!r}")
        if shm_size > shm_limit:
            raise ValueError(f"shm_size {shm_size} exceeds the size of fd 5 ({shm_limit} bytes)")
        refs = []
        for key in ("inputs", "outputs"):
            lst = msg.get(key)
            if not isinstance(lst, list) or len(lst) > MAX_TENSORS:
                raise ValueError(f"{key} must be a list of at most {MAX_TENSORS} tensors")
            got = tuple(_tensor(v, f"{key}[{i}]", shm_size, key == "outputs") for i, v in enumerate(lst))
            names = [t.name for t in got]
            dup = {n for n in names if names.count(n) > 1}
            if dup:
                raise ValueError(f"{key}: tensor name {sorted(dup)[0]!r} appears twice")
            refs.append(got)
    except ValueError as e:
        raise RequestError(f"bad request: {e}", good_seq) from None
    return Request(good_seq, kernel, case, params, shm_size, refs[0], refs[1])
