#!/usr/bin/env python3
"""Independent known answers for package rng, in plain Python 3 (no
third-party modules): SplitMix64, CaseKey, and SHA-256 digests of Philox
streams and of their uniform transform. The Go tests pin the values this
prints (rng/*_test.go); rerun it to check them:

    python3 difftest/rng/testdata/known_answers.py
"""

import hashlib
import struct

M64 = (1 << 64) - 1
M32 = (1 << 32) - 1
GOLDEN = 0x9E3779B97F4A7C15


def splitmix64(x):
    z = (x + GOLDEN) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & M64
    return h


def case_key(seed, case_id):
    return splitmix64(splitmix64(seed) ^ fnv1a64(case_id.encode("utf-8")))


def philox4x32_10(ctr, key):
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for r in range(10):
        if r:
            k0 = (k0 + 0x9E3779B9) & M32
            k1 = (k1 + 0xBB67AE85) & M32
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & M32, (p0 >> 32) ^ c3 ^ k1, p0 & M32
    return [c0, c1, c2, c3]


def stream_words(key, tensor, block, n):
    out = []
    while len(out) < n:
        out += philox4x32_10(
            [block & M32, (block >> 32) & M32, tensor, 0], [key & M32, key >> 32]
        )
        block += 1
    return out[:n]


def main():
    s = 0
    print("SplitMix64 from state 0:")
    for _ in range(5):
        print("  %016x" % splitmix64(s))
        s = (s + GOLDEN) & M64

    print("Philox4x32-10 known answers:")
    for ctr, key in [
        ([0, 0, 0, 0], [0, 0]),
        ([M32] * 4, [M32] * 2),
        ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0]),
    ]:
        print("  " + " ".join("%08x" % w for w in philox4x32_10(ctr, key)))

    print("CaseKey:")
    for seed, cid in [(0, ""), (1, "topk/gaussian-L1000"), (M64, "normrope/v4-bf16/N96")]:
        print("  (%d, %r) %016x" % (seed, cid, case_key(seed, cid)))

    print("stream digests, SHA-256 of the words little-endian:")
    streams = [
        (case_key(1, "topk/gaussian-L1000"), 0, 0, 1024),
        (0x0123456789ABCDEF, 3, 5 << 32, 1001),
        (M64, M32, M64 - 1, 16),  # the block counter wraps past 2^64
    ]
    for key, tensor, block, n in streams:
        w = stream_words(key, tensor, block, n)
        d = hashlib.sha256(struct.pack("<%dI" % n, *w)).hexdigest()
        print("  key %016x tensor %d block %d n %d: %s" % (key, tensor, block, n, d))

    print("uniform digest, SHA-256 of 1000 float64 little-endian:")
    key = case_key(1, "topk/gaussian-L1000")
    w = stream_words(key, 1, 7 << 32, 1000)
    u = [(x >> 8) * 2.0**-24 for x in w]
    print("  key %016x tensor 1 block 7<<32: %s" % (key, hashlib.sha256(struct.pack("<1000d", *u)).hexdigest()))


if __name__ == "__main__":
    main()
