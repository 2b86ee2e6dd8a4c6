"""Loading the user's MODULE_OR_FILE, whose import registers implementations."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from types import ModuleType

__all__ = ["load_target", "LoadError"]


class LoadError(Exception):
    """The target cannot be found (exit status 2)."""


def load_target(target: str) -> ModuleType:
    """Import a module by dotted name, or a Python file by path.

    Parameters
    ----------
    target : str
        A path (ends in ``.py`` or names an existing file; its folder is put
        first on ``sys.path`` so its sibling imports work) or a dotted module
        name importable from the current directory.

    Returns
    -------
    module
        The imported module (a file is loaded under the name
        ``kerneldiff_user.<stem>``).

    Raises
    ------
    LoadError
        No such file or module. Errors raised while the module runs propagate
        unchanged (the caller prints the traceback).
    """
    if target.endswith(".py") or os.sep in target or os.path.isfile(target):
        path = os.path.abspath(target)
        if not os.path.isfile(path):
            raise LoadError(f"no such file: {target}")
        folder = os.path.dirname(path)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        stem = os.path.splitext(os.path.basename(path))[0]
        name = f"kerneldiff_user.{stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise LoadError(f"cannot load {target} as Python")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as e:
        if e.name == target or target.startswith(f"{e.name}."):
            raise LoadError(f"no module named {target!r} (give a file path, or a module importable from {os.getcwd()})") from None
        raise
