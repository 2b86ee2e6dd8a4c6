#!/usr/bin/env python3
"""An exec-protocol topk_transform with one fault, for the shrink tests:
exact key32 top-K (ties by the lowest position), but every row's picks are
translated through page_table row 0 (the catalog's topk-page-row0).
Standard library only; fine for the small cases of testdata/small.toml."""

import json
import struct
import sys


def read(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    return {k: (h["shape"], data[8 + n + h["data_offsets"][0] : 8 + n + h["data_offsets"][1]]) for k, h in header.items()}, meta


def write(path, tensors):
    header, blobs, off = {}, [], 0
    for name, (shape, blob) in tensors.items():
        header[name] = {"dtype": "I32", "shape": shape, "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def key32(bits):
    return bits ^ (0xFFFFFFFF if bits & 0x80000000 else 0x80000000)


def main():
    ts, meta = read(sys.argv[1])
    p = json.loads(meta["params"])
    K, P, B, S, M = p["K"], p["P"], p["batch"], p["stride"], p["max_pages"]
    scores = struct.unpack("<%dI" % (B * S), ts["scores"][1])
    lens = struct.unpack("<%di" % B, ts["seq_lens"][1])
    table = struct.unpack("<%di" % (B * M), ts["page_table"][1])
    page, raw = [], []
    for b in range(B):
        L = lens[b]
        if L <= K:
            picks = list(range(L)) + [-1] * (K - L)
        else:
            order = sorted(range(L), key=lambda i: (-key32(scores[b * S + i]), i))
            picks = sorted(order[:K])
        raw += picks
        page += [-1 if i < 0 else table[0 * M + i // P] * P + i % P for i in picks]
    out = {"page_indices": ([B, K], struct.pack("<%di" % (B * K), *page))}
    if p.get("return_raw"):
        out["raw_indices"] = ([B, K], struct.pack("<%di" % (B * K), *raw))
    write(sys.argv[2], out)


main()
