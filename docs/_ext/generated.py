"""Write the generated parts of the docs before Sphinx reads any page.

``docs/conf.py`` calls :func:`generate`: the recipe-function tables, the configuration
reference, the layer table, the benchmarks and the API reference's page go to
``docs/_generated/`` (and ``docs/api/index.md``), the notebooks to ``docs/gallery/``.
All of them are ignored by git; a file is rewritten only when its text changes, so that
Sphinx rebuilds only what did.
"""

from __future__ import annotations

from pathlib import Path

import bench_page
import config_keys
import gallery
import layer_table
import public_api
import recipe_table


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


#: the user guide's pages in order; those of other branches (``explore``, ``s3-outputs``,
#: ``stores``, ``regrid``) are listed as soon as their file exists, so that they need no
#: edit here when they land and no toctree names a page that is absent
USER_GUIDE = (
    "recipes",
    "recipe-functions",
    "datasets",
    "cache",
    "clusters",
    "storage",
    "s3",
    "s3-outputs",
    "icechunk-outputs",
    "zarr",
    "stores",
    "regrid",
    "planning",
    "../scaling",
    "notebooks",
    "explore",
    "configuration",
    "errors",
)


def user_guide_toctree(folder: Path) -> str:
    """The user guide's toctree: the pages of :data:`USER_GUIDE` that exist.

    Parameters
    ----------
    folder : Path
        ``docs/user-guide``.

    Returns
    -------
    str
        A MyST toctree directive.
    """
    pages = [p for p in USER_GUIDE if (folder / f"{p}.md").is_file()]
    return "\n".join(["```{toctree}", ":maxdepth: 1", "", *pages, "```", ""])


def api_page() -> str:
    """The API reference: one autosummary table per module of the public API.

    Returns
    -------
    str
        ``docs/api/index.md``: an ``eval-rst`` block per module (autosummary finds its
        directives in the page's text) whose entries get pages in ``api/generated/``.
    """
    lines = [
        "# API reference",
        "",
        "Everything public, as `docs/_ext/public_api.py` defines it: the package's",
        "`__all__`, every recipe function (the steps of a recipe's `steps:` and",
        "`combine:`), the packages that export a surface, and the library function",
        "behind each command-line verb (the comment beside each in that file names the",
        "verb). `tests/test_docstrings.py` validates every docstring here with numpydoc.",
        "",
    ]
    import importlib
    import types

    first: dict[int, str] = {}  # id of an object -> the name it is documented under
    for module in public_api.API:
        mod = importlib.import_module(module)
        own, again = [], []
        for name in public_api.names(module):
            obj = getattr(mod, name)
            if isinstance(obj, types.ModuleType) and obj.__name__ in public_api.API:
                again.append(f"{{mod}}`{name} <{obj.__name__}>`")  # a section of its own
            elif id(obj) in first and not isinstance(obj, (str, int, float, tuple, dict)):
                again.append(f"{{obj}}`{name} <{first[id(obj)]}>`")
            else:
                first.setdefault(id(obj), f"{module}.{name}")
                own.append(name)
        lines += [
            f"## `{module}`",
            "",
            "```{eval-rst}",
            f".. automodule:: {module}",
            "   :no-members:",
            "",
            f".. currentmodule:: {module}",
            "",
            ".. autosummary::",
            "   :toctree: generated/",
            "",
            *(f"   {name}" for name in own),
            "```",
            "",
        ]
        if again:
            lines += [f"Also here, documented under another heading: {', '.join(again)}.", ""]
    return "\n".join(lines)


def generate(docs: Path) -> None:
    """Write every generated page under ``docs``.

    Parameters
    ----------
    docs : Path
        The ``docs/`` folder of the repository.
    """
    root = docs.parent
    out = docs / "_generated"
    _write(out / "recipe-functions.md", recipe_table.markdown())
    _write(out / "config-keys.md", config_keys.markdown(root / "pangeo_hpc" / "pangeo-hpc.yaml"))
    _write(out / "layers.md", layer_table.markdown(root))
    _write(out / "benchmarks.md", bench_page.markdown(root))
    _write(docs / "api" / "index.md", api_page())
    _write(out / "user-guide-toctree.md", user_guide_toctree(docs / "user-guide"))
    gallery.copy_all(root, docs / "gallery")
