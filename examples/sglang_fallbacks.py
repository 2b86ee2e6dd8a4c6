"""SGLang's own PyTorch fallbacks, read from its pinned wheel and served.

Nothing of SGLang is in this repository: the functions are read at start-up
from the sglang 0.5.23 wheel (fetched once, by version, with
``pip download --no-deps sglang==0.5.23``) and only their definitions are
executed, with torch, so none of SGLang's heavy imports is needed.

    pip download --no-deps sglang==0.5.23 -d ~/.cache/kerneldiff
    KD_SGLANG_WHEEL=~/.cache/kerneldiff/sglang-0.5.23-*.whl KD_DEVICE=cpu \\
    difftest run --suite default --run '^(topk_transform|indexer_logits)/' --diagnose \\
        --impl 'serve:python -m kerneldiff serve examples/sglang_fallbacks.py'

- topk_transform: ``topk_transform_pytorch_vectorized`` (torch.topk over the
  scores with positions >= L masked to -inf, -inf picks emitted as -1);
- indexer_logits: ``fp8_paged_mqa_logits_torch`` (FP8 store, P = 64,
  next_n = 1 and contiguous pages only: other cases raise
  kerneldiff.Unsupported and are reported not tested; it computes with
  clean_logits false, and for a clean case the positions past each row's
  length are set to -inf here, as a caller wanting DeepGEMM's clean_logits
  would). Its bf16 bmm rounds each dot product to bf16, so it passes with
  ``--param accum_bits=8``.
"""

import ast
import glob
import os
import zipfile

import torch
import torch.nn.functional as F

import kerneldiff

_MODULE = "sglang/srt/layers/attention/dsv4/indexer.py"
_WANT = ("_topk_transform_vectorized", "topk_transform_pytorch_vectorized", "fp8_paged_mqa_logits_torch")


def _load():
    """Execute the wanted function definitions of SGLang's indexer.py."""
    pattern = os.path.expanduser(os.environ.get("KD_SGLANG_WHEEL", "~/.cache/kerneldiff/sglang-0.5.23-*.whl"))
    wheels = sorted(glob.glob(pattern))
    if not wheels:
        raise SystemExit(f"no sglang wheel matches {pattern}: pip download --no-deps sglang==0.5.23 -d ~/.cache/kerneldiff")
    with zipfile.ZipFile(wheels[-1]) as z:
        tree = ast.parse(z.read(_MODULE).decode(), _MODULE)
    tree.body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in _WANT]
    ns = {"torch": torch, "F": F, "_arange_cache": {}, "FP8_DTYPE": torch.float8_e4m3fn}
    exec("from typing import *\n", ns)
    exec(compile(tree, _MODULE, "exec"), ns)
    return ns


_NS = _load()


@kerneldiff.implements("topk_transform", tensors="torch")
def topk_transform(scores, seq_lens, page_table, page_indices, raw_indices=None, *, K, P, **params):
    """SGLang's topk_transform_pytorch_vectorized, called as SGLang calls it."""
    _NS["topk_transform_pytorch_vectorized"](scores, seq_lens, page_table, page_indices, P, raw_indices)


@kerneldiff.implements("indexer_logits", tensors="torch")
def indexer_logits(q, weights, cache, seq_lens, page_table, logits, *, store, page_size, heads, clean, **params):
    """SGLang's fp8_paged_mqa_logits_torch on the contract's tensors."""
    if store != "fp8" or page_size != 64:
        raise kerneldiff.Unsupported(f"store {store!r}, page_size {page_size}: fp8_paged_mqa_logits_torch takes FP8 keys in pages of 64 only")
    if params.get("next_n", 1) != 1:
        raise kerneldiff.Unsupported(f"next_n {params['next_n']}: fp8_paged_mqa_logits_torch asserts one query per request")
    if params.get("page_stride", 64 * 132) != 64 * 132:
        raise kerneldiff.Unsupported(f"page_stride {params['page_stride']}: fp8_paged_mqa_logits_torch views the cache as contiguous 64 × 132-byte pages")
    B = q.shape[0]
    q8 = q.view(torch.float8_e4m3fn).reshape(B, 1, heads, 128)
    kv = cache.view(torch.float8_e4m3fn).reshape(cache.shape[0], 64, 1, 132)
    out = _NS["fp8_paged_mqa_logits_torch"](q8, kv, weights, seq_lens, page_table, None, logits.shape[1], False)
    logits.copy_(out)
    if clean:
        pos = torch.arange(logits.shape[1], device=logits.device).unsqueeze(0)
        logits.masked_fill_(pos >= seq_lens.unsqueeze(1), float("-inf"))
