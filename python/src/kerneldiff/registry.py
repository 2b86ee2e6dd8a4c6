"""Registering implementations and calling them the kerneldiff way.

An implementation is a plain function registered for a kernel contract::

    import kerneldiff

    @kerneldiff.implements("topk_transform")
    def topk(scores, seq_lens, page_table, page_indices, raw_indices=None, *, K, P, **params):
        ...                      # compute
        page_indices[...] = result   # fill the output IN PLACE

It is called with keyword arguments only:

- every input tensor under its contract name (``scores``, ``seq_lens``,
  ``page_table``; ``x``, ``weight``, ``bias``, ``freqs``, ``positions``,
  ``out_loc``);
- every output under its contract name, as an array or tensor of the exact
  dtype and shape that the function must fill in place (``out[...] = v``,
  ``out.copy_(v)``, or a kernel writing through its pointer). An output that
  is also an input (the paged ``cache`` of ``norm_rope_store``) is passed
  once, as the output, holding its prior (canary) bytes: write only the
  bytes the contract writes. An optional output (``raw_indices`` when
  ``return_raw`` is false) is not passed at all: give it a default;
- every params key as a keyword (``K``, ``P``, ``return_raw``, ...; see
  docs/interfaces.md's table): take the ones you need and ``**params`` for the rest,
  or leave ``**params`` out and only the keywords the function names are
  passed.

Return values are not outputs: the function must return None. Returning
anything else, or changing an output's dtype, shape or storage (torch
``set_``, ``.data =``, NumPy ``.shape =``) is a :class:`ContractError` that
names the tensor and the rule.
"""

from __future__ import annotations

import inspect
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional

import numpy as np

__all__ = ["ContractError", "Unsupported", "Implementation", "implements", "get", "kernels", "clear", "call", "torch_hint",
           "TORCH_METHODS"]


class Unsupported(Exception):
    """Raised by an implementation for a case it does not support.

    The function implements the kernel but not this configuration (a store
    format, a score dtype): the case is reported as not tested instead of
    failed. ``serve`` replies with status ``"unsupported"``; ``exec`` exits
    with status 125 (difftest's ExecNotImplemented).

    Parameters
    ----------
    what : str
        What is unsupported, in one line, e.g. ``"store 'fp4'"``.

    Examples
    --------
    >>> if store == "fp4":
    ...     raise kerneldiff.Unsupported("store 'fp4' (FP4 keys)")
    """


class ContractError(Exception):
    """A function broke the calling convention for one tensor.

    Attributes
    ----------
    kernel : str
        Contract name.
    tensor : str
        The tensor (or parameter) concerned, or "" for the whole call.
    rule : str
        The rule broken, with the offending value.
    """

    def __init__(self, kernel: str, tensor: str, rule: str) -> None:
        self.kernel, self.tensor, self.rule = kernel, tensor, rule
        where = f"{kernel}: {tensor!r}: " if tensor else f"{kernel}: "
        super().__init__(where + rule)


@dataclass
class Implementation:
    """One registered implementation.

    Attributes
    ----------
    kernel : str
        Contract name it implements.
    fn : callable
        The function.
    tensors : str
        ``"numpy"`` (NumPy arrays on the host; BF16 as ``np.uint16`` bits) or
        ``"torch"`` (torch tensors on the serve/exec device).
    outputs : callable or None
        For kernels this package does not know: ``outputs(params, shapes)``
        giving the outputs for exec mode (see
        :func:`kerneldiff.contracts.output_specs`).
    """

    kernel: str
    fn: Callable[..., Any]
    tensors: str = "numpy"
    outputs: Optional[Callable[..., Any]] = None
    _sig: Optional[inspect.Signature] = field(default=None, repr=False)
    _var_kw: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        try:
            self._sig = inspect.signature(self.fn)
        except (TypeError, ValueError):
            self._sig = None  # a builtin: pass everything as keywords
        self._var_kw = self._sig is None or any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in self._sig.parameters.values()
        )

    def named(self, name: str) -> bool:
        """Whether the function has a parameter of that name (not only
        **kwargs): an output it does not name lands in **kwargs unseen."""
        return self._sig is None or name in self._sig.parameters

    def accepts(self, name: str) -> bool:
        """Whether the function can take keyword `name`."""
        if self._var_kw:
            return True
        assert self._sig is not None
        p = self._sig.parameters.get(name)
        return p is not None and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


_lock = threading.Lock()
_registry: Dict[str, Implementation] = {}


def _same_function(a: Callable[..., Any], b: Callable[..., Any]) -> bool:
    code_a, code_b = getattr(a, "__code__", None), getattr(b, "__code__", None)
    if code_a is None or code_b is None:
        return a is b
    return (
        getattr(a, "__qualname__", None) == getattr(b, "__qualname__", None)
        and os.path.realpath(code_a.co_filename) == os.path.realpath(code_b.co_filename)
    )


def implements(
    kernel: str,
    *,
    tensors: str = "numpy",
    outputs: Optional[Callable[..., Any]] = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the implementation of `kernel`.

    Parameters
    ----------
    kernel : str
        Contract name: ``"topk_transform"``, ``"norm_rope_store"``, or any
        other contract the harness knows.
    tensors : {"numpy", "torch"}
        What the function is handed: NumPy arrays on the host (BF16 as
        ``np.uint16`` bit patterns; default), or torch tensors on the device
        of ``--device``/``KD_DEVICE`` (BF16 as ``torch.bfloat16``).
    outputs : callable, optional
        Only for exec mode of a kernel this package does not know:
        ``outputs(params, shapes) -> {name: (dtype, shape)}``.

    Returns
    -------
    callable
        A decorator that registers the function and returns it unchanged.

    Raises
    ------
    ValueError
        `tensors` not "numpy"/"torch", an empty kernel name, or a second,
        different function for a kernel already registered (registering the
        same function again, e.g. when its file is loaded twice, replaces it).
    """
    if not isinstance(kernel, str) or not kernel:
        raise ValueError(f"implements: kernel must be a non-empty contract name, got {kernel!r}")
    if tensors not in ("numpy", "torch"):
        raise ValueError(f"implements({kernel!r}): tensors must be 'numpy' or 'torch', got {tensors!r}")

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise ValueError(f"implements({kernel!r}): {fn!r} is not callable")
        with _lock:
            old = _registry.get(kernel)
            if old is not None and not _same_function(old.fn, fn):
                raise ValueError(
                    f"implements({kernel!r}): already registered by {getattr(old.fn, '__qualname__', old.fn)}; "
                    f"one implementation per kernel (got {getattr(fn, '__qualname__', fn)})"
                )
            _registry[kernel] = Implementation(kernel, fn, tensors, outputs)
        return fn

    return register


def get(kernel: str) -> Optional[Implementation]:
    """The implementation registered for `kernel`, or None."""
    with _lock:
        return _registry.get(kernel)


def kernels() -> List[str]:
    """The registered contract names, sorted."""
    with _lock:
        return sorted(_registry)


def clear() -> None:
    """Forget every registration (for tests)."""
    with _lock:
        _registry.clear()


def _describe(v: Any) -> str:
    shape = getattr(v, "shape", None)
    dtype = getattr(v, "dtype", None)
    if shape is not None and dtype is not None:
        return f"{type(v).__module__}.{type(v).__name__} {dtype}{list(shape)}"
    return type(v).__name__


def _storage(v: Any) -> Any:
    if hasattr(v, "data_ptr"):  # torch
        return v.data_ptr()
    ai = getattr(v, "__array_interface__", None)
    return ai["data"][0] if ai else id(v)


#: torch.Tensor methods a NumPy array lacks, which a function written for
#: torch calls first (dtype casts, device moves, in-place ops).
TORCH_METHODS = frozenset({
    "float", "half", "bfloat16", "double", "int", "long", "short", "bool", "to", "cuda", "cpu",
    "contiguous", "clone", "detach", "numel", "dim", "element_size", "data_ptr", "is_cuda",
    "unsqueeze", "permute", "expand", "view_as", "type_as", "masked_fill", "index_select",
    "gather", "scatter", "topk", "new_zeros", "new_full", "new_empty", "amax", "amin", "sub",
    "mul", "add", "div", "clamp", "float8_e4m3fn",
})


def torch_hint(impl: "Implementation", e: AttributeError) -> str:
    """The hint for an AttributeError that a NumPy array raised in a
    function registered with ``tensors="numpy"`` (the default) but written
    for torch tensors: ``ndarray.float()``, ``.to(...)``, an in-place
    ``.copy_``/``.fill_``. "" when the error is anything else.

    The function looks written for torch when the attribute is a torch
    method NumPy lacks (:data:`TORCH_METHODS`, or any name ending in ``_``,
    torch's in-place convention) or its module uses ``torch``.
    """
    if impl.tensors != "numpy":
        return ""
    obj = getattr(e, "obj", None)
    text = str(e.args[0]) if e.args else ""
    if not (isinstance(obj, np.ndarray) or (obj is None and text.startswith("'numpy.ndarray' object has no attribute"))):
        return ""
    name = getattr(e, "name", None) or text.rsplit(" ", 1)[-1].strip("'\"")
    fn = impl.fn
    glb = getattr(fn, "__globals__", {}) or {}
    code = getattr(fn, "__code__", None)
    uses_torch = "torch" in glb or (code is not None and "torch" in code.co_names)
    if not (uses_torch or name in TORCH_METHODS or name.endswith("_")):
        return ""
    return (f"; {getattr(fn, '__qualname__', fn)} is handed NumPy arrays (tensors=\"numpy\", the default): "
            f"register it with @kerneldiff.implements({impl.kernel!r}, tensors=\"torch\") to get torch tensors")


def call(
    impl: Implementation,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    params: Mapping[str, Any],
) -> None:
    """Call `impl` with the kerneldiff convention (module docstring).

    Parameters
    ----------
    impl : Implementation
        What to call.
    inputs : mapping of str to array or tensor
        Input tensors by contract name; a name also in `outputs` is passed as
        the output only.
    outputs : mapping of str to array or tensor
        Views to fill in place, by contract name.
    params : mapping
        The case's params, passed as keywords.

    Raises
    ------
    ContractError
        The function cannot take an output by name, a params key collides
        with a tensor name, it lacks a required parameter the case does not
        provide, it returned a value, or it changed an output's dtype, shape
        or storage.
    Exception
        Whatever the function raises, unchanged.
    """
    kernel = impl.kernel
    kwargs: Dict[str, Any] = {}
    for name, v in inputs.items():
        if name not in outputs and impl.accepts(name):
            kwargs[name] = v
    for name, v in outputs.items():
        if not impl.accepts(name):
            raise ContractError(
                kernel, name,
                f"{getattr(impl.fn, '__qualname__', impl.fn)} takes no parameter for this output; "
                "outputs are filled in place, so the function must take each by its contract name (or **kwargs)",
            )
        kwargs[name] = v
    for key, v in params.items():
        if key in inputs or key in outputs:
            raise ContractError(kernel, key, "is both a params key and a tensor name")
        if impl.accepts(key):
            kwargs[key] = v
    if impl._sig is not None:
        for p in impl._sig.parameters.values():
            if p.kind is inspect.Parameter.POSITIONAL_ONLY and p.default is inspect.Parameter.empty:
                raise ContractError(kernel, p.name, "is positional-only; kerneldiff passes every argument by keyword")
            if (
                p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
                and p.default is inspect.Parameter.empty
                and p.name not in kwargs
            ):
                raise ContractError(
                    kernel, p.name,
                    "the function requires it but the case provides no tensor or params key of that name "
                    f"(tensors: {', '.join(sorted(set(inputs) | set(outputs)))}; params: {', '.join(sorted(params))})",
                )
    before = {n: (getattr(v, "dtype", None), tuple(getattr(v, "shape", ())), _storage(v)) for n, v in outputs.items()}
    try:
        result = impl.fn(**kwargs)
    except AttributeError as e:
        hint = torch_hint(impl, e)
        if hint:
            e.args = (f"{e.args[0] if e.args else e}{hint}",) + tuple(e.args[1:])
        raise
    if result is not None:
        hint = ""
        for name, v in outputs.items():
            if tuple(getattr(result, "shape", ())) == tuple(v.shape) and getattr(v, "shape", None) is not None:
                hint = f"; to hand it back, fill the output in place: {name}[...] = result (NumPy) or {name}.copy_(result) (torch)"
                break
        raise ContractError(
            kernel, "",
            f"the function returned {_describe(result)}; outputs are not returned but filled in place "
            f"({', '.join(outputs) or 'none'}), so it must return None{hint}",
        )
    for name, v in outputs.items():
        dt, shape, ptr = before[name]
        if getattr(v, "dtype", None) != dt:
            raise ContractError(kernel, name, f"dtype changed from {dt} to {v.dtype}: fill the output in place, do not re-type it")
        if tuple(v.shape) != shape:
            raise ContractError(kernel, name, f"shape changed from {list(shape)} to {list(v.shape)}: fill the output in place, do not reshape it")
        if _storage(v) != ptr:
            raise ContractError(kernel, name, "its storage was replaced (set_, .data =, resize_): fill the output in place")
