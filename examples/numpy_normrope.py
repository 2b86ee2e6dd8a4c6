"""A complete NumPy implementation of norm_rope_store (docs/contracts/norm_rope_store.md), served.

    difftest run --suite default --run '^norm_rope_store/' \
        --impl 'serve:python -m kerneldiff serve examples/numpy_normrope.py'

It computes like a CUDA kernel: binary32 arithmetic throughout (NumPy's sums
of float32 are float32, pairwise), 1/sqrt correctly rounded to f32, then one
round-to-nearest-even into the stored format:

1. norm: rms  y = x * (1/sqrt(mean(x^2) + eps)) * w;
         layer y = (x - mean) * (1/sqrt(var + eps)) * w + b (two passes);
2. RoPE on dims [off, off+64): neox pairs (j, j+32), interleaved pairs
   (2j, 2j+1); (a, b) -> (a*c - b*s, a*s + b*c), c, s = freqs[pos][2j], [2j+1];
3. Hadamard (when on): butterfly in natural (Sylvester) order, then * 128^-1/2;
4. FP8 store: scale = max(amax, 1e-4) / 448, for ue8m0 rounded up to a power
   of two; codes = e4m3fn(z / scale), saturating to ±448, NaN -> 0x7F; the
   page layout is 128·P code bytes then P f32 scales (page_bytes = 132·P);
   BF16 store: bf16_rne(z) (page_bytes = 256·P);
   FP4 store (DeepSeek-V4.1, preset v4-fp4), per 32-value block b, in two
   stages as SGLang's fp4_indexer_rope.cuh: s1 = ue8m0 ceiling of
   max(amax, 6·2^-126) · f32(1/6), v = e2m1(z · 2^-e1) · s1; then
   s2 = ue8m0 ceiling of max(max|v| / 6, 1e-4), codes = e2m1(v / s2) with -0
   stored as +0; a page is 64·P packed bytes (dim 2i in the low nibble of
   byte i, 2i+1 in the high one) then P·4 scale bytes (page_bytes = 68·P);
5. tokens with out_loc < 0 are not written; no other byte of the cache is
   touched (it arrives holding the harness's canary bytes).

x arrives as np.uint16 bfloat16 bits (NumPy has no bfloat16).
"""

import numpy as np

import kerneldiff
from kerneldiff.numerics import (bf16_from_f32, bf16_to_f32, e2m1_from_f32, e2m1_to_f32, e4m3fn_from_f32,
                                 ue8m0_ceil_f32)

F32 = np.float32
DIM = 128
SCALE_FLOOR = F32(1e-4)
FP4_BLOCK = 32
FP4_FLOOR1 = F32(6 * 2.0 ** -126)  # stage 1's amax floor: s1 >= 2^-126


def _rsqrt(v):
    """1/sqrt(v) correctly rounded to f32 (CUDA's rsqrtf is within 2 ULP)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (1.0 / np.sqrt(v.astype(np.float64))).astype(F32)


def _norm(xs, weight, bias, norm, eps):
    w = weight.astype(F32)
    if norm == "rms":
        ms = np.sum(xs * xs, axis=1, dtype=F32) * F32(1.0 / DIM)
        r = _rsqrt(ms + eps)
        return xs * r[:, None] * w
    if norm == "layer":
        mean = np.sum(xs, axis=1, dtype=F32) * F32(1.0 / DIM)
        d = xs - mean[:, None]
        var = np.sum(d * d, axis=1, dtype=F32) * F32(1.0 / DIM)
        r = _rsqrt(var + eps)
        return d * r[:, None] * w + bias.astype(F32)
    raise ValueError(f"norm {norm!r}: must be 'rms' or 'layer'")


def _rope(y, cs, rope_offset, rope_style):
    j = np.arange(32)
    if rope_style == "interleaved":
        ia, ib = rope_offset + 2 * j, rope_offset + 2 * j + 1
    elif rope_style == "neox":
        ia, ib = rope_offset + j, rope_offset + j + 32
    else:
        raise ValueError(f"rope_style {rope_style!r}: must be 'neox' or 'interleaved'")
    c, s = cs[:, 0::2], cs[:, 1::2]
    a, b = y[:, ia], y[:, ib]
    y[:, ia] = a * c - b * s
    y[:, ib] = a * s + b * c


def _hadamard(y):
    """z_k = 128^-1/2 * sum_j (-1)^popcount(j & k) y_j, by butterflies in f32."""
    n = y.shape[0]
    w = 1
    while w < DIM:
        v = y.reshape(n, DIM // (2 * w), 2, w)
        a, b = v[:, :, 0, :].copy(), v[:, :, 1, :].copy()
        v[:, :, 0, :] = a + b
        v[:, :, 1, :] = a - b
        w *= 2
    y *= F32(1.0 / np.sqrt(128.0))


def _scales(z, scale_fmt):
    amax = np.max(np.abs(z), axis=1)  # NaN propagates: such a token is "don't care"
    amax = np.where(amax < SCALE_FLOOR, SCALE_FLOOR, amax)
    scale = amax / F32(448.0)
    if scale_fmt == "ue8m0":
        ok = np.isfinite(scale) & (scale > 0)
        frac, e = np.frexp(np.where(ok, scale, F32(1)))
        e = np.where(frac == 0.5, e - 1, e)  # exact powers of two stay
        scale = np.where(ok, np.ldexp(F32(1), e).astype(F32), scale)
    elif scale_fmt != "plain":
        raise ValueError(f"scale_fmt {scale_fmt!r}: must be 'plain' or 'ue8m0'")
    return scale.astype(F32)


def _pow2(e):
    """2^(e - 127) for ue8m0 bytes e in [1, 254], as f32 (exact)."""
    return np.ldexp(F32(1), e.astype(np.int32) - 127).astype(F32)


def _fp4(z):
    """The FP4 codes [n, 128] (uint8, 0x0-0xF) and ue8m0 scale bytes [n, 4]
    of tokens z [n, 128] f32, by the two-stage rule of the contract."""
    n = z.shape[0]
    blk = z.reshape(n, DIM // FP4_BLOCK, FP4_BLOCK)
    a1 = np.max(np.abs(blk), axis=2)  # NaN propagates: such a token is "don't care"
    e1 = ue8m0_ceil_f32(np.maximum(a1, FP4_FLOOR1) * F32(1 / 6))
    g = e2m1_from_f32(blk * _pow2(254 - e1.astype(np.int32))[..., None])  # z / s1: a power of two, exact
    v = e2m1_to_f32(g) * _pow2(e1)[..., None]
    a2 = np.max(np.abs(v), axis=2)
    e2 = ue8m0_ceil_f32(np.maximum(a2 / F32(6), SCALE_FLOOR))
    c = e2m1_from_f32(v * _pow2(254 - e2.astype(np.int32))[..., None])
    c = np.where(c == 0x8, np.uint8(0), c)  # -0 is stored as +0
    return c.reshape(n, DIM), e2


@kerneldiff.implements("norm_rope_store")
def norm_rope_store(x, weight, bias, freqs, positions, out_loc, cache, *, norm, rope_offset, rope_style,
                    store, scale_fmt, page_size, eps, hadamard=False, **params):
    """Write the keys of tokens with out_loc >= 0 into cache u8 [num_pages, page_bytes]."""
    tok = np.flatnonzero(out_loc >= 0)
    if tok.size == 0:
        return
    P = int(page_size)
    if P < 1 or P & (P - 1):
        raise ValueError(f"page_size {P} is not a power of two")
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        xs = bf16_to_f32(x[tok, :DIM])
        y = _norm(xs, weight, bias, norm, F32(eps))
        _rope(y, freqs[positions[tok]], int(rope_offset), rope_style)
        if hadamard:
            _hadamard(y)
        slots = out_loc[tok]
        page, off = slots >> (P.bit_length() - 1), slots & (P - 1)
        flat = cache.reshape(-1)
        page_bytes = cache.shape[1]
        if store == "bf16":
            at = page * page_bytes + off * (2 * DIM)
            flat[at[:, None] + np.arange(2 * DIM)] = bf16_from_f32(y).view(np.uint8).reshape(-1, 2 * DIM)
        elif store == "fp8":
            scale = _scales(y, scale_fmt)
            codes = e4m3fn_from_f32((y / scale[:, None]).astype(F32))
            base = page * page_bytes
            flat[(base + off * DIM)[:, None] + np.arange(DIM)] = codes
            flat[(base + DIM * P + off * 4)[:, None] + np.arange(4)] = scale.astype("<f4").view(np.uint8).reshape(-1, 4)
        elif store == "fp4":
            codes, scales = _fp4(y)
            base = page * page_bytes
            packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
            flat[(base + off * (DIM // 2))[:, None] + np.arange(DIM // 2)] = packed
            flat[(base + (DIM // 2) * P + off * 4)[:, None] + np.arange(4)] = scales
        else:
            raise ValueError(f"store {store!r}: must be 'fp8', 'bf16' or 'fp4'")
