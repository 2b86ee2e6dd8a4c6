"""One case the exec way: ``python -m kerneldiff exec FILE IN OUT``.

Reads ``IN`` (every input under its contract name, in/out tensors such as
``cache`` with their prior content, ``__metadata__`` kernel, case, params as
a JSON string and outputs, the case's output specs as the harness states
them), calls the same registered function the serve loop calls,
and writes ``OUT`` with every output under its contract name with the exact
dtype and shape (docs/interfaces.md, "The exec protocol"), and
``__metadata__`` ``version`` and ``device``: this package's version line
(:func:`kerneldiff.server.version_string`: python, numpy, torch and CUDA
versions) and where the function ran, which the harness shows in the
report's header as it shows a serve program's hello.

Outputs that are not in/out start filled with the run's poison byte
(``__metadata__["poison"]``; 0xA5, the harness's poison A, when the
request does not say) inside 4 KiB guard bands of the same byte, so an
output the function never writes reaches the harness as unwritten; after the
call the guards and the inputs are checked, so a write outside an output or
into an input fails the run here with the tensor named, as the serve
protocol's guard and input checks would.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import registry
from .contracts import OutputSpec, lookup, output_specs
from .device import DeviceError, Runner, Slot, unwritten_hint, unwritten_outputs
from .dtypes import numpy_dtype
from .registry import ContractError, Unsupported
from .server import MAX_FREE_TEXT, _clip, version_string
from .stfile import Tensor, read_file, write_file

__all__ = ["run_exec", "ExecError", "POISON", "GUARD"]

#: Byte that fills fresh outputs and guard bands when the request names
#: no poison (an older harness).
POISON = 0xA5
#: Guard band bytes on each side of an output.
GUARD = 4096

#: out.safetensors metadata key of the program's note on its run (an
#: output left unwritten): the harness shows it as a warning of the case.
NOTE = "note"

#: Exit status of a case whose kernel this program does not implement: the
#: harness records it as not tested (skipped), as serve does for a kernel
#: the hello did not list (difftest's ExecNotImplemented).
NOT_IMPLEMENTED = 125


class ExecError(Exception):
    """A bad input file or a case this program cannot run (exit status 2),
    or an implementation that broke a rule (exit status 1)."""

    def __init__(self, msg: str, code: int = 2) -> None:
        super().__init__(msg)
        self.code = code


def _guarded(dtype: str, shape: Tuple[int, ...], fill: Optional[np.ndarray], poison: int) -> Slot:
    dt = numpy_dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    buf = np.full(nbytes + 2 * GUARD, poison, dtype=np.uint8)
    view = buf[GUARD : GUARD + nbytes].view(dt).reshape(shape)
    if fill is not None:
        view[...] = fill
    return Slot("", dtype, view, buffer=buf, guard=GUARD)


def _first_diff(a: np.ndarray, b: np.ndarray) -> int:
    d = np.flatnonzero(a.reshape(-1).view(np.uint8) != b.reshape(-1).view(np.uint8))
    return int(d[0]) if d.size else -1


def _stated_outputs(text: Optional[str]) -> Optional[List[OutputSpec]]:
    """The output specs the harness states in ``__metadata__["outputs"]``
    (a JSON list of {name, dtype, shape, inout}), or None when it states
    none (an older harness: the package's own table is used)."""
    if text is None:
        return None
    got = json.loads(text)
    if not isinstance(got, list):
        raise ValueError('__metadata__["outputs"] must be a JSON list')
    specs = []
    for o in got:
        shape = tuple(int(d) for d in o["shape"])
        if any(d < 0 for d in shape):
            raise ValueError(f"output {o['name']!r}: negative dimension in {list(shape)}")
        specs.append(OutputSpec(str(o["name"]), str(o["dtype"]), shape, inout=bool(o.get("inout", False))))
    return specs


def run_exec(in_path: str, out_path: str, device: Optional[str] = None) -> Dict[str, Any]:
    """Run one exec-protocol case with the registered implementation.

    Parameters
    ----------
    in_path, out_path : str
        ``in.safetensors`` to read, ``out.safetensors`` to write.
    device : str, optional
        For torch implementations: ``cpu``, ``cuda``, ``cuda:N`` (default
        ``KD_DEVICE``, else ``cpu``).

    Returns
    -------
    dict
        ``{"kernel", "case", "kernel_time_ns"}``, for the caller to print.

    Raises
    ------
    ExecError
        Code 2: unreadable file, missing metadata, params that are not a
        JSON object, a kernel nobody registered, outputs this package cannot
        derive. Code 1: the function wrote outside an output (a guard byte
        changed) or wrote an input.
    ContractError
        The function broke the calling convention.
    Exception
        Whatever the function raised.
    """
    try:
        tensors, meta = read_file(in_path)
    except (OSError, ValueError) as e:
        raise ExecError(f"exec: cannot read {in_path}: {e}") from None
    kernel = meta.get("kernel")
    if not kernel:
        raise ExecError(f'exec: {in_path}: __metadata__["kernel"] is missing')
    try:
        params = json.loads(meta.get("params", "{}"))
    except ValueError as e:
        raise ExecError(f'exec: {in_path}: __metadata__["params"] is not JSON: {e}') from None
    if not isinstance(params, dict):
        raise ExecError(f'exec: {in_path}: __metadata__["params"] must be a JSON object')
    impl = registry.get(kernel)
    if impl is None:
        raise ExecError(f"exec: kernel {kernel!r} is not implemented here (registered: {', '.join(registry.kernels()) or 'none'}): "
                        "not tested", code=NOT_IMPLEMENTED)
    shapes = {n: t.array.shape for n, t in tensors.items()}
    try:
        specs = _stated_outputs(meta.get("outputs"))
        if specs is None:
            specs = output_specs(kernel, params, shapes, impl.outputs)
    except (ValueError, KeyError, TypeError) as e:
        raise ExecError(f"exec: {kernel}: cannot derive the outputs: {e}") from None
    try:
        poison = int(meta.get("poison", POISON))
        if not 0 <= poison <= 255:
            raise ValueError(f"{poison} is not a byte")
    except ValueError as e:
        raise ExecError(f'exec: {in_path}: __metadata__["poison"]: {e}') from None
    contract = lookup(kernel)
    inputs: Dict[str, Slot] = {}
    saved: Dict[str, np.ndarray] = {}
    out_names = {s.name for s in specs}
    for n, t in tensors.items():
        if n in out_names:
            continue
        allowed = contract.input_dtypes(n) if contract is not None else ()
        if allowed and t.dtype not in allowed:
            raise ExecError(f"exec: {in_path}: tensor {n!r} is {t.dtype}, the contract says {' or '.join(allowed)}")
        inputs[n] = Slot(n, t.dtype, t.array)
        saved[n] = t.array.copy()
    outputs: Dict[str, Slot] = {}
    for s in specs:
        prior = None
        if s.inout:
            t = tensors.get(s.name)
            if t is None or t.dtype != s.dtype or tuple(t.array.shape) != s.shape:
                raise ExecError(f"exec: {in_path}: in/out tensor {s.name!r} must arrive as {s.dtype}{list(s.shape)}")
            prior = t.array
        slot = _guarded(s.dtype, s.shape, prior, poison)
        slot.name = s.name
        outputs[s.name] = slot
    runner = Runner(device, need_torch=impl.tensors == "torch")
    try:
        ns = runner.run(impl, inputs, outputs, params)
    except Unsupported as e:
        raise ExecError(f"exec: {kernel}: this case is not supported here ({e}): not tested", code=NOT_IMPLEMENTED) from None
    for n, slot in outputs.items():
        assert slot.buffer is not None
        g = slot.guard
        for side, band, base in (("before", slot.buffer[:g], -g), ("after", slot.buffer[len(slot.buffer) - g :], slot.view.nbytes)):
            bad = np.flatnonzero(band != poison)
            if bad.size:
                raise ExecError(
                    f"exec: {kernel}: output {n!r}: a write outside the output, {side} it "
                    f"(byte {base + int(bad[0])} relative to its start; guard class)",
                    code=1,
                )
    for n, slot in inputs.items():
        i = _first_diff(slot.view, saved[n])
        if i >= 0:
            raise ExecError(f"exec: {kernel}: input {n!r} was modified (first at byte {i}; input-modified class)", code=1)
    hints = [unwritten_hint(impl, n) for n in unwritten_outputs(kernel, outputs)]
    for h in hints:
        print(f"exec: {kernel}: {h}", file=sys.stderr)
    # The program's own version line and device, as a serve program's hello
    # gives them: the harness puts them in the report's header; and the note
    # on unwritten outputs, which the harness copies into the case's warnings
    # (difftest's proc.MetaNote).
    meta = {"version": version_string(), "device": _clip(runner.device_name(impl.tensors == "torch"), MAX_FREE_TEXT)}
    if hints:
        meta[NOTE] = "; ".join(hints)
    write_file(out_path, {n: Tensor(s.dtype, s.view) for n, s in outputs.items()}, meta)
    return {"kernel": kernel, "case": meta.get("case", ""), "kernel_time_ns": ns}


def exec_main(in_path: str, out_path: str, device: Optional[str] = None) -> int:
    """CLI body: :func:`run_exec`, a reason on stderr on failure; returns the exit status."""
    try:
        run_exec(in_path, out_path, device)
    except ExecError as e:
        print(str(e), file=sys.stderr)
        return e.code
    except ContractError as e:
        print(f"exec: {e}", file=sys.stderr)
        return 1
    except DeviceError as e:
        print(f"exec: {e}", file=sys.stderr)
        return 2
    except Exception:
        traceback.print_exc()
        return 1
    return 0

