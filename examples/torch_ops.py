"""PyTorch implementations of topk_transform and norm_rope_store, served on
the device you pick (needs torch; nothing here is imported without it).

    difftest run --suite default \
        --impl 'serve:python -m kerneldiff serve examples/torch_ops.py --device cuda:0'
    KD_DEVICE=cpu difftest run --suite quick \
        --impl 'serve:python -m kerneldiff serve examples/torch_ops.py'

On a GPU the package copies the inputs and each output's whole guarded
buffer to the device, hands these functions the middle, and copies
everything back after a synchronize (docs/python.md, serve protocol); kernel time
comes from CUDA events. These are plain torch ops written to the contracts
(docs/contracts/topk_transform.md and docs/contracts/norm_rope_store.md), the way a PyTorch fallback would be written if it were
exact:

- top-k ranks by key32 (torch.topk on a signed int32 image of the key, so
  -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN); torch.topk on the raw
  floats would rank every NaN largest and tie -0 with +0;
- the store saturates before converting to float8_e4m3fn (torch's cast is
  not saturating: above 464 it gives NaN), and rounds to bfloat16 with
  torch's round-to-nearest-even cast;
- the FP4 store (DeepSeek-V4.1) quantises each 32-value block in the
  contract's two stages (see numpy_normrope.py): e2m1 rounding by counting
  the midpoints below each magnitude (ties to the even code), ue8m0
  ceilings on the f32 bits, codes packed two a byte (dim 2i low).

KD_TORCH_INTERMEDIATE=bf16 rounds the 128 values to bfloat16 after the
norm, after RoPE and after the Hadamard transform, as a chain of separate
bf16 ops does (SGLang's unfused V3.2 path): such a store fails the f32
contract, is diagnosed "passes as intermediate=bf16", and passes with
``difftest run --param intermediate=bf16``.
"""

import os


import torch

import kerneldiff

_BF16_STAGES = os.environ.get("KD_TORCH_INTERMEDIATE", "f32") == "bf16"


def _stage(y):
    """y rounded to bfloat16 between stages when KD_TORCH_INTERMEDIATE=bf16."""
    return y.to(torch.bfloat16).to(torch.float32) if _BF16_STAGES else y


def _signed_key(scores):
    """An int32 tensor whose signed order is the key32 order of f32 `scores`.

    key32 = bits ^ (sign ? 0xFFFFFFFF : 0x80000000) compared unsigned; xor
    with 0x80000000 makes that a signed comparison: bits for positive
    values, bits ^ 0x7FFFFFFF for negative ones.
    """
    i = scores.contiguous().view(torch.int32)
    return torch.where(i < 0, i ^ 0x7FFFFFFF, i)


@kerneldiff.implements("topk_transform", tensors="torch")
def topk_transform(scores, seq_lens, page_table, page_indices, raw_indices=None, *, K, P, **params):
    """Fill page_indices (and raw_indices) i32 [B, K]; see numpy_topk.py."""
    log2p = P.bit_length() - 1
    if scores.dtype == torch.bfloat16:  # 16-bit scores rank as their exact f32 widening (Key16)
        scores = (scores.view(torch.int16).to(torch.int32) << 16).view(torch.float32)
    elif scores.dtype == torch.float16:  # torch's cast drops NaN payloads; NumPy's keeps them
        scores = torch.from_numpy(scores.cpu().numpy().astype("float32")).to(scores.device)
    dev = scores.device
    lens = seq_lens.tolist()
    for b, L in enumerate(lens):
        raw = torch.full((K,), -1, dtype=torch.int64, device=dev)
        if L <= K:
            raw[:L] = torch.arange(L, device=dev)
        else:
            raw[:] = torch.topk(_signed_key(scores[b, :L]), K, sorted=False).indices
        valid = raw >= 0
        r = raw.clamp(min=0)
        slots = page_table[b, r >> log2p].to(torch.int64) * P + (r & (P - 1))
        page_indices[b] = torch.where(valid, slots, torch.full_like(slots, -1)).to(torch.int32)
        if raw_indices is not None:
            raw_indices[b] = raw.to(torch.int32)


def _hadamard(y):
    n = y.shape[0]
    w = 1
    while w < 128:
        v = y.view(n, 128 // (2 * w), 2, w)
        a, b = v[:, :, 0, :].clone(), v[:, :, 1, :].clone()
        v[:, :, 0, :] = a + b
        v[:, :, 1, :] = a - b
        w *= 2
    y.mul_(128 ** -0.5)


_E2M1_MAG = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
_E2M1_MIDS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)


def _e2m1(q):
    """e2m1 codes (uint8, 0x0-0xF) of f32 q: nearest, ties to the even code,
    saturating at ±6, the sign kept (NaN gives 0x7, as the contract's
    reference)."""
    mids = torch.tensor(_E2M1_MIDS, dtype=torch.float32, device=q.device)
    mag = q.abs().unsqueeze(-1)
    idx = (mag > mids).sum(-1)
    tie = mag == mids
    idx = torch.where(tie.any(-1), tie.int().argmax(-1) + (tie.int().argmax(-1) & 1), idx)
    code = (idx | (torch.signbit(q).to(idx.dtype) << 3)).to(torch.uint8)
    return torch.where(torch.isnan(q), torch.full_like(code, 7), code)


def _ue8m0_ceil(s):
    """The ue8m0 byte of the power of two at or above f32 s, on its bits,
    clamped to [1, 254] (SGLang's cast_to_ue8m0)."""
    u = s.contiguous().view(torch.int32) & 0x7FFFFFFF
    e = (u >> 23) + ((u & 0x7FFFFF) != 0).to(torch.int32)
    e = torch.where(u > 0x7F800000, torch.full_like(e, 254), e)
    return e.clamp(1, 254)


def _pow2(e):
    """2^(e − 127) as f32 for ue8m0 bytes e in [1, 254] (exact)."""
    return torch.ldexp(torch.ones_like(e, dtype=torch.float32), e - 127)


def _fp4(y):
    """Codes [n, 128] and scale bytes [n, 4] of tokens y [n, 128], two stages."""
    blk = y.view(y.shape[0], 4, 32)
    a1 = blk.abs().amax(dim=2)
    e1 = _ue8m0_ceil(torch.clamp(a1, min=6 * 2.0 ** -126) * torch.tensor(1 / 6, dtype=torch.float32))
    g = _e2m1(blk * _pow2(254 - e1)[..., None])
    mag = torch.tensor(_E2M1_MAG, dtype=torch.float32, device=y.device)[(g & 7).long()]
    v = torch.where(g >= 8, -mag, mag) * _pow2(e1)[..., None]
    a2 = v.abs().amax(dim=2)
    e2 = _ue8m0_ceil(torch.clamp(a2 / 6, min=torch.tensor(1e-4, dtype=torch.float32).item()))
    c = _e2m1(v * _pow2(254 - e2)[..., None])
    c = torch.where(c == 8, torch.zeros_like(c), c)  # −0 is stored as +0
    return c.view(y.shape[0], 128), e2.to(torch.uint8)


@kerneldiff.implements("norm_rope_store", tensors="torch")
def norm_rope_store(x, weight, bias, freqs, positions, out_loc, cache, *, norm, rope_offset, rope_style,
                    store, scale_fmt, page_size, eps, hadamard=False, **params):
    """Write tokens with out_loc >= 0 into cache u8 [num_pages, page_bytes]; see numpy_normrope.py."""
    tok = torch.nonzero(out_loc >= 0).flatten()
    if tok.numel() == 0:
        return
    P = int(page_size)
    xs = x[tok, :128].to(torch.float32)
    w = weight.to(torch.float32)
    if norm == "rms":
        y = xs * torch.rsqrt((xs * xs).sum(dim=1) / 128 + eps)[:, None] * w
    else:
        d = xs - (xs.sum(dim=1) / 128)[:, None]
        y = d * torch.rsqrt((d * d).sum(dim=1) / 128 + eps)[:, None] * w + bias.to(torch.float32)
    y = _stage(y)
    cs = freqs[positions[tok]]
    c, s = cs[:, 0::2], cs[:, 1::2]
    j = torch.arange(32, device=x.device)
    if rope_style == "interleaved":
        ia, ib = rope_offset + 2 * j, rope_offset + 2 * j + 1
    else:
        ia, ib = rope_offset + j, rope_offset + j + 32
    a, b = y[:, ia], y[:, ib]
    y[:, ia], y[:, ib] = a * c - b * s, a * s + b * c
    y = _stage(y)
    if hadamard:
        _hadamard(y)
        y = _stage(y)
    slots = out_loc[tok]
    page, off = slots >> (P.bit_length() - 1), slots & (P - 1)
    flat = cache.view(-1)
    page_bytes = cache.shape[1]
    if store == "bf16":
        at = (page * page_bytes + off * 256)[:, None] + torch.arange(256, device=x.device)
        flat[at.flatten()] = y.to(torch.bfloat16).contiguous().view(torch.uint8).flatten()
        return
    if store == "fp4":
        codes, scales = _fp4(y)
        base = page * page_bytes
        at = (base + off * 64)[:, None] + torch.arange(64, device=x.device)
        flat[at.flatten()] = (codes[:, 0::2] | (codes[:, 1::2] << 4)).flatten()
        at = (base + 64 * P + off * 4)[:, None] + torch.arange(4, device=x.device)
        flat[at.flatten()] = scales.flatten()
        return
    amax = y.abs().amax(dim=1)
    amax = torch.where(amax < 1e-4, torch.full_like(amax, 1e-4), amax)  # NaN stays NaN
    scale = amax / 448
    if scale_fmt == "ue8m0":
        ok = torch.isfinite(scale) & (scale > 0)
        mant, e = torch.frexp(torch.where(ok, scale, torch.ones_like(scale)))
        e = torch.where(mant == 0.5, e - 1, e)
        scale = torch.where(ok, torch.ldexp(torch.ones_like(scale), e), scale)
    q = (y / scale[:, None]).clamp(-448.0, 448.0)
    codes = q.to(torch.float8_e4m3fn).view(torch.uint8)
    base = page * page_bytes
    at = (base + off * 128)[:, None] + torch.arange(128, device=x.device)
    flat[at.flatten()] = codes.flatten()
    at = (base + 128 * P + off * 4)[:, None] + torch.arange(4, device=x.device)
    flat[at.flatten()] = scale.to(torch.float32).contiguous().view(torch.uint8).flatten()
