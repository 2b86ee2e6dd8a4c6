"""The program side of ``difftest run --impl serve:CMD`` (protocol 1).

:func:`serve` answers the harness on the descriptors it opened: requests on
fd 3, replies on fd 4, tensors in the memfd on fd 5 (docs/python.md,
"The serve protocol, version 1"). Per request it maps fd 5 (again when
``shm_size`` changes), makes a view of every tensor at its offset, calls the
registered function (see :mod:`kerneldiff.registry` for the calling
convention and :mod:`kerneldiff.device` for NumPy/torch/GPU handling) and
replies ``ok`` with the kernel time, or ``error`` with the exception's type
and message (the traceback goes to stderr, whose tail the harness keeps).
End of file on fd 3 ends the loop: exit status 0.
"""

from __future__ import annotations

import mmap
import os
import platform
import sys
import traceback
from typing import Any, Dict, List, Optional, Sequence, TextIO

import numpy as np

from . import __version__, registry
from .registry import Unsupported
from .device import DeviceError, Runner, Slot, unwritten_hint, unwritten_outputs
from .dtypes import numpy_dtype
from .protocol import (
    PROTOCOL,
    FrameError,
    Request,
    RequestError,
    parse_request,
    read_message,
    write_message,
)

__all__ = ["serve", "ServeError", "version_string", "error_message"]

REQ_FD, REP_FD, SHM_FD = 3, 4, 5
#: Longest text of an error reply, characters.
MAX_ERROR = 4000
#: Longest device and version strings of the hello (docs/python.md: <= 256 bytes).
MAX_FREE_TEXT = 256


class ServeError(Exception):
    """The serve loop cannot start or must stop: a descriptor not open, no
    kernel registered, a device that cannot be used, a framing error. The
    message is one line for stderr; ``code`` is the exit status."""

    def __init__(self, msg: str, code: int = 2) -> None:
        super().__init__(msg)
        self.code = code


def _clip(s: str, n: int) -> str:
    b = s.encode("utf-8")
    if len(b) <= n:
        return s
    return b[: n - 3].decode("utf-8", errors="ignore") + "..."


def version_string(extra: Optional[str] = None) -> str:
    """``[extra ]kerneldiff-py V (python X, numpy Y[, torch Z])``, at most 256 bytes.

    torch is named only when it is already imported (this never imports it).
    """
    libs = [f"python {platform.python_version()}", f"numpy {np.__version__}"]
    torch = sys.modules.get("torch")
    if torch is not None:
        libs.append(f"torch {getattr(torch, '__version__', '?')}")
        cuda = getattr(getattr(torch, "version", None), "cuda", None)
        if cuda:
            libs.append(f"CUDA {cuda}")
    s = f"kerneldiff-py {__version__} ({', '.join(libs)})"
    if extra:
        s = f"{extra} {s}"
    return _clip(s, MAX_FREE_TEXT)


def error_message(e: BaseException) -> str:
    """One line for an error reply: ``Type: first line of the message (at file:line in fn)``."""
    text = str(e).strip().splitlines()
    msg = f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")
    tb = traceback.extract_tb(e.__traceback__)
    if tb:
        f = tb[-1]
        msg += f" (at {os.path.basename(f.filename)}:{f.lineno} in {f.name})"
    return _clip(msg, MAX_ERROR)


class _Shm:
    """fd 5 mapped at the size of the current request."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.size = -1
        self.mm: Optional[mmap.mmap] = None

    def limit(self) -> int:
        return os.fstat(self.fd).st_size

    def map(self, size: int) -> None:
        if size == self.size:
            return
        old, self.mm, self.size = self.mm, None, -1
        if old is not None:
            try:
                old.close()
            except BufferError:
                pass  # a view survived (e.g. kept by the function): the old map goes with it
        if size > 0:
            self.mm = mmap.mmap(self.fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        self.size = size

    def view(self, offset: int, nbytes: int, dtype: str, shape: Sequence[int]) -> np.ndarray:
        dt = numpy_dtype(dtype)
        if nbytes == 0:
            return np.empty(shape, dtype=dt)
        assert self.mm is not None
        return np.frombuffer(self.mm, dtype=dt, count=nbytes // dt.itemsize, offset=offset).reshape(shape)

    def bytes_view(self, offset: int, nbytes: int) -> np.ndarray:
        if nbytes == 0:
            return np.empty(0, dtype=np.uint8)
        assert self.mm is not None
        return np.frombuffer(self.mm, dtype=np.uint8, count=nbytes, offset=offset)


def _check_fds() -> None:
    env = os.environ.get("KD_SERVE_PROTOCOL")
    if env is not None and env != str(PROTOCOL):
        raise ServeError(f"serve: KD_SERVE_PROTOCOL={env!r}, but this program speaks protocol {PROTOCOL}")
    for fd, what in ((REQ_FD, "requests"), (REP_FD, "replies"), (SHM_FD, "shared memory")):
        try:
            os.fstat(fd)
        except OSError:
            raise ServeError(
                f"serve: fd {fd} ({what}) is not open. This program is started by "
                "`difftest run --impl 'serve:CMD'`, which opens fds 3-5 (docs/python.md, serve protocol 1); "
                "to run one case by hand use `python -m kerneldiff exec FILE in.safetensors out.safetensors`"
            ) from None
        os.set_inheritable(fd, False)  # children the function starts must not hold the pipes


class _Loop:
    def __init__(self, runner: Runner, device: str, err: TextIO) -> None:
        self.runner = runner
        self.device = device
        self.err = err
        self.shm = _Shm(SHM_FD)

    def reply(self, obj: Dict[str, Any]) -> None:
        write_message(REP_FD, obj)

    def handle(self, req: Request) -> Dict[str, Any]:
        impl = registry.get(req.kernel)
        if impl is None:
            raise LookupError(
                f"kernel {req.kernel!r} is not implemented here (hello listed: {', '.join(registry.kernels())})"
            )
        self.shm.map(req.shm_size)
        out_names = {t.name for t in req.outputs}
        inputs = {
            t.name: Slot(t.name, t.dtype, self.shm.view(t.offset, t.nbytes, t.dtype, t.shape))
            for t in req.inputs
            if t.name not in out_names
        }
        outputs = {}
        for t in req.outputs:
            outputs[t.name] = Slot(
                t.name,
                t.dtype,
                self.shm.view(t.offset, t.nbytes, t.dtype, t.shape),
                buffer=self.shm.bytes_view(t.offset - t.guard, t.nbytes + 2 * t.guard),
                guard=t.guard,
            )
        ns = self.runner.run(impl, inputs, outputs, req.params)
        rep = {"type": "result", "seq": req.seq, "status": "ok", "kernel_time_ns": int(ns), "device": self.device}
        hints = [unwritten_hint(impl, n) for n in unwritten_outputs(req.kernel, outputs)]
        for h in hints:
            print(f"kerneldiff serve: seq {req.seq} {req.case}: {h}", file=self.err, flush=True)
        if hints:  # the harness puts an ok reply's message into the case's warnings
            rep["message"] = _clip("; ".join(hints), MAX_ERROR)
        return rep

    def run(self) -> int:
        while True:
            try:
                msg = read_message(REQ_FD)
            except FrameError as e:
                raise ServeError(f"serve: request stream broken: {e}") from None
            if msg is None:
                return 0
            try:
                req = parse_request(msg, self.shm.limit())
            except RequestError as e:
                if e.seq is None:
                    raise ServeError(f"serve: {e} (no valid seq to reply to)") from None
                print(f"kerneldiff serve: seq {e.seq}: {e}", file=self.err, flush=True)
                self.reply({"type": "result", "seq": e.seq, "status": "error", "message": str(e)})
                continue
            try:
                rep = self.handle(req)
            except Unsupported as e:  # the case's configuration, not a failure: not tested
                self.reply({"type": "result", "seq": req.seq, "status": "unsupported", "message": _clip(str(e), MAX_ERROR)})
                continue
            except Exception as e:  # the function's failure is this case's, not the server's
                print(f"kerneldiff serve: seq {req.seq} {req.case}: the implementation raised:", file=self.err)
                traceback.print_exc(file=self.err)
                self.err.flush()
                fatal = self.runner.fatal()
                message = error_message(e)
                if fatal:
                    message = _clip(message + " [the CUDA context is lost: the server exits]", MAX_ERROR)
                self.reply({"type": "result", "seq": req.seq, "status": "error", "message": message})
                if fatal:
                    return 3
                continue
            self.reply(rep)


def serve(device: Optional[str] = None, version: Optional[str] = None, *, err: Optional[TextIO] = None) -> int:
    """Run the serve loop of protocol 1 until the harness closes fd 3.

    Serves every function registered with :func:`kerneldiff.implements` so
    far. Call it at the end of a script (``if __name__ == "__main__":
    raise SystemExit(kerneldiff.serve())``), or use ``python -m kerneldiff
    serve FILE``, which imports FILE and calls it.

    Parameters
    ----------
    device : str, optional
        ``cpu``, ``cuda`` or ``cuda:N`` for torch implementations; default
        ``KD_DEVICE``, else ``cpu``. NumPy implementations run on the host.
    version : str, optional
        Your own version text, put before this package's in the hello
        (e.g. ``"my-kernels 0.3.1"``).
    err : text stream, optional
        Where diagnostics go (default ``sys.stderr``).

    Returns
    -------
    int
        The exit status: 0 after end of file on fd 3; 3 after a sticky CUDA
        error (the error is replied first, then the process should exit so
        the harness starts a fresh one).

    Raises
    ------
    ServeError
        fds 3-5 not open, KD_SERVE_PROTOCOL not 1, nothing registered, an
        unusable device, or a broken request stream (bad framing, or a bad
        request without a valid ``seq``); its ``code`` is the exit status to
        use (2).
    """
    err = err or sys.stderr
    _check_fds()
    kernels = registry.kernels()
    if not kernels:
        raise ServeError("serve: no kernel is registered (decorate a function with @kerneldiff.implements(NAME))")
    torch_used = any(registry.get(k).tensors == "torch" for k in kernels)  # type: ignore[union-attr]
    try:
        runner = Runner(device, need_torch=torch_used)
        dev = _clip(runner.device_name(torch_used), MAX_FREE_TEXT)
    except DeviceError as e:
        raise ServeError(f"serve: {e}") from None
    if device and not torch_used and runner.device != "cpu":
        print(f"kerneldiff serve: device {runner.device} is ignored: every implementation here is NumPy", file=err)
    write_message(
        REP_FD,
        {"type": "hello", "protocol": PROTOCOL, "kernels": kernels, "device": dev, "version": version_string(version)},
    )
    try:
        return _Loop(runner, dev, err).run()
    except (BrokenPipeError, ConnectionResetError):
        print("kerneldiff serve: the harness closed the reply pipe", file=err)
        return 1


def kernel_list() -> List[str]:
    """The kernels a hello would list now (registered names, sorted)."""
    return registry.kernels()
