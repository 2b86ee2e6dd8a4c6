import os
import sys

import pytest

pytest_plugins = ["pytester"]  # test_pytest_plugin.py runs pytest on files it writes

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXAMPLES = os.path.join(ROOT, "examples")
sys.path.insert(0, HERE)


@pytest.fixture(autouse=True)
def _fresh_registry():
    import kerneldiff.registry as r

    saved = dict(r._registry)
    r.clear()
    yield
    r.clear()
    r._registry.update(saved)


def example(name):
    return os.path.join(EXAMPLES, name)


def load_example(name):
    """Import examples/NAME into the (fresh) registry; returns the module."""
    from kerneldiff.loader import load_target

    return load_target(example(name))
