"""kerneldiff: serve, run and capture Python kernels for the kerneldiff harness.

Register a function for a kernel contract, and the Go harness
(``difftest run --impl 'serve:python -m kerneldiff serve FILE'``) calls it
on its seeded inputs and checks the outputs against the Go reference::

    import kerneldiff

    @kerneldiff.implements("topk_transform")
    def topk(scores, seq_lens, page_table, page_indices, raw_indices=None, *, K, P, **params):
        ...
        page_indices[...] = picks          # outputs are filled in place

Public names:

- :func:`implements` registers; :mod:`kerneldiff.registry` documents the
  calling convention (tensors and params as keywords, outputs filled in
  place, return None).
- :func:`serve` runs the serve protocol's loop; ``python -m kerneldiff serve
  FILE`` and ``python -m kerneldiff exec FILE IN OUT`` are the CLI.
- :func:`capture` writes a capture file from live tensors; :func:`record`
  wraps an op so its real calls are captured; :class:`arg` names an op
  argument as a params value.
- :mod:`kerneldiff.pytest_plugin`: the pytest plugin (entry point
  ``pytest11``): a test taking the ``kerneldiff_case`` fixture becomes one
  pytest item per case of a suite.
- :mod:`kerneldiff.numerics`: bf16, e4m3fn, e2m1 (FP4) and ue8m0
  encoders/decoders, key32.

Dependencies: numpy and safetensors; torch is used when a function is
registered with ``tensors="torch"`` or torch tensors are captured, never
imported otherwise.
"""

__version__ = "0.1.0"

from .capture import CaptureError, arg, capture, record  # noqa: E402
from .numerics import bf16_from_f32, bf16_to_f32, e4m3fn_from_f32, e4m3fn_to_f32, key32  # noqa: E402
from .registry import ContractError, Unsupported, implements  # noqa: E402
from .server import ServeError, serve  # noqa: E402

__all__ = [
    "__version__",
    "implements",
    "serve",
    "capture",
    "record",
    "arg",
    "ContractError",
    "Unsupported",
    "CaptureError",
    "ServeError",
    "bf16_from_f32",
    "bf16_to_f32",
    "e4m3fn_from_f32",
    "e4m3fn_to_f32",
    "key32",
]
