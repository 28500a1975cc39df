"""Every public module-level name of a folder of the package, for tests/test_docstrings.py.

Public is what a user can reach by a name without a leading underscore: each function and
class defined at the top level of a module (found with :mod:`ast`, so names imported from
elsewhere are counted once, where they are defined) whose name does not start with ``_``;
and (:func:`public_methods`) each method of such a class defined in its body, properties
left out (they are attributes).
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


def _is_property(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a method is decorated as a property (``@property``, ``@x.setter``,
    ``@cached_property``)."""
    for d in node.decorator_list:
        text = ast.unparse(d)
        if text.endswith(("property", ".setter", ".deleter")):
            return True
    return False


def public_methods(folder: str, *, package: str = "pangeo_hpc", root: Path = ROOT) -> list[str]:
    """The dotted names of the public methods of the public classes under a package folder.

    Parameters
    ----------
    folder : str
        A folder of the package, as for :func:`public_names`.
    package : str, optional
        The package's folder under ``root`` and its import name.
    root : Path, optional
        The folder holding the package (the repository's root).

    Returns
    -------
    list of str
        ``"pangeo_hpc.planning.plan.Plan.text"``, ..., sorted: methods, class methods and
        static methods defined in the class's body whose names do not start with ``_``.
    """
    out = []
    for name in public_names(folder, package=package, root=root):
        module, cls = name.rsplit(".", 1)
        parts = module.split(".")
        path = root.joinpath(*parts).with_suffix(".py")
        if not path.is_file():
            path = root.joinpath(*parts, "__init__.py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        node = next(n for n in tree.body if getattr(n, "name", None) == cls)
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            is_def = isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            if is_def and not item.name.startswith("_") and not _is_property(item):
                out.append(f"{name}.{item.name}")
    return sorted(out)


def public_object(name: str) -> Any:
    """The object a dotted name of :func:`public_names` or :func:`public_methods` stands
    for.

    Parameters
    ----------
    name : str
        ``"module.name"`` or ``"module.Class.method"``.

    Returns
    -------
    object
        The function, class or method, imported.

    Raises
    ------
    ImportError
        If no prefix of ``name`` is a module.
    """
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(f"no module in {name!r}")
