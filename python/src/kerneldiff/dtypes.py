"""Tensor dtypes: safetensors names, NumPy dtypes, torch dtypes.

kerneldiff names dtypes as safetensors does (``F32``, ``I32``, ``I64``,
``U8``, ``BF16``, ...). NumPy has no bfloat16: a ``BF16`` tensor is handed
to NumPy code as ``np.uint16`` bit patterns (see
:func:`kerneldiff.numerics.bf16_to_f32`), and to torch code as
``torch.bfloat16``.
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

__all__ = ["DTYPES", "numpy_dtype", "itemsize", "name_of_numpy", "torch_dtype", "name_of_torch"]

#: safetensors dtype name -> NumPy dtype of the array kerneldiff hands out.
DTYPES: Dict[str, np.dtype] = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),  # bit patterns: NumPy has no bfloat16
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"),
    "U32": np.dtype("<u4"),
    "U16": np.dtype("<u2"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}

# Names safetensors' TensorSpec takes for each dtype.
SPEC_NAMES: Dict[str, str] = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U64": "uint64",
    "U32": "uint32",
    "U16": "uint16",
    "U8": "uint8",
    "BOOL": "bool",
}


def numpy_dtype(name: str) -> np.dtype:
    """Return the NumPy dtype kerneldiff uses for safetensors dtype `name`.

    Raises
    ------
    ValueError
        For a name not in :data:`DTYPES`.
    """
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r} (known: {', '.join(DTYPES)})") from None


def itemsize(name: str) -> int:
    """Bytes per element of safetensors dtype `name` (ValueError if unknown)."""
    return numpy_dtype(name).itemsize


def name_of_numpy(dt: Any) -> str:
    """Return the safetensors name of a NumPy dtype; ``uint16`` is ``U16``.

    A NumPy array cannot say it holds bfloat16 bits: callers that know a
    tensor is BF16 (from the contract, or a ``dtypes=`` override) say so.

    Raises
    ------
    ValueError
        For a dtype with no safetensors name (object, complex, big-endian
        multi-byte types are converted by the caller first).
    """
    d = np.dtype(dt)
    for name, nd in DTYPES.items():
        if name != "BF16" and d == nd:
            return name
    if d.byteorder == ">":
        return name_of_numpy(d.newbyteorder("<"))
    raise ValueError(f"dtype {d} has no safetensors name (known: {', '.join(DTYPES)})")


def torch_dtype(name: str) -> Any:
    """Return the torch dtype for safetensors dtype `name` (imports torch)."""
    import torch

    table = {
        "F64": torch.float64,
        "F32": torch.float32,
        "F16": torch.float16,
        "BF16": torch.bfloat16,
        "I64": torch.int64,
        "I32": torch.int32,
        "I16": torch.int16,
        "I8": torch.int8,
        "U8": torch.uint8,
        "BOOL": torch.bool,
    }
    for name_, attr in (("U16", "uint16"), ("U32", "uint32"), ("U64", "uint64")):
        if hasattr(torch, attr):
            table[name_] = getattr(torch, attr)
    try:
        return table[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} has no torch dtype here") from None


def name_of_torch(dt: Any) -> str:
    """Return the safetensors name of a torch dtype (imports torch)."""
    for name in DTYPES:
        try:
            if torch_dtype(name) == dt:
                return name
        except ValueError:
            continue
    raise ValueError(f"torch dtype {dt} has no safetensors name")
