"""safetensors files with BF16 and string metadata, through NumPy.

``safetensors.numpy`` cannot load or save BF16 (NumPy has no bfloat16), so
this module goes through safetensors' dtype-agnostic ``serialize_file`` and
``deserialize`` and hands BF16 tensors out as ``np.uint16`` bit patterns.
Files are the format of exec's ``in.safetensors``/``out.safetensors`` and of
kerneldiff capture files (docs/interfaces.md, "The exec protocol").
"""

from __future__ import annotations

import json
import os
import stat
import struct
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

import numpy as np
import safetensors

from .dtypes import DTYPES, SPEC_NAMES, numpy_dtype

__all__ = ["Tensor", "read_file", "write_file", "MAX_HEADER", "MAX_FILE"]

#: Largest safetensors header accepted on reading (bytes), as a bound.
MAX_HEADER = 100 << 20
#: Bound on a whole file read_file reads (bytes): a larger one is refused
#: from its size, before anything is read.
MAX_FILE = 32 << 30


@dataclass
class Tensor:
    """One named tensor: safetensors dtype name and a NumPy array.

    Attributes
    ----------
    dtype : str
        safetensors dtype name (``F32``, ``BF16``, ...).
    array : np.ndarray
        The data, with NumPy dtype :func:`kerneldiff.dtypes.numpy_dtype` of
        `dtype` (``np.uint16`` bits for ``BF16``) and the tensor's shape.
    """

    dtype: str
    array: np.ndarray


def _read_bounded(path: "os.PathLike[str] | str", limit: int) -> bytes:
    """The whole regular file at path, at most limit bytes (ValueError
    otherwise); a special file is refused by its type before it is read."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{path}: not a regular file ({_kind(st.st_mode)}): a capture is a .safetensors file")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path}: not a regular file ({_kind(st.st_mode)})")
        if st.st_size > limit:
            raise ValueError(f"{path}: {st.st_size} bytes, above the limit of {limit} bytes (MAX_FILE)")
        want = st.st_size
        data = f.read(want + 1)  # never more than its size (≤ limit) and one byte
    if len(data) > want:
        raise ValueError(f"{path}: grew past its {want} bytes while it was read")
    return data


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_file(path: "os.PathLike[str] | str") -> Tuple[Dict[str, Tensor], Dict[str, str]]:
    """Read a safetensors file into writable NumPy arrays and its metadata.

    Parameters
    ----------
    path : path-like
        The file.

    Returns
    -------
    tensors : dict of str to Tensor
        Every tensor by name, each a fresh writable array (a copy of the
        file's bytes, so filling it in place does not touch the file).
    metadata : dict of str to str
        ``__metadata__`` (empty if absent).

    Raises
    ------
    ValueError
        A malformed file (header length past the file or over
        :data:`MAX_HEADER`, bad JSON, offsets that do not match dtype and
        shape, an unknown dtype), naming the file and the tensor; a path
        that is not a regular file (a FIFO, a device such as /dev/zero, a
        folder: refused by its type, never opened in a way that blocks);
        a file over :data:`MAX_FILE` bytes.
    OSError
        The file cannot be read.
    """
    data = _read_bounded(path, MAX_FILE)
    if len(data) < 8:
        raise ValueError(f"{path}: not a safetensors file ({len(data)} bytes, need an 8-byte header length)")
    (n,) = struct.unpack_from("<Q", data, 0)
    if n > MAX_HEADER or 8 + n > len(data):
        raise ValueError(f"{path}: header length {n} exceeds the file ({len(data)} bytes) or {MAX_HEADER}")
    try:
        header = json.loads(data[8 : 8 + n])
    except ValueError as e:
        raise ValueError(f"{path}: header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header is not a JSON object")
    meta = header.get("__metadata__") or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise ValueError(f"{path}: __metadata__ must map names to strings")
    try:
        entries = safetensors.deserialize(data)
    except Exception as e:  # safetensors raises its own SafetensorError
        raise ValueError(f"{path}: {e}") from None
    tensors: Dict[str, Tensor] = {}
    for name, info in entries:
        dt = info["dtype"]
        if dt not in DTYPES:
            raise ValueError(f"{path}: tensor {name!r}: dtype {dt} is not one kerneldiff handles ({', '.join(DTYPES)})")
        shape = tuple(int(s) for s in info["shape"])
        try:
            arr = np.frombuffer(info["data"], dtype=numpy_dtype(dt)).reshape(shape).copy()
        except ValueError as e:
            raise ValueError(f"{path}: tensor {name!r}: {len(info['data'])} bytes of {dt} do not make shape {list(shape)}: {e}") from None
        tensors[name] = Tensor(dt, arr)
    return tensors, dict(meta)


def write_file(
    path: "os.PathLike[str] | str",
    tensors: Mapping[str, Tensor],
    metadata: Optional[Mapping[str, str]] = None,
) -> None:
    """Write tensors and string metadata as one safetensors file.

    The file is written to a temporary name beside `path` and renamed into
    place, so a reader never sees half a file.

    Parameters
    ----------
    path : path-like
        Destination (created or replaced).
    tensors : mapping of str to Tensor
        Each array must have the NumPy dtype of its safetensors dtype
        (``np.uint16`` for ``BF16``); non-contiguous arrays are copied.
    metadata : mapping of str to str, optional
        ``__metadata__``; every value must be a string.

    Raises
    ------
    ValueError
        A tensor whose array dtype does not match its dtype name, an empty
        or reserved name, or a non-string metadata value.
    """
    keep = []
    specs = {}
    for name, t in tensors.items():
        if not name or name == "__metadata__":
            raise ValueError(f"tensor name {name!r} is empty or reserved")
        want = numpy_dtype(t.dtype)
        arr = np.ascontiguousarray(t.array)
        if arr.dtype != want:
            raise ValueError(f"tensor {name!r}: array dtype {arr.dtype} does not hold {t.dtype} (want {want})")
        keep.append(arr)
        specs[name] = safetensors.TensorSpec(
            dtype=SPEC_NAMES[t.dtype], shape=list(arr.shape), data_ptr=arr.ctypes.data, data_len=arr.nbytes
        )
    meta = None
    if metadata:
        meta = {}
        for k, v in metadata.items():
            if not isinstance(v, str):
                raise ValueError(f"metadata {k!r} must be a string, got {type(v).__name__}")
            meta[k] = v
    path = os.fspath(path)
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        safetensors.serialize_file(specs, tmp, metadata=meta)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    del keep
