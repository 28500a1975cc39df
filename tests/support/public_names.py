"""Every public name of a package folder: what the docstring check walks.

Public is a module-level function or class whose name does not start with ``_``, defined in
a module of the folder (read with :mod:`ast`, so a name imported from elsewhere counts once,
where it is defined), and each such class's own public methods. The folder ``""`` is the
package's top level (``pangeo_hpc/*.py``).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

from tests.support.paths import ROOT

PACKAGE = ROOT / "pangeo_hpc"


def modules(folder: str) -> list[str]:
    """The dotted names of the modules of ``folder`` (``""``: the top level), sorted."""
    base = PACKAGE / folder if folder else PACKAGE
    out = []
    for path in sorted(base.glob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def _defined(path: Path) -> list[str]:
    """The public module-level function and class names that ``path`` defines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [n.name for n in tree.body if isinstance(n, kinds) and not n.name.startswith("_")]


def _methods(cls: type) -> dict[str, object]:
    """The public methods ``cls`` itself defines (inherited and generated ones left out)."""
    out = {}
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        func = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
        if inspect.isfunction(func) and func.__qualname__ == f"{cls.__qualname__}.{name}":
            out[name] = getattr(cls, name)  # a classmethod bound: ``cls`` is no parameter
    return out


def public_names(folder: str) -> dict[str, object]:
    """Every public function, class and public method of ``folder``, by dotted name.

    Parameters
    ----------
    folder : str
        A folder of the package (``"recipes"``), or ``""`` for its top-level modules.

    Returns
    -------
    dict
        ``"pangeo_hpc.recipes.means.time_mean"`` -> the function, and for a class
        ``"module.Class.method"`` -> each of its own public methods.
    """
    out: dict[str, object] = {}
    for module in modules(folder):
        mod = importlib.import_module(module)
        path = Path(mod.__file__)
        for name in _defined(path):
            obj = getattr(mod, name)
            out[f"{module}.{name}"] = obj
            if inspect.isclass(obj):
                for method, func in _methods(obj).items():
                    out[f"{module}.{name}.{method}"] = func
    return out
