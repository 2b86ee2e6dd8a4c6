"""What this package knows of each kernel contract: tensor names, dtypes,
output shapes, params keys.

The serve protocol carries every tensor's name, dtype and shape in the
request, so ``serve`` needs none of this. ``exec`` mode (which must make the
outputs itself) and ``capture``/``record`` (which check a capture before
``difftest replay`` would reject it) use it. A kernel not listed here can
still be served; for exec mode give ``implements(..., outputs=...)``.

The tables follow docs/interfaces.md ("The exec protocol") and the Go
contracts (kernels/topk/params.go, kernels/normrope/params.go): the Go side
rejects unknown params keys, so captures are checked the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

__all__ = ["OutputSpec", "Contract", "CONTRACTS", "lookup", "output_specs"]


@dataclass(frozen=True)
class OutputSpec:
    """One output of a case.

    Attributes
    ----------
    name : str
        Contract name, e.g. ``page_indices``.
    dtype : str
        safetensors dtype name.
    shape : tuple of int
        Exact shape.
    inout : bool
        The output starts from an input of the same name (the paged
        ``cache``: it arrives holding its canary bytes and is written only
        where the contract writes).
    """

    name: str
    dtype: str
    shape: Tuple[int, ...]
    inout: bool = False

    @property
    def nbytes(self) -> int:
        from .dtypes import itemsize

        return math.prod(self.shape) * itemsize(self.dtype)


@dataclass(frozen=True)
class Contract:
    """A kernel contract as this package needs it.

    Attributes
    ----------
    name : str
        Contract name (``topk_transform``).
    inputs : tuple of (str, str)
        Input tensor names and dtypes, in contract order.
    outputs : callable
        ``outputs(params, shapes)`` -> list of OutputSpec, from the params
        dict and the input shapes by name.
    required_params, optional_params : tuple of str
        params keys the Go side requires / also accepts.
    """

    name: str
    inputs: Tuple[Tuple[str, str], ...]
    outputs: Callable[[Mapping[str, Any], Mapping[str, Tuple[int, ...]]], List[OutputSpec]]
    required_params: Tuple[str, ...] = ()
    optional_params: Tuple[str, ...] = ()
    inout: Tuple[str, ...] = field(default=())

    def input_dtype(self, name: str) -> Optional[str]:
        """The contract dtype of input or in/out tensor `name`, or None."""
        for n, d in self.inputs:
            if n == name:
                return d
        return None


def _int_param(params: Mapping[str, Any], key: str) -> int:
    v = params.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"params {key!r} must be an integer, got {v!r}")
    return v


def _topk_outputs(params: Mapping[str, Any], shapes: Mapping[str, Tuple[int, ...]]) -> List[OutputSpec]:
    k = _int_param(params, "K")
    scores = shapes.get("scores")
    if scores is None or len(scores) != 2:
        raise ValueError(f"scores must be F32 [B, stride], got shape {scores}")
    b = scores[0]
    outs = [OutputSpec("page_indices", "I32", (b, k))]
    if params.get("return_raw"):
        outs.append(OutputSpec("raw_indices", "I32", (b, k)))
    return outs


def _normrope_outputs(params: Mapping[str, Any], shapes: Mapping[str, Tuple[int, ...]]) -> List[OutputSpec]:
    cache = shapes.get("cache")
    if cache is None:
        raise ValueError("norm_rope_store: the in/out tensor 'cache' is missing from the inputs")
    return [OutputSpec("cache", "U8", tuple(cache), inout=True)]


TOPK = Contract(
    name="topk_transform",
    inputs=(("scores", "F32"), ("seq_lens", "I32"), ("page_table", "I32")),
    outputs=_topk_outputs,
    required_params=("K", "P"),
    optional_params=("return_raw", "batch", "stride", "max_pages", "family", "pages", "needles"),
)

NORMROPE = Contract(
    name="norm_rope_store",
    inputs=(
        ("x", "BF16"),
        ("weight", "F32"),
        ("bias", "F32"),
        ("freqs", "F32"),
        ("positions", "I64"),
        ("out_loc", "I64"),
        ("cache", "U8"),
    ),
    outputs=_normrope_outputs,
    required_params=("norm", "rope_offset", "rope_style", "store", "scale_fmt", "page_size", "num_pages", "eps"),
    # model names the YaRN table of the freqs input: a capture of a live
    # call need not know it (the freqs tensor is the table).
    optional_params=("hadamard", "preset", "model"),
    inout=("cache",),
)

#: Contracts by name.
CONTRACTS: Dict[str, Contract] = {c.name: c for c in (TOPK, NORMROPE)}


def lookup(name: str) -> Optional[Contract]:
    """The Contract named `name`, or None for a kernel this package does not know."""
    return CONTRACTS.get(name)


def output_specs(
    kernel: str,
    params: Mapping[str, Any],
    shapes: Mapping[str, Sequence[int]],
    custom: Optional[Callable[..., Any]] = None,
) -> List[OutputSpec]:
    """The outputs of one case of `kernel`.

    Parameters
    ----------
    kernel : str
        Contract name.
    params : mapping
        The case's params.
    shapes : mapping of str to sequence of int
        Input shapes by name (in/out tensors included).
    custom : callable, optional
        ``custom(params, shapes)`` returning a mapping name -> (dtype,
        shape) or a list of OutputSpec, for kernels not in :data:`CONTRACTS`
        (``implements(..., outputs=custom)``).

    Raises
    ------
    ValueError
        An unknown kernel without `custom`, or params/shapes that do not
        give the outputs (naming the key or tensor).
    """
    sh = {k: tuple(int(d) for d in v) for k, v in shapes.items()}
    if custom is not None:
        got = custom(params, sh)
        if isinstance(got, Mapping):
            return [
                OutputSpec(n, d, tuple(s), inout=n in sh) for n, (d, s) in got.items()
            ]
        return list(got)
    c = lookup(kernel)
    if c is None:
        raise ValueError(
            f"exec mode does not know the outputs of kernel {kernel!r} (known: {', '.join(CONTRACTS)}); "
            "register it with implements(name, outputs=lambda params, shapes: {name: (dtype, shape)})"
        )
    return c.outputs(params, sh)
