"""Number formats of the kerneldiff contracts, in NumPy, bit for bit.

NumPy has no bfloat16 or float8 dtype, and this package does not depend on
ml_dtypes, so the formats are handled as their bit patterns:

- bfloat16 (Google Brain; Intel "BFLOAT16 - Hardware Numerics Definition",
  2018): the top 16 bits of an IEEE 754 binary32, held in ``np.uint16``.
- e4m3fn (OCP "8-bit Floating Point Specification (OFP8)", rev. 1.0, 2023):
  1 sign, 4 exponent, 3 fraction bits, bias 7, no infinities, S.1111.111 is
  NaN, largest finite ±448 (0x7E/0xFE), smallest subnormal 2^-9; held in
  ``np.uint8``. Conversion is the saturating mode CUDA's
  ``__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)`` implements.
- e2m1 (OCP Microscaling Formats (MX) Specification v1.0, 2023): FP4 with
  1 sign, 2 exponent, 1 mantissa bit, magnitudes 0, 0.5, 1, 1.5, 2, 3, 4,
  6, no infinity or NaN; a code 0x0-0xF in ``np.uint8``. Conversion is
  PTX ``cvt.rn.satfinite.e2m1x2.f32``'s.
- ue8m0: a power-of-two scale 2^(byte - 127) (MX's E8M0), the FP8 and FP4
  stores' block scales.
- key32: the total order of radix-select top-k kernels (docs/contracts/topk_transform.md).

Every encoder rounds once, to nearest with ties to even, from the exact
binary32 value. These are the rules of ``difftest/numeric`` on the Go side.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "E4M3_MAX",
    "E2M1_MAX",
    "e2m1_from_f32",
    "e2m1_to_f32",
    "ue8m0_ceil_f32",
    "ue8m0_to_f32",
    "bf16_from_f32",
    "bf16_to_f32",
    "e4m3fn_from_f32",
    "e4m3fn_to_f32",
    "key32",
]

#: The largest finite e4m3fn magnitude, 1.75 * 2**8 (code 0x7E).
E4M3_MAX = 448.0
#: The largest e2m1 magnitude (code 0x7).
E2M1_MAX = 6.0
#: The e2m1 magnitudes by code & 7.
_E2M1_MAG = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float32)
#: The midpoints between neighbouring e2m1 magnitudes.
_E2M1_MIDS = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], dtype=np.float32)


def _as_f32(x: np.ndarray, what: str) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype != np.float32:
        raise TypeError(
            f"{what}: input must be float32 (got {a.dtype}); convert explicitly, "
            "knowing that a float64 -> float32 cast is itself a rounding"
        )
    return a


def _as_u8(x: np.ndarray, what: str) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype != np.uint8:
        raise TypeError(f"{what}: input must be uint8, got {a.dtype}")
    return a


def bf16_from_f32(x: np.ndarray) -> np.ndarray:
    """Round binary32 values to bfloat16, ties to even, as bit patterns.

    Parameters
    ----------
    x : np.ndarray of float32, any shape
        The values. Other dtypes raise ``TypeError`` (a float64 input would
        need a rounding of its own first; say which one you mean).

    Returns
    -------
    np.ndarray of uint16, shape of `x`
        bfloat16 bits. Round-to-nearest-even on the 16 discarded bits;
        values at or beyond the midpoint between the largest finite bf16
        (0x7F7F, 3.3895e38) and 2**128 become ±inf, ±inf stays ±inf, ±0
        and subnormals keep their sign and round like any other value. Every
        NaN becomes the quiet NaN 0x7FC0 with the input's sign bit (0xFFC0
        when negative); its payload is dropped. For non-NaN inputs this is
        CUDA's ``__float2bfloat16_rn``.
    """
    a = _as_f32(x, "bf16_from_f32")
    b = a.view(np.uint32).astype(np.uint64)
    rounded = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (b & 0x7FFFFFFF) > 0x7F800000
    nan_bits = (((b >> 16) & 0x8000) | 0x7FC0).astype(np.uint16)
    return np.where(nan, nan_bits, rounded)


def bf16_to_f32(b: np.ndarray) -> np.ndarray:
    """Widen bfloat16 bit patterns to binary32, exactly.

    Parameters
    ----------
    b : np.ndarray of uint16 (or int16), any shape
        bfloat16 bits, e.g. a BF16 tensor as kerneldiff hands it to a NumPy
        implementation.

    Returns
    -------
    np.ndarray of float32, shape of `b`
        The values; exact for every pattern (NaN payloads and signs kept).
    """
    a = np.asarray(b)
    if a.dtype not in (np.uint16, np.int16):
        raise TypeError(f"bf16_to_f32: input must be uint16 bfloat16 bits, got {a.dtype}")
    return (a.astype(np.uint16).astype(np.uint32) << 16).view(np.float32)


def e4m3fn_from_f32(x: np.ndarray) -> np.ndarray:
    """Convert binary32 values to e4m3fn codes, saturating, ties to even.

    Parameters
    ----------
    x : np.ndarray of float32, any shape
        The values (already divided by the scale). Other dtypes raise
        ``TypeError``.

    Returns
    -------
    np.ndarray of uint8, shape of `x`
        e4m3fn codes, one rounding to nearest-even from the exact value.
        Subnormal results (multiples of 2**-9 below 2**-6) are exactly
        rounded; |x| <= 2**-10 rounds to ±0 keeping the sign (2**-10 is a
        tie and goes to the even zero). |x| > 448, ±inf included, saturates
        to ±448 (0x7E, 0xFE): values in (448, 464) round to 448 anyway, and
        larger ones would be NaN without saturation. Every NaN, whatever its
        sign, becomes 0x7F (docs/contracts/norm_rope_store.md; ml_dtypes keeps the sign, 0xFF).
    """
    a = _as_f32(x, "e4m3fn_from_f32")
    bits = a.view(np.uint32).astype(np.int64)
    sign = ((bits >> 24) & 0x80).astype(np.uint8)
    mag_bits = bits & 0x7FFFFFFF
    # Normal range (|x| >= 2**-6): keep 3 of binary32's 23 fraction bits with
    # an integer round-to-nearest-even; the carry runs into the exponent.
    # (bits >> 20) is (E << 3) | frac3 with E biased by 127; e4m3 biases by 7.
    r = (mag_bits + 0x7FFFF + ((mag_bits >> 20) & 1)) >> 20
    normal = r - (120 << 3)
    # Subnormal range (|x| < 2**-6): the quantum is 2**-9; scaling by 2**9 is
    # exact and np.rint rounds half to even. rint(...) == 8 is 2**-6 exactly,
    # which is code 0x08, the smallest normal: the two ranges join seamlessly.
    with np.errstate(invalid="ignore", over="ignore"):
        small = np.rint(np.abs(a) * np.float32(512.0))
    is_small = mag_bits < 0x3C800000  # 0x3C800000 = 2**-6
    small_codes = np.where(is_small, small, 0).astype(np.int64)
    code = np.where(is_small, small_codes, normal)
    code = np.minimum(code, 0x7E).astype(np.uint8)
    out = sign | code
    return np.where(mag_bits > 0x7F800000, np.uint8(0x7F), out).astype(np.uint8)


def e4m3fn_to_f32(c: np.ndarray) -> np.ndarray:
    """Decode e4m3fn codes to binary32, exactly.

    Parameters
    ----------
    c : np.ndarray of uint8, any shape
        e4m3fn codes.

    Returns
    -------
    np.ndarray of float32, shape of `c`
        The values. The NaN codes 0x7F and 0xFF decode to NaN with the
        code's sign.
    """
    a = _as_u8(c, "e4m3fn_to_f32")
    ci = a.astype(np.int64)
    exp = (ci >> 3) & 0xF
    frac = ci & 0x7
    mag = np.where(
        exp == 0,
        frac.astype(np.float64) * 2.0**-9,
        (1.0 + frac / 8.0) * np.exp2(exp.astype(np.float64) - 7.0),
    )
    mag = np.where((exp == 0xF) & (frac == 0x7), np.nan, mag)
    return np.where(ci & 0x80, -mag, mag).astype(np.float32)


def key32(x: np.ndarray) -> np.ndarray:
    """Map binary32 values to the unsigned keys of the top-k total order.

    Parameters
    ----------
    x : np.ndarray of float32, any shape
        Scores.

    Returns
    -------
    np.ndarray of uint32, shape of `x`
        ``bits(x) ^ (0xFFFFFFFF if sign else 0x80000000)``. Comparing keys as
        unsigned integers orders -NaN < -inf < ... < -0 < +0 < ... < +inf <
        +NaN; equal keys are equal bit patterns (docs/contracts/topk_transform.md). PyTorch's
        ``torch.topk`` differs: there NaN is largest whatever its sign.
    """
    a = _as_f32(x, "key32")
    b = a.view(np.uint32)
    return b ^ np.where(b >> 31 == 1, np.uint32(0xFFFFFFFF), np.uint32(0x80000000))


def e2m1_from_f32(x: np.ndarray) -> np.ndarray:
    """Convert binary32 values to e2m1 (FP4) codes, saturating, ties to even.

    Parameters
    ----------
    x : np.ndarray of float32, any shape
        The values (already divided by their block scale). Other dtypes
        raise ``TypeError``.

    Returns
    -------
    np.ndarray of uint8, shape of `x`
        Codes 0x0-0xF: bit 3 the sign, bits 0-2 the index of the magnitude
        in 0, 0.5, 1, 1.5, 2, 3, 4, 6. One rounding to nearest from the
        exact value, ties to the even code: 0.25 -> 0, 0.75 -> 1, 1.25 -> 1,
        1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4. |x| > 6 and +-inf saturate to
        +-6 (0x7, 0xF). The sign is kept when the magnitude rounds to zero
        (-0.1 gives 0x8; the FP4 store writes 0x0 instead, see
        docs/contracts/norm_rope_store.md). NaN has no code: it gives 0x7
        (+6), as difftest's E2M1FromF64 (a NaN token is "don't care").
        For finite inputs this is PTX ``cvt.rn.satfinite.e2m1x2.f32`` and
        ml_dtypes' float4_e2m1fn.
    """
    a = _as_f32(x, "e2m1_from_f32")
    mag = np.abs(a)
    above = (mag[..., None] > _E2M1_MIDS).sum(axis=-1)
    tie = (mag[..., None] == _E2M1_MIDS)
    # a tie at midpoint i lies between index i and i + 1: the even one
    tie_idx = np.where(tie.any(axis=-1), np.argmax(tie, axis=-1), -1)
    idx = np.where(tie_idx >= 0, tie_idx + (tie_idx & 1), above)
    sign = np.signbit(a).astype(np.uint8) << 3
    code = (sign | idx.astype(np.uint8)).astype(np.uint8)
    return np.where(np.isnan(a), np.uint8(0x7), code).astype(np.uint8)


def e2m1_to_f32(c: np.ndarray) -> np.ndarray:
    """Decode e2m1 codes (0x0-0xF; higher bits ignored) to binary32, exactly.

    Parameters
    ----------
    c : np.ndarray of uint8, any shape
        Codes, e.g. the low or high nibbles of a packed FP4 byte.

    Returns
    -------
    np.ndarray of float32, shape of `c`
        The values; 0x8 decodes to -0.0.
    """
    a = _as_u8(c, "e2m1_to_f32")
    mag = _E2M1_MAG[a & 7]
    return np.where(a & 8, -mag, mag).astype(np.float32)


def ue8m0_ceil_f32(s: np.ndarray) -> np.ndarray:
    """The ue8m0 byte of the power of two at or above each binary32 `s`.

    Parameters
    ----------
    s : np.ndarray of float32, any shape
        Scales (the sign is ignored).

    Returns
    -------
    np.ndarray of uint8, shape of `s`
        For a positive normal s the byte 127 + ceil(log2 s), computed on
        the bits as SGLang's ``cast_to_ue8m0`` does (the exponent field,
        plus one when the mantissa field is non-zero: an exact power of two
        keeps its own), clamped to [1, 254] as its FP4 index packer does: a
        subnormal or zero s gives 1 (2^-126), s >= 2^127, +inf and NaN give
        254. difftest's UE8M0CeilF32.
    """
    a = _as_f32(s, "ue8m0_ceil_f32")
    u = a.view(np.uint32) & np.uint32(0x7FFFFFFF)
    e = (u >> 23).astype(np.int64) + ((u & 0x7FFFFF) != 0)
    e = np.where(u > 0x7F800000, 254, e)
    return np.clip(e, 1, 254).astype(np.uint8)


def ue8m0_to_f32(b: np.ndarray) -> np.ndarray:
    """The scale 2^(b - 127) of ue8m0 bytes, exactly (NaN for 0xFF).

    Parameters
    ----------
    b : np.ndarray of uint8, any shape
        ue8m0 bytes.

    Returns
    -------
    np.ndarray of float32, shape of `b`
        The scales; 0 gives 2^-127 (an f32 subnormal, exact).
    """
    a = _as_u8(b, "ue8m0_to_f32")
    with np.errstate(over="ignore"):  # 0xFF: 2^128 overflows, then NaN replaces it
        v = np.ldexp(np.float32(1), a.astype(np.int32) - 127).astype(np.float32)
    return np.where(a == 0xFF, np.float32(np.nan), v).astype(np.float32)
