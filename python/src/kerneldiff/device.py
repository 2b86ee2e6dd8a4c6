"""Where an implementation runs: NumPy on the host, or torch on a device.

A case's tensors live in host memory owned by the caller (the serve
protocol's shared memory, or exec mode's arrays). :class:`Runner` hands them
to the function:

- ``tensors="numpy"``: the host arrays themselves (BF16 as ``np.uint16``);
  kernel time from ``time.perf_counter_ns``.
- ``tensors="torch"`` on ``cpu``: torch tensors sharing the host memory
  (zero copy; BF16 as ``torch.bfloat16``); time from ``perf_counter_ns``.
- ``tensors="torch"`` on ``cuda:N``: every input is copied to the device;
  every output's WHOLE guarded buffer (guard, output, guard) is copied to
  the device and the function is handed the middle, viewed with the
  output's dtype and shape; after a synchronize, each whole buffer and each
  device input is copied back over the host memory. So a write past an
  output lands in a guard band, and a write to an input reaches the
  harness's input hash. Kernel time from CUDA events around the call.

torch is imported only when a torch implementation runs.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional

import numpy as np

from .registry import Implementation, call

__all__ = ["Slot", "Runner", "parse_device", "DeviceError"]


class DeviceError(Exception):
    """A device that cannot be used: a bad name, no torch, no CUDA."""


@dataclass
class Slot:
    """One tensor of a case in host memory.

    Attributes
    ----------
    name, dtype : str
        Contract name and safetensors dtype.
    view : np.ndarray
        The tensor itself, typed (``np.uint16`` for BF16) and shaped.
    buffer : np.ndarray of uint8 or None
        For an output: its whole guarded buffer, ``guard`` bytes each side
        of `view`'s bytes (`view` is ``buffer[guard:guard + nbytes]``).
    guard : int
        Guard band bytes on each side (0 without a buffer).
    """

    name: str
    dtype: str
    view: np.ndarray
    buffer: Optional[np.ndarray] = None
    guard: int = 0


_DEVICE_RE = re.compile(r"^(cpu|cuda(:[0-9]{1,3})?)$")


def parse_device(spec: Optional[str]) -> str:
    """Normalise a device name: None/"" -> ``"cpu"``, ``"cuda"`` -> ``"cuda:0"``.

    Raises
    ------
    DeviceError
        Anything but ``cpu``, ``cuda`` or ``cuda:N``.
    """
    if spec is None or spec == "":
        return "cpu"
    s = spec.strip()
    if not _DEVICE_RE.match(s):
        raise DeviceError(f"device {spec!r}: must be cpu, cuda or cuda:N")
    return "cuda:0" if s == "cuda" else s


def default_device() -> str:
    """The device from ``KD_DEVICE``, or ``cpu`` (DeviceError if malformed)."""
    return parse_device(os.environ.get("KD_DEVICE"))


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return "cpu: " + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "cpu"


def _torch_view(a: np.ndarray, dtype: str) -> Any:
    """A torch tensor sharing `a`'s memory, with the contract dtype."""
    import torch

    from .dtypes import torch_dtype

    if dtype in ("BF16", "U16"):
        t = torch.from_numpy(a.view(np.int16))
        return t.view(torch_dtype(dtype))
    if dtype in ("U32", "U64"):
        t = torch.from_numpy(a.view(np.int32 if dtype == "U32" else np.int64))
        return t.view(torch_dtype(dtype))
    return torch.from_numpy(a)


def _timed_host_call(
    impl: Implementation,
    inputs: Mapping[str, Slot],
    outputs: Mapping[str, Slot],
    params: Mapping[str, Any],
    as_arg: Callable[[Slot], Any],
) -> int:
    """Call `impl` on host memory, each slot handed over as `as_arg` makes
    it (the array itself, or a torch tensor sharing it); returns the wall
    time of the call in nanoseconds (``perf_counter_ns``)."""
    ins = {n: as_arg(s) for n, s in inputs.items()}
    outs = {n: as_arg(s) for n, s in outputs.items()}
    t0 = time.perf_counter_ns()
    call(impl, ins, outs, params)
    return time.perf_counter_ns() - t0


def unwritten_outputs(kernel: str, outputs: Mapping[str, Slot]) -> list:
    """Names of outputs whose bytes all still equal their guard's poison byte.

    Outputs that are also inputs (``contracts`` in/out tensors) are left out:
    they start from their prior content. Used for a hint on stderr (a
    function that rebinds ``out = f(...)`` instead of filling ``out`` in
    place leaves its output untouched); the harness's own check decides.
    """
    from .contracts import lookup

    c = lookup(kernel)
    inout = set(c.inout) if c is not None else set()
    names = []
    for n, s in outputs.items():
        if n in inout or s.buffer is None or s.guard == 0 or s.view.nbytes == 0:
            continue
        poison = s.buffer[0]
        if (s.buffer[s.guard : s.guard + s.view.nbytes] == poison).all():
            names.append(n)
    return names


def unwritten_hint(impl: Any, name: str, poison: int) -> str:
    """The teaching line for output `name` left holding only the poison
    byte `poison` by `impl` (a registry.Implementation): fill it in place,
    and, when the function has no parameter of that name, that it went into
    **params."""
    msg = (f"output {name!r} still holds only the poison byte 0x{poison:02X} (never written): fill it in place "
           "(out.copy_(v) / out[...] = v); rebinding or returning it writes nothing")
    if hasattr(impl, "named") and not impl.named(name):
        fn = getattr(impl.fn, "__qualname__", impl.fn)
        msg += f"; {fn} has no parameter {name!r}, so the output went into its **params unseen"
    return msg


class Runner:
    """Runs implementations on one device; see the module docstring.

    Parameters
    ----------
    device : str
        ``cpu``, ``cuda`` or ``cuda:N`` (used by torch implementations;
        NumPy ones always run on the host).
    need_torch : bool
        Check now that torch (and CUDA, for a cuda device) can be used.

    Raises
    ------
    DeviceError
        A malformed device, torch missing for a torch implementation, or a
        cuda device that torch cannot see.
    """

    def __init__(self, device: Optional[str] = None, need_torch: bool = False) -> None:
        self.device = parse_device(device) if device is not None else default_device()
        self._torch_ready = False
        if need_torch:
            self._check_torch()

    def _check_torch(self) -> None:
        if self._torch_ready:
            return
        try:
            import torch
        except ImportError:
            raise DeviceError(
                "an implementation is registered with tensors='torch' but torch is not installed "
                "(pip install torch, or register it with tensors='numpy')"
            ) from None
        if self.device.startswith("cuda"):
            idx = int(self.device.split(":")[1])
            if not torch.cuda.is_available():
                raise DeviceError(f"device {self.device}: torch {torch.__version__} sees no CUDA device")
            if idx >= torch.cuda.device_count():
                raise DeviceError(f"device {self.device}: only {torch.cuda.device_count()} CUDA device(s)")
        self._torch_ready = True

    def device_name(self, torch_used: bool) -> str:
        """A free-text name of where kernels run, for the hello and replies."""
        if torch_used and self.device.startswith("cuda"):
            import torch

            return torch.cuda.get_device_name(int(self.device.split(":")[1]))
        return _cpu_name()

    def run(
        self,
        impl: Implementation,
        inputs: Mapping[str, Slot],
        outputs: Mapping[str, Slot],
        params: Mapping[str, Any],
    ) -> int:
        """Call `impl` on the slots; returns the kernel time in nanoseconds.

        Raises
        ------
        ContractError, DeviceError, or whatever the function raises.
        """
        if impl.tensors == "numpy":
            return _timed_host_call(impl, inputs, outputs, params, lambda s: s.view)
        self._check_torch()
        if self.device == "cpu":
            return _timed_host_call(impl, inputs, outputs, params, lambda s: _torch_view(s.view, s.dtype))
        return self._run_cuda(impl, inputs, outputs, params)

    def _run_cuda(
        self,
        impl: Implementation,
        inputs: Mapping[str, Slot],
        outputs: Mapping[str, Slot],
        params: Mapping[str, Any],
    ) -> int:
        import torch

        from .dtypes import torch_dtype

        dev = torch.device(self.device)
        host_in = {n: _torch_view(s.view, s.dtype) for n, s in inputs.items() if n not in outputs}
        dev_in = {n: t.to(dev, copy=True) for n, t in host_in.items()}
        host_buf: Dict[str, Any] = {}
        dev_buf: Dict[str, Any] = {}
        outs: Dict[str, Any] = {}
        for n, s in outputs.items():
            whole = s.buffer if s.buffer is not None else s.view.reshape(-1).view(np.uint8)
            host_buf[n] = torch.from_numpy(whole)
            dev_buf[n] = host_buf[n].to(dev, copy=True)
            nbytes = s.view.nbytes
            middle = dev_buf[n][s.guard : s.guard + nbytes]
            outs[n] = middle.view(torch_dtype(s.dtype)).reshape(s.view.shape)
        with torch.cuda.device(dev):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            call(impl, dev_in, outs, params)
            end.record()
            torch.cuda.synchronize(dev)
            ns = int(start.elapsed_time(end) * 1e6)
            for n, t in dev_buf.items():
                host_buf[n].copy_(t)
            for n, t in dev_in.items():
                host_in[n].copy_(t)
            torch.cuda.synchronize(dev)
        return ns

    def fatal(self) -> bool:
        """After an exception: whether the device is unusable from now on.

        On CUDA a kernel fault (illegal address, ...) is sticky: every later
        call fails. This checks with a synchronize; the serve loop exits
        after replying, so the harness starts a fresh process.
        """
        if not (self._torch_ready and self.device.startswith("cuda")):
            return False
        import torch

        try:
            torch.cuda.synchronize(torch.device(self.device))
        except Exception:
            return True
        return False
