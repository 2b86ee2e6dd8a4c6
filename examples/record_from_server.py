"""Capture real calls of an op from a (toy) serving loop, then test on them.

    python examples/record_from_server.py --out captures/     # serve a while, record 8 calls
    difftest run --suite captures/ \
        --impl 'serve:python -m kerneldiff serve examples/record_from_server.py'

`fast_topk` stands for a kernel library's out-param op, e.g. sgl-kernel's
``topk_transform(scores, seq_lens, page_table, out_page_indices, page_size,
out_raw_indices)``: it fills preallocated outputs and returns nothing. Two
things are shown:

1. ``kerneldiff.record`` wraps the op where the serving stack calls it, maps
   the op's argument names to contract names, and writes one capture file
   per call it picks (the first ``--limit`` calls of a batch of more than one
   row here). The captures hold the inputs as the op saw them: decode
   batches whose rows share lengths, long and short rows, a paged allocator's
   page table: the inputs a synthetic suite can miss.
2. ``@kerneldiff.implements`` adapts the same op to the contract, so this
   file is also the implementation served against those captures (and
   against the default suite).
"""

import argparse
import os
import sys
import tempfile

import numpy as np

import kerneldiff
from kerneldiff.numerics import key32

PAGE = 64
K = 512


def fast_topk(scores, seq_lens, page_table, out_page_indices, page_size, out_raw_indices=None):
    """The "library" op: top-K slots per row in the key32 order (out-param style)."""
    k = out_page_indices.shape[1]
    log2p = page_size.bit_length() - 1
    for b in range(scores.shape[0]):
        L = int(seq_lens[b])
        raw = np.full(k, -1, dtype=np.int64)
        if L <= k:
            raw[:L] = np.arange(L)
        else:
            raw[:] = np.argpartition(key32(scores[b, :L]), L - k)[L - k:]
        picked = raw[raw >= 0]
        slots = np.full(k, -1, dtype=np.int64)
        slots[: picked.size] = page_table[b, picked >> log2p].astype(np.int64) * page_size + (picked & (page_size - 1))
        out_page_indices[b] = slots
        if out_raw_indices is not None:
            out_raw_indices[b] = raw


@kerneldiff.implements("topk_transform")
def served_topk(scores, seq_lens, page_table, page_indices, raw_indices=None, *, P, **params):
    """The contract's names -> the op's: wrapping an out-param op is one call."""
    fast_topk(scores, seq_lens, page_table, page_indices, P, raw_indices)


def toy_server(op, steps, rng):
    """A decode loop: requests join with a prompt, grow one token per step, leave."""
    pool = list(rng.permutation(4096))  # physical pages, handed out by a free list
    reqs = []  # [length, pages]
    for step in range(steps):
        while len(reqs) < 6 and rng.random() < 0.5:
            n = int(rng.choice([300, 2000, 2000, 9000]))
            reqs.append([n, [pool.pop() for _ in range((n + PAGE) // PAGE)]])
        if not reqs:
            continue
        for r in reqs:
            r[0] += 1
            if r[0] > len(r[1]) * PAGE:
                r[1].append(pool.pop())
        B = len(reqs)
        lens = np.array([r[0] for r in reqs], dtype=np.int32)
        stride = int(lens.max())
        table = np.zeros((B, max(len(r[1]) for r in reqs)), dtype=np.int32)
        for b, r in enumerate(reqs):
            table[b, : len(r[1])] = r[1]
        scores = rng.standard_normal((B, stride)).astype(np.float32)
        scores[np.arange(stride)[None, :] >= lens[:, None]] = np.inf  # past the length: garbage
        out = np.empty((B, K), dtype=np.int32)
        op(scores, lens, table, out, PAGE)
        if rng.random() < 0.15:
            for p in reqs.pop(int(rng.integers(len(reqs))))[1]:
                pool.append(p)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="folder for the captures (default: a new temporary folder)")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--limit", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    out = args.out or tempfile.mkdtemp(prefix="kerneldiff-captures-")
    op = kerneldiff.record(
        fast_topk, out, kernel="topk_transform",
        map={"scores": "scores", "seq_lens": "seq_lens", "page_table": "page_table",
             "out_page_indices": "page_indices", "out_raw_indices": "raw_indices"},
        params={"P": kerneldiff.arg("page_size")},  # K and return_raw follow from the outputs
        limit=args.limit, when=lambda a: a["scores"].shape[0] > 1, on_error="raise")
    toy_server(op, args.steps, np.random.default_rng(args.seed))
    me = os.path.relpath(os.path.abspath(__file__))
    print(f"{op.calls} calls, {len(op.captured)} captured in {out}:")
    for p in op.captured:
        print("  " + p)
    print("test on them:")
    print(f"  difftest run --suite {out} --impl 'serve:python -m kerneldiff serve {me}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
