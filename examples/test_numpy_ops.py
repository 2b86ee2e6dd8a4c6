"""The three NumPy examples as pytest tests: one item per kerneldiff case.

    pytest examples/test_numpy_ops.py --kerneldiff-suite quick

(with kerneldiff installed, so that pytest loads its plugin, and build/difftest
built). Importing the examples registers their functions; the plugin serves
this file to ``difftest run`` (``serve:python -m kerneldiff serve
examples/test_numpy_ops.py``), which imports the examples the same way, and
parametrizes ``test_numpy_ops`` over the suite's cases: ids are the case
ids (``test_numpy_ops[topk_transform/lengths-k512]``), a failure's message
is the case's diagnosis and replay line, and docs/python.md ("pytest") has
the options.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy_logits  # noqa: E402,F401  each registers its kernel with @kerneldiff.implements
import numpy_normrope  # noqa: E402,F401
import numpy_topk  # noqa: E402,F401


def test_numpy_ops(kerneldiff_case):
    """The plugin checks the case's verdict before this body runs; the
    record (kerneldiff_case.record) is there for checks of your own."""
    assert kerneldiff_case.record["verdict"] == "pass"
