#!/usr/bin/env python3
"""exec_emu: the exec protocol (docs/interfaces.md) in front of emu_run, so the
harness checks the CUDA kernels' own source on a machine without a GPU:

    scripts/test-kernels-emu --harness   # builds build/emu/emu_run, runs quick
    difftest run --suite default \
        --impl 'exec:python3 kernels/emu/exec_emu.py build/emu/emu_run'

Usage: exec_emu.py EMU_RUN in.safetensors out.safetensors
Reads the inputs and params of one case, maps the contract's params to the
C structs of kernels/*/*.h (norm "rms"/"layer" -> KD_NORM_*, ...), runs
EMU_RUN in a scratch folder and writes the outputs. Standard library only.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile

DTYPE_SIZE = {"F32": 4, "I32": 4, "I64": 8, "U8": 1, "BF16": 2, "F16": 2, "U16": 2}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    tensors = {}
    for name, h in header.items():
        a, b = h["data_offsets"]
        tensors[name] = (h["dtype"], h["shape"], data[base + a : base + b])
    return tensors, meta


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, (dtype, shape, blob) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def log2_exact(p, what):
    if p < 1 or p & (p - 1):
        sys.exit("exec_emu: %s %d is not a power of two" % (what, p))
    return p.bit_length() - 1


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: exec_emu.py EMU_RUN in.safetensors out.safetensors")
    runner, inp, outp = sys.argv[1:]
    tensors, meta = read_safetensors(inp)
    kernel = meta.get("kernel")
    params = json.loads(meta.get("params", "{}"))
    with tempfile.TemporaryDirectory(prefix="exec-emu-") as d:
        for name, (_, _, blob) in tensors.items():
            with open(os.path.join(d, name + ".bin"), "wb") as f:
                f.write(blob)
        if kernel == "topk_transform":
            kv = {
                "K": params["K"],
                "batch": params["batch"],
                "stride": params["stride"],
                "max_pages": params["max_pages"],
                "log2_page": log2_exact(params["P"], "P"),
                "return_raw": 1 if params.get("return_raw") else 0,
                # KD_TOPK_SCORES_F32, _BF16, _F16 (topk.h); absent means f32
                "score_dtype": {"f32": 0, "bf16": 1, "f16": 2}[params.get("score_dtype") or "f32"],
            }
            which, outs = "topk", ["page_indices"] + (["raw_indices"] if kv["return_raw"] else [])
            shapes = {o: [params["batch"], params["K"]] for o in outs}
            dtypes = {o: "I32" for o in outs}
        elif kernel == "norm_rope_store":
            xs = tensors["x"][1]
            kv = {
                "x_stride": xs[1],
                "num_tokens": xs[0],
                "max_pos": tensors["freqs"][1][0],
                "num_pages": params["num_pages"],
                "eps": repr(float(params["eps"])),
                "log2_page": log2_exact(params["page_size"], "page_size"),
                "norm": {"rms": 0, "layer": 1}[params["norm"]],
                "rope_offset": params["rope_offset"],
                "rope_style": {"neox": 0, "interleaved": 1}[params["rope_style"]],
                "hadamard": 1 if params["hadamard"] else 0,
                "store": {"fp8": 0, "bf16": 1, "fp4": 2}[params["store"]],
                "scale_fmt": {"plain": 0, "ue8m0": 1}[params.get("scale_fmt") or "plain"],
                "stages": {"": 0, "store": 1}[params.get("stages") or ""],
            }
            which, outs = "normrope", ["cache"]
            shapes = {"cache": tensors["cache"][1]}
            dtypes = {"cache": "U8"}
            if params["norm"] == "rms":
                os.remove(os.path.join(d, "bias.bin"))
                open(os.path.join(d, "bias.bin"), "wb").close()  # NULL bias
        elif kernel == "indexer_logits":
            tight = {"fp8": 132, "bf16": 256, "fp4": 68}[params["store"]] * params["page_size"]
            next_n = params.get("next_n") or 1
            bf16 = params.get("logits_dtype") == "bf16"
            kv = {
                "batch": params["batch"],
                "heads": params["heads"],
                "stride": params["stride"],
                "max_pages": params["max_pages"],
                "num_pages": params["num_pages"],
                "log2_page": log2_exact(params["page_size"], "page_size"),
                "store": {"fp8": 0, "bf16": 1, "fp4": 2}[params["store"]],
                "clean": 1 if params["clean"] else 0,
                "page_stride": params.get("page_stride") or tight,
                "next_n": next_n,
                "logits_bf16": 1 if bf16 else 0,
            }
            which, outs = "logits", ["logits"]
            shapes = {"logits": [params["batch"] * next_n, params["stride"]]}
            dtypes = {"logits": "BF16" if bf16 else "F32"}
        else:
            sys.exit("exec_emu: unknown kernel %r" % kernel)
        with open(os.path.join(d, "params.txt"), "w") as f:
            for k, v in kv.items():
                f.write("%s %s\n" % (k, v))
        r = subprocess.run([runner, which, d])
        if r.returncode != 0:
            sys.exit(r.returncode)
        result = {}
        for o in outs:
            with open(os.path.join(d, o + ".bin"), "rb") as f:
                result[o] = (dtypes[o], shapes[o], f.read())
    write_safetensors(outp, result)


if __name__ == "__main__":
    main()
