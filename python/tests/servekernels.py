"""Kernels for the serve and exec tests (contract names the Go side does
not know are fine for serve: the request carries every tensor)."""

import ctypes

import numpy as np

import kerneldiff


def _copy_outputs(params, shapes):
    return {"b": ("F32", shapes["a"])}


@kerneldiff.implements("copy", outputs=_copy_outputs)
def copy(a, b, *, scale=1.0, **params):
    """b = a * scale."""
    b[...] = a * np.float32(scale)


@kerneldiff.implements("boom", outputs=_copy_outputs)
def boom(a, b, **params):
    raise ValueError("boom: the kernel failed\nsecond line")


@kerneldiff.implements("returns", outputs=_copy_outputs)
def returns(a, b, **params):
    return a * 2


@kerneldiff.implements("oob", outputs=_copy_outputs)
def oob(a, b, **params):
    """Fills b, then writes 4 bytes just past it (what a buggy kernel does)."""
    b[...] = a
    ctypes.memset(b.ctypes.data + b.nbytes, 0, 4)


@kerneldiff.implements("writes_input", outputs=_copy_outputs)
def writes_input(a, b, **params):
    b[...] = a
    a.reshape(-1)[0] = 42.0


@kerneldiff.implements("reshape", outputs=_copy_outputs)
def reshape(a, b, **params):
    b.shape = (1, b.size)


@kerneldiff.implements("rebinds", outputs=_copy_outputs)
def rebinds(a, b, **params):
    b = a * 2  # noqa: F841 -- the mistake under test: rebinding writes nothing


@kerneldiff.implements("swallows", outputs=_copy_outputs)
def swallows(a, out=None, **params):
    """The mistake under test: the output is named b, so it lands in
    **params and out stays None."""


@kerneldiff.implements("torchy", outputs=_copy_outputs)
def torchy(a, b, **params):
    """The mistake under test: written for torch, registered for NumPy."""
    b[...] = a.float() * 2


@kerneldiff.implements("attr_typo", outputs=_copy_outputs)
def attr_typo(a, b, **params):
    """An AttributeError that has nothing to do with torch: no hint."""
    b[...] = a.nonexistent_attribute
