"""The package's contracts come from contracts.json (``difftest list
contracts --json``) and agree with the repository's other lists of kernels
(docs/adding-a-kernel.md)."""

import json
import os

import numpy as np
import pytest

from conftest import ROOT
from kerneldiff import contracts
from kerneldiff.contracts import CONTRACTS, OutputSpec, lookup, output_specs


def _entries_contracts():
    """Contract names of kernels/entries.txt (the CUDA entry points, generated from the kernels' headers)."""
    path = os.path.join(ROOT, "kernels", "entries.txt")
    if not os.path.exists(path):
        pytest.skip("not in a kerneldiff checkout")
    with open(path) as f:
        return {l.split("\t")[0] for l in f if l.strip() and not l.startswith("#")}


def test_contracts_are_the_generated_file():
    with open(os.path.join(os.path.dirname(contracts.__file__), "contracts.json")) as f:
        doc = json.load(f)
    assert doc["generated_by"] == "difftest list contracts --json"
    assert list(CONTRACTS) == [c["name"] for c in doc["contracts"]]


def test_every_cuda_kernel_has_a_contract():
    assert _entries_contracts() == set(CONTRACTS)


def test_topk_outputs_hand_worked():
    got = output_specs("topk_transform", {"K": 512, "P": 64, "return_raw": True}, {"scores": (3, 1000), "seq_lens": (3,), "page_table": (3, 16)})
    assert got == [OutputSpec("page_indices", "I32", (3, 512)), OutputSpec("raw_indices", "I32", (3, 512))]
    assert got[0].nbytes == 3 * 512 * 4
    got = output_specs("topk_transform", {"K": 1024, "P": 1}, {"scores": (2, 4096)})
    assert got == [OutputSpec("page_indices", "I32", (2, 1024))]
    with pytest.raises(ValueError, match="'K' must be an integer"):
        output_specs("topk_transform", {"K": True, "P": 1}, {"scores": (2, 4096)})
    with pytest.raises(ValueError, match="'return_raw' must be a boolean"):
        output_specs("topk_transform", {"K": 8, "P": 1, "return_raw": 1}, {"scores": (2, 4096)})


def test_normrope_cache_in_place():
    c = lookup("norm_rope_store")
    assert c.inout == ("cache",)
    assert c.input_dtype("x") == "BF16" and c.input_dtype("positions") == "I64"
    assert "eps" in c.required_params and "model" in c.optional_params
    got = output_specs("norm_rope_store", {}, {"cache": (4, 132 * 64)})
    assert got == [OutputSpec("cache", "U8", (4, 8448), inout=True)]
    with pytest.raises(ValueError, match="in/out tensor 'cache' is missing"):
        output_specs("norm_rope_store", {}, {"x": (1, 128)})


def test_logits_contract():
    c = lookup("indexer_logits")
    assert [n for n, _ in c.inputs] == ["q", "weights", "cache", "seq_lens", "page_table"]
    assert c.input_dtypes("q") == ("U8", "BF16") and c.input_dtype("q") is None
    assert c.input_dtype("weights") == "F32"
    got = output_specs("indexer_logits", {"batch": 2, "stride": 300}, {"q": (2, 4, 128)})
    assert got == [OutputSpec("logits", "F32", (2, 300))]
    with pytest.raises(ValueError, match="'stride' must be an integer"):
        output_specs("indexer_logits", {"batch": 2}, {"q": (2, 4, 128)})


def test_capture_derives_size_params_from_the_contract():
    from kerneldiff.capture import _derive

    # topk_transform: K from page_indices' axis 1, return_raw from whether raw_indices came back.
    p = {"P": 64}
    _derive("topk_transform", p, {"page_indices": np.zeros((3, 512), np.int32), "raw_indices": None}, {})
    assert p == {"P": 64, "K": 512, "return_raw": False}
    # Given params are kept.
    p = {"K": 7, "return_raw": True}
    _derive("topk_transform", p, {"page_indices": np.zeros((3, 512), np.int32)}, {})
    assert p == {"K": 7, "return_raw": True}
    # norm_rope_store: num_pages from the cache.
    p = {}
    _derive("norm_rope_store", p, {}, {"cache": np.zeros((5, 132 * 64), np.uint8)})
    assert p == {"num_pages": 5}
    # indexer_logits: every size param from q, cache, page_table and the logits.
    p = {"store": "fp8"}
    _derive("indexer_logits", p, {"logits": np.zeros((2, 300), np.float32)},
            {"q": np.zeros((2, 4, 128), np.uint8), "cache": np.zeros((9, 132 * 64), np.uint8), "page_table": np.zeros((2, 5), np.int32)})
    assert p == {"store": "fp8", "batch": 2, "heads": 4, "num_pages": 9, "max_pages": 5, "stride": 300}
    # A kernel the package does not know derives nothing.
    p = {}
    _derive("my_op", p, {"out": np.zeros((2, 2))}, {})
    assert p == {}
