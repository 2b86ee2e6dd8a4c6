"""Capture files from live tensors, and recording an op's real calls.

A capture is one case as a safetensors file: every input tensor under its
contract name (in/out tensors such as ``cache`` with the content they had
before the call), and ``__metadata__`` = ``{"kernel", "case", "params"}``
with params as a JSON string. ``difftest replay FILE`` validates it against
the contract, runs the reference and an implementation on it and reports;
``difftest run --suite DIR`` runs a folder of them.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import re
import sys
import threading
import warnings
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .contracts import lookup
from .dtypes import DTYPES, name_of_numpy, name_of_torch
from .stfile import Tensor, write_file

__all__ = ["capture", "record", "arg", "CaptureError"]


class CaptureError(ValueError):
    """A capture that the harness would reject, naming the tensor or params
    key and the rule."""


def _is_torch(x: Any) -> bool:
    t = sys.modules.get("torch")
    return t is not None and isinstance(x, t.Tensor)


def _to_host(name: str, x: Any, want: Optional[str], allowed: Tuple[str, ...] = ()) -> Tensor:
    """Copy `x` (NumPy array or torch tensor on any device) to a host Tensor."""
    if _is_torch(x):
        import torch

        t = x.detach()
        dt = name_of_torch(t.dtype)
        t = t.to("cpu").contiguous()
        if dt == "BF16":
            arr = t.view(torch.int16).numpy().view(np.uint16).copy()
        elif dt in ("U16", "U32", "U64"):
            arr = t.view({"U16": torch.int16, "U32": torch.int32, "U64": torch.int64}[dt]).numpy().view(DTYPES[dt]).copy()
        else:
            arr = t.numpy().copy()
    else:
        arr = np.array(x, copy=True)  # a copy: what the op saw, not what it wrote later
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        try:
            dt = name_of_numpy(arr.dtype)
        except ValueError as e:
            raise CaptureError(f"tensor {name!r}: {e}") from None
        if dt == "U16" and (want == "BF16" or want is None and "BF16" in allowed):
            dt = "BF16"  # NumPy holds bfloat16 as uint16 bits
    if want is None and allowed and dt not in allowed:  # a param picks among these (score_dtype, store)
        raise CaptureError(f"tensor {name!r}: the contract says {' or '.join(allowed)}, got {dt}{list(arr.shape)}; "
                           "convert it in the map (a capture holds the bytes the contract describes)")
    if want is not None and dt != want:
        raise CaptureError(
            f"tensor {name!r}: the contract says {want}, got {dt}{list(arr.shape)}; convert it in the map, "
            f"e.g. map={{'{name}': ('{name}', lambda t: t.to(torch.{want.lower()}))}} "
            "(a capture holds the bytes the contract describes)"
        )
    return Tensor(dt, arr)


def _json_default(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if _is_torch(v) and v.numel() == 1:
        return v.item()
    raise TypeError(f"params value {v!r} ({type(v).__name__}) is not JSON")


def _check_params(kernel: str, params: Mapping[str, Any]) -> None:
    c = lookup(kernel)
    if c is None:
        return
    missing = [k for k in c.required_params if k not in params]
    if missing:
        raise CaptureError(f"{kernel}: params {', '.join(map(repr, missing))} missing (required: {', '.join(c.required_params)})")
    allowed = set(c.required_params) | set(c.optional_params)
    extra = sorted(set(params) - allowed)
    if extra:
        raise CaptureError(
            f"{kernel}: params {', '.join(map(repr, extra))} unknown to the contract "
            f"(allowed: {', '.join(sorted(allowed))}); difftest replay would reject the file"
        )


def capture(
    path: "os.PathLike[str] | str",
    kernel: str,
    params: Mapping[str, Any],
    *,
    case: Optional[str] = None,
    dtypes: Optional[Mapping[str, str]] = None,
    check: bool = True,
    **tensors: Any,
) -> str:
    """Write a capture file from live tensors.

    Parameters
    ----------
    path : path-like
        File to write (replaced atomically).
    kernel : str
        Contract name, e.g. ``"topk_transform"``.
    params : mapping
        The case's params (docs/interfaces.md table: ``K``, ``P``, ``return_raw`` for
        top-k; ``norm``, ``rope_offset``, ``rope_style``, ``hadamard``,
        ``store``, ``scale_fmt``, ``page_size``, ``num_pages``, ``eps``,
        ``model`` for the store). Values must be JSON-able (NumPy and
        one-element torch scalars are converted). For known contracts the
        params that equal a dimension of an input (the store's
        ``num_pages``, the logits' ``batch``, ``heads``, ``num_pages``,
        ``max_pages``) are derived from the tensors unless given.
    case : str, optional
        Case name. The id is ``kernel/case``; default
        ``kernel/<file name without .safetensors>``.
    dtypes : mapping of str to str, optional
        safetensors dtype per tensor name, for NumPy ``uint16`` arrays that
        hold BF16 bits of a kernel this package does not know (for known
        contracts the contract says so).
    check : bool
        For known contracts (default True): every input present, each with
        the contract's dtype, no tensor the contract does not name, params
        keys complete and known, the ones ``difftest replay`` checks.
    **tensors : np.ndarray or torch.Tensor
        The inputs by contract name, on any device (copied to the host).
        For ``norm_rope_store`` pass ``cache`` with its content before the
        call; ``bias`` may be left out for ``norm="rms"`` (zeros are
        written, as the contract sends it for RMSNorm too).

    Returns
    -------
    str
        The path written.

    Raises
    ------
    CaptureError
        A tensor of the wrong dtype, a missing or unknown tensor or params
        key (when `check`), params that are not JSON.
    """
    contract = lookup(kernel) if check else None
    tensors = dict(tensors)
    if contract is not None:
        if kernel == "norm_rope_store" and "bias" not in tensors and params.get("norm") == "rms":
            tensors["bias"] = np.zeros(128, dtype=np.float32)
        params = dict(params)
        _derive(kernel, params, None, tensors)
        _check_params(kernel, params)
        names = [n for n, _ in contract.inputs]
        missing = [n for n in names if n not in tensors]
        if missing:
            raise CaptureError(f"{kernel}: tensor(s) {', '.join(map(repr, missing))} missing (inputs: {', '.join(names)})")
        extra = sorted(set(tensors) - set(names))
        if extra:
            raise CaptureError(f"{kernel}: tensor(s) {', '.join(map(repr, extra))} are not inputs of the contract ({', '.join(names)})")
    out: Dict[str, Tensor] = {}
    for name, x in tensors.items():
        want = (dtypes or {}).get(name) or (contract.input_dtype(name) if contract else None)
        allowed = contract.input_dtypes(name) if contract and not (dtypes or {}).get(name) else ()
        out[name] = _to_host(name, x, want, allowed)
    try:
        pj = json.dumps(dict(params), separators=(",", ":"), default=_json_default, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise CaptureError(f"{kernel}: params: {e}") from None
    p = os.fspath(path)
    if case is None:
        case = re.sub(r"\.safetensors$", "", os.path.basename(p))
    cid = case if case.startswith(kernel + "/") else f"{kernel}/{case}"
    write_file(p, out, {"kernel": kernel, "case": cid, "params": pj})
    return p


class arg:
    """A params value taken from the op's own argument of that name.

    ``record(op, ..., params={"P": kerneldiff.arg("page_size")})`` writes
    ``P`` = the value the op was called with as ``page_size``.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"arg({self.name!r})"


MapValue = Union[str, Tuple[str, Callable[[Any], Any]]]
ParamValue = Union[Any, arg, Callable[[Dict[str, Any]], Any]]


def _dtype_name(x: Any) -> Optional[str]:
    """The safetensors dtype name of an array or tensor, or None."""
    if _is_torch(x):
        return name_of_torch(x.dtype)
    dt = getattr(x, "dtype", None)
    if dt is None:
        return None
    try:
        return name_of_numpy(dt)
    except ValueError:
        return None


def _derive(kernel: str, params: Dict[str, Any], outs: Optional[Dict[str, Any]], tensors: Mapping[str, Any]) -> None:
    """Params that follow from the tensors of known contracts, unless given:
    each size param from its tensor's dimension, each output switch
    (``return_raw``) from whether that output came back, each dtype param
    (``logits_dtype``) from the dtype of the output it picks when that is
    not the default dtype (a NumPy ``uint16`` output is taken as BF16 bits)
    (the contract's ``sizes``, ``when`` and ``dtype_by``, contracts.json).
    With `outs` None (capture(), which sees no outputs) only the size
    params of the inputs are derived."""
    c = lookup(kernel)
    if c is None:
        return
    for param, name, axis in c.sizes:
        x = outs.get(name) if outs is not None and name in outs else tensors.get(name)
        shape = getattr(x, "shape", None)
        if param not in params and shape is not None and -len(shape) <= axis < len(shape):
            params[param] = int(shape[axis])
    if outs is None:
        return
    for name, switch in c.switches.items():
        if switch not in params:
            params[switch] = outs.get(name) is not None
    for name, (param, of, default) in c.dtype_params.items():
        dt = _dtype_name(outs.get(name))
        if dt == "U16":
            dt = "BF16"
        if param in params or dt is None or dt == default:
            continue
        picked = [v for v, d in of.items() if d == dt]
        if not picked:
            raise CaptureError(f"{kernel}: output {name!r} is {dt}, the contract takes {' or '.join(sorted(set(of.values())))}")
        params[param] = picked[0]


def record(
    fn: Callable[..., Any],
    dir: "os.PathLike[str] | str",
    *,
    kernel: str,
    map: Mapping[str, MapValue],
    params: Optional[Mapping[str, ParamValue]] = None,
    limit: Optional[int] = None,
    when: Optional[Callable[[Dict[str, Any]], bool]] = None,
    argnames: Optional[Sequence[str]] = None,
    name: Optional[str] = None,
    on_error: str = "warn",
) -> Callable[..., Any]:
    """Wrap an op so that its real calls are written as capture files.

    The wrapper binds each call's arguments to the op's parameter names,
    copies the contract's inputs (before the op runs, so the capture holds
    what the op saw), writes ``DIR/<kernel>-<name>-NNNNN.safetensors``, then
    calls the op and returns its result unchanged.

    Parameters
    ----------
    fn : callable
        The op, e.g. ``sgl_kernel.topk_transform`` or a ``torch.ops`` op.
    dir : path-like
        Folder for the captures (created).
    kernel : str
        Contract name.
    map : mapping
        The op's argument name -> contract tensor name, or -> ``(contract
        name, convert)`` where ``convert(value)`` gives the tensor to store
        (e.g. ``lambda t: t.to(torch.int32)``). Arguments mapped to an output
        name (``page_indices``, ``raw_indices``) are not stored; their
        shapes and presence give params (``K``, ``return_raw``). Arguments
        not in the map are not stored.
    params : mapping, optional
        Params of the capture: constants, ``kerneldiff.arg("op_arg")`` for
        the value of an op argument, or ``callable(args)`` of the dict of
        bound arguments by the op's names. Derived unless given: top-k ``K``
        (from the mapped ``page_indices`` shape) and ``return_raw`` (a
        ``raw_indices`` argument that is not None); store ``num_pages``
        (the cache's first dimension); logits ``batch``, ``heads``,
        ``num_pages``, ``max_pages``, ``stride`` and ``logits_dtype``
        ("bf16" for a bf16 ``logits`` output).
    limit : int, optional
        Capture at most this many calls (the first ones `when` accepts);
        default every call.
    when : callable, optional
        ``when(args) -> bool`` on the bound arguments: capture only calls
        for which it is true.
    argnames : sequence of str, optional
        The op's parameter names, for ops whose signature Python cannot
        inspect (C++ extension functions).
    name : str, optional
        Middle part of file names and case ids (default ``fn.__name__``).
    on_error : {"warn", "raise"}
        A capture that fails (a dtype the contract does not allow, ...)
        warns once and lets the op run (default), or raises.

    Returns
    -------
    callable
        The wrapper; ``wrapper.captured`` lists the paths written so far,
        ``wrapper.calls`` counts every call.

    Examples
    --------
    An out-param top-k op ``f(scores, seq_lens, page_table, out_page_indices,
    page_size, out_raw_indices=None)``::

        topk = kerneldiff.record(
            f, "captures/", kernel="topk_transform",
            map={"scores": "scores", "seq_lens": "seq_lens", "page_table": "page_table",
                 "out_page_indices": "page_indices", "out_raw_indices": "raw_indices"},
            params={"P": kerneldiff.arg("page_size")},   # K, return_raw derived
            limit=20, when=lambda a: a["scores"].shape[0] > 1)

    A store op whose positions are int32 (the contract stores I64)::

        store = kerneldiff.record(
            g, "captures/", kernel="norm_rope_store",
            map={"k": "x", "w": "weight", "cos_sin": "freqs",
                 "pos": ("positions", lambda t: t.to(torch.int64)),
                 "slots": "out_loc", "kv_cache": "cache"},
            params={"norm": "rms", "rope_offset": 64, "rope_style": "interleaved",
                    "hadamard": True, "store": "fp8", "scale_fmt": "plain",
                    "page_size": 64, "eps": 1e-6, "model": "v4"})
    """
    if on_error not in ("warn", "raise"):
        raise ValueError(f"record: on_error must be 'warn' or 'raise', got {on_error!r}")
    if limit is not None and limit < 0:
        raise ValueError(f"record: limit must be >= 0, got {limit}")
    contract = lookup(kernel)
    out_names = set(contract.output_names) if contract is not None else set()
    if contract is not None:
        known = {n for n, _ in contract.inputs} | out_names
        for a, target in map.items():
            cname = target[0] if isinstance(target, tuple) else target
            if cname not in known:
                raise ValueError(f"record: map[{a!r}] = {cname!r} is not a tensor of {kernel} ({', '.join(sorted(known))})")
    sig = None
    if argnames is None:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            raise ValueError(f"record: cannot inspect {fn!r}; pass argnames=[...] (its parameter names in order)") from None
    label = re.sub(r"[^A-Za-z0-9_.-]+", "_", name or getattr(fn, "__name__", "op"))
    folder = os.fspath(dir)
    lock = threading.Lock()
    state = {"taken": 0, "warned": False}

    def bind(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Dict[str, Any]:
        if sig is not None:
            b = sig.bind(*args, **kwargs)
            b.apply_defaults()
            return dict(b.arguments)
        assert argnames is not None
        if len(args) > len(argnames):
            raise TypeError(f"record: {len(args)} positional arguments but argnames has {len(argnames)}")
        bound = dict(zip(argnames, args))
        bound.update(kwargs)
        return bound

    def take(bound: Dict[str, Any]) -> None:
        tensors: Dict[str, Any] = {}
        outs: Dict[str, Any] = {}
        for a, target in map.items():
            if a not in bound:
                continue
            v = bound[a]
            cname, conv = (target if isinstance(target, tuple) else (target, None))
            if cname in out_names:
                outs[cname] = v
                continue
            if v is None:
                continue
            tensors[cname] = conv(v) if conv is not None else v
        pr: Dict[str, Any] = {}
        for k, v in (params or {}).items():
            if isinstance(v, arg):
                if v.name not in bound:
                    raise CaptureError(f"params {k!r}: the op has no argument {v.name!r}")
                v = bound[v.name]
            elif callable(v):
                v = v(bound)
            pr[k] = v
        _derive(kernel, pr, outs, tensors)
        os.makedirs(folder, exist_ok=True)
        with lock:
            n = len(wrapper.captured)
            while True:
                path = os.path.join(folder, f"{kernel}-{label}-{n:05d}.safetensors")
                if not os.path.exists(path):
                    break
                n += 1
            capture(path, kernel, pr, case=f"{label}-{n:05d}", **tensors)
            wrapper.captured.append(path)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with lock:
            wrapper.calls += 1
        try:
            bound = bind(args, kwargs)
            chosen = when is None or bool(when(bound))
            if chosen:
                with lock:
                    chosen = limit is None or state["taken"] < limit
                    if chosen:
                        state["taken"] += 1
            if chosen:
                take(bound)
        except Exception as e:
            if on_error == "raise":
                raise
            if not state["warned"]:
                state["warned"] = True
                warnings.warn(f"kerneldiff.record({label}): capture failed, the op runs uncaptured: {e}", RuntimeWarning, stacklevel=2)
        return fn(*args, **kwargs)

    wrapper.captured = []  # type: ignore[attr-defined]
    wrapper.calls = 0  # type: ignore[attr-defined]
    return wrapper

