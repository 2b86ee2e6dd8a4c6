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
  torch's round-to-nearest-even cast.

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


@kerneldiff.implements("norm_rope_store", tensors="torch")
def norm_rope_store(x, weight, bias, freqs, positions, out_loc, cache, *, norm, rope_offset, rope_style,
                    store, scale_fmt, page_size, eps, hadamard=False, **params):
    """Write tokens with out_loc >= 0 into cache u8 [num_pages, page_bytes]; see numpy_normrope.py."""
    if store not in ("fp8", "bf16"):  # FP4 keys (store "fp4") are not written here: not tested
        raise kerneldiff.Unsupported(f"store {store!r}: this example writes FP8 and BF16 keys only")
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
