"""A complete NumPy implementation of topk_transform (docs/contracts/topk_transform.md), served.

    difftest run --suite default --run '^topk_transform/' \
        --impl 'serve:python -m kerneldiff serve examples/numpy_topk.py'
    difftest run --suite default --run '^topk_transform/' \
        --impl 'exec:python -m kerneldiff exec examples/numpy_topk.py'

Semantics, per row b with L = seq_lens[b]:

- order: key32(x) = bits(x) ^ (sign ? 0xFFFFFFFF : 0x80000000) compared as
  unsigned, so -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN and ties are
  equal bit patterns (what radix-select kernels implement; torch.topk
  differs: NaN is largest there whatever its sign);
- L <= K: raw = 0, 1, ..., L-1 then -1 padding, in that order;
- L > K: K distinct positions of [0, L) such that no unchosen position
  ranks above a chosen one (np.argpartition on the keys; order unspecified);
- slot(i) = page_table[b][i >> log2 P] * P + (i & (P-1)), in 64-bit, and
  -1 where raw is -1.

Nothing past L in a row is read.
"""

import numpy as np

import kerneldiff
from kerneldiff.numerics import bf16_to_f32, key32


@kerneldiff.implements("topk_transform")
def topk_transform(scores, seq_lens, page_table, page_indices, raw_indices=None, *, K, P, **params):
    """Fill page_indices (and raw_indices) i32 [B, K] from scores f32, bf16 or f16 [B, stride]."""
    if P < 1 or P & (P - 1):
        raise ValueError(f"P = {P} is not a power of two")
    # 16-bit scores rank as their exact f32 widening (the contract's Key16
    # order): bf16 arrives as bit patterns (uint16), f16 as float16.
    if params.get("score_dtype") == "bf16":
        scores = bf16_to_f32(scores)
    elif scores.dtype == np.float16:
        scores = scores.astype(np.float32)
    log2p = P.bit_length() - 1
    for b in range(scores.shape[0]):
        L = int(seq_lens[b])
        raw = np.full(K, -1, dtype=np.int64)
        if L <= K:
            raw[:L] = np.arange(L)
        else:
            keys = key32(scores[b, :L])
            raw[:] = np.argpartition(keys, L - K)[L - K :]
        picked = raw[raw >= 0]
        slots = np.full(K, -1, dtype=np.int64)
        slots[: picked.size] = page_table[b, picked >> log2p].astype(np.int64) * P + (picked & (P - 1))
        if slots.size and (slots.max() > np.iinfo(np.int32).max or slots.min() < -1):
            raise OverflowError(f"row {b}: a slot does not fit in int32 (the harness should have rejected the case)")
        page_indices[b] = slots
        if raw_indices is not None:
            raw_indices[b] = raw
