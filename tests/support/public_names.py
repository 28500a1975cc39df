"""Every public module-level name of a folder of the package, for tests/test_docstrings.py.

Public is what a user can reach by a name without a leading underscore: each function and
class defined at the top level of a module (found with :mod:`ast`, so names imported from
elsewhere are counted once, where they are defined) whose name does not start with ``_``.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT


def public_names(folder: str, *, package: str = "pangeo_hpc", root: Path = ROOT) -> list[str]:
    """The dotted names of the public functions and classes defined under a package folder.

    Parameters
    ----------
    folder : str
        A folder of the package, ``"write"`` for ``pangeo_hpc/write/`` (its subfolders
        included).
    package : str, optional
        The package's folder under ``root`` and its import name.
    root : Path, optional
        The folder holding the package (the repository's root).

    Returns
    -------
    list of str
        ``"pangeo_hpc.write.guard.is_ours"``, ..., sorted.

    Raises
    ------
    FileNotFoundError
        If the folder does not exist (a misspelt folder would otherwise check nothing).
    """
    top = root / package / folder
    if not top.is_dir():
        raise FileNotFoundError(f"no folder {top}")
    out = []
    for path in sorted(top.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            defines = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            if defines and not node.name.startswith("_"):
                out.append(f"{module}.{node.name}")
    return sorted(out)


def public_object(name: str) -> Any:
    """The object a dotted name of :func:`public_names` stands for.

    Parameters
    ----------
    name : str
        ``"module.name"``.

    Returns
    -------
    object
        The function or class, imported.
    """
    module, attr = name.rsplit(".", 1)
    return getattr(importlib.import_module(module), attr)
