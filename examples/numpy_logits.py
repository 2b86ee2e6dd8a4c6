"""A complete NumPy implementation of indexer_logits (docs/contracts/indexer_logits.md), served.

    difftest run --suite default --run '^indexer_logits/' \
        --impl 'serve:python -m kerneldiff serve examples/numpy_logits.py'

Per query row i (request b = i // next_n) and position s < L_i:

    logits[i][s] = scale(slot) · Σ_h weights[i][h] · ReLU(Σ_d q[i][h][d] · k(slot)[d])

with slot = page_table[b][s >> log2 P]·P + (s & (P − 1)) in 64-bit, and
k(slot) read from the paged cache that norm_rope_store writes, pages
page_stride bytes apart (the tight 132·P, 256·P or 68·P unless padded):

- FP8: 128·P e4m3fn code bytes, then P f32 scales; k = e4m3fn(code),
  scale(slot) = the slot's scale;
- BF16: 256·P bytes of bf16 values; scale 1;
- FP4 (DeepSeek-V4.1): 64·P packed e2m1 bytes (dim 2i in the low nibble of
  byte i, 2i+1 in the high one), then P·4 ue8m0 bytes, one per 32 dims;
  k = e2m1(code) · 2^(e − 127), scale 1. FP4 queries are [.., H, 68]: each
  head's 64 packed bytes, then its 4 scale bytes.

Every decoded value is exact in f32; the dot products and the head sum are
f32 matrix products (any summation order, FMA or not: what the contract's
bound admits), the scale multiplies at the end. With next_n > 1, q is
[B, next_n, H, ·] and seq_lens [B, next_n] (one length per query row). The
positions s ≥ L_i are −inf with ``clean`` and left alone without it.
bf16 logits (``logits_dtype = "bf16"``) are the f32 result rounded once to
nearest even.
"""

import numpy as np

import kerneldiff
from kerneldiff.numerics import bf16_from_f32, bf16_to_f32, e2m1_to_f32, e4m3fn_to_f32, ue8m0_to_f32

F32 = np.float32
DIM = 128
#: e4m3fn value of every code byte.
E4M3 = e4m3fn_to_f32(np.arange(256, dtype=np.uint8))
#: e2m1 values of the low and high nibbles of every packed FP4 byte.
E2M1_LO = e2m1_to_f32(np.arange(256, dtype=np.uint8) & 0xF)
E2M1_HI = e2m1_to_f32(np.arange(256, dtype=np.uint8) >> 4)
#: the scale 2^(e − 127) of every ue8m0 byte (0xFF: NaN).
UE8M0 = ue8m0_to_f32(np.arange(256, dtype=np.uint8))


def _fp4_values(packed, scales):
    """[n, 128] f32 values of n FP4 records: packed [n, 64] code bytes,
    scales [n, 4] ue8m0 bytes."""
    v = np.empty((packed.shape[0], DIM), F32)
    v[:, 0::2] = E2M1_LO[packed]
    v[:, 1::2] = E2M1_HI[packed]
    with np.errstate(over="ignore", invalid="ignore"):  # 6·2^127 overflows: a "don't care" key
        return v * np.repeat(UE8M0[scales], 32, axis=1)


def _queries(q, store, rows, heads):
    """[rows, H, 128] f32 queries."""
    if store == "fp8":
        return E4M3[q.reshape(rows, heads, DIM)]
    if store == "bf16":
        return bf16_to_f32(q.reshape(rows, heads, DIM))
    rec = q.reshape(rows * heads, 68)
    return _fp4_values(rec[:, :64], rec[:, 64:]).reshape(rows, heads, DIM)


def _keys(cache, pages, store, P, L):
    """The f32 keys [L, 128] and scales [L] of the first L positions of a
    row whose pages are `pages` (ids into cache rows)."""
    pg = cache[pages]  # [n, page_stride]: only the pages the row uses
    n = pg.shape[0]
    if store == "fp8":
        k = E4M3[pg[:, : DIM * P].reshape(n * P, DIM)]
        s = np.ascontiguousarray(pg[:, DIM * P : DIM * P + 4 * P]).view("<f4").reshape(n * P)
    elif store == "bf16":
        k = bf16_to_f32(np.ascontiguousarray(pg[:, : 2 * DIM * P]).view("<u2").reshape(n * P, DIM))
        s = None
    else:
        packed = pg[:, : 64 * P].reshape(n * P, 64)
        scales = pg[:, 64 * P : 68 * P].reshape(n * P, 4)
        k = _fp4_values(packed, scales)
        s = None
    return k[:L], (s[:L] if s is not None else None)


@kerneldiff.implements("indexer_logits")
def indexer_logits(q, weights, cache, seq_lens, page_table, logits, *, store, page_size, heads, clean=False,
                   next_n=1, **params):
    """Fill logits f32 or bf16 [B·next_n, stride] (see the module docstring)."""
    if store not in ("fp8", "bf16", "fp4"):
        raise ValueError(f"store {store!r}: must be 'fp8', 'bf16' or 'fp4'")
    P, H, N = int(page_size), int(heads), int(next_n)
    rows, stride = logits.shape
    lens = seq_lens.reshape(-1)  # [B] or [B, next_n]: one length per query row
    qs = _queries(q, store, rows, H)
    w = weights.reshape(rows, H).astype(F32)
    bf16_out = logits.dtype == np.uint16  # BF16 arrives as bit patterns
    for i in range(rows):
        L = int(lens[i])
        pages = page_table[i // N, : (L + P - 1) // P]
        with np.errstate(over="ignore", invalid="ignore"):
            k, scale = _keys(cache, pages, store, P, L)
            dots = k @ qs[i].T                       # [L, H]: each head's dot product, f32
            y = np.maximum(dots, F32(0)) @ w[i]      # ReLU, then the weighted head sum, f32
            y = np.where(np.isnan(dots).any(axis=1), F32(np.nan), y)  # a NaN key stays NaN
            if scale is not None:
                y = y * scale
        y = y.astype(F32)
        if bf16_out:
            logits[i, :L] = bf16_from_f32(y)
            if clean:
                logits[i, L:] = 0xFF80  # bf16 −inf
        else:
            logits[i, :L] = y
            if clean:
                logits[i, L:] = -np.inf
