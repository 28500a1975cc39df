"""The notebook gallery: ``notebooks/*.ipynb`` copied into ``docs/gallery/`` for myst-nb.

A notebook's parameters cell (tagged ``parameters``) is followed, in the copy only, by a
cell of this build's values where the docs' small demo tree needs them, as papermill does
(and as ``tests/test_notebooks.py`` runs them); the cell says so. Notebooks that cannot
run in a docs build are copied unexecuted, with a note saying why (:data:`NOT_EXECUTED`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

#: notebook stem prefix -> values set after its parameters cell in the docs build
PARAMETERS: dict[str, dict[str, Any]] = {
    "06": {"CALIBRATION_BYTES": "16MB"},  # the calibration's runs: on a quarter of 64 MB
    "08": {"END": "2009-12"},  # the docs' demo tree has 2000-2009
}

#: notebook stem prefix -> why the docs build shows it without running it
NOT_EXECUTED: dict[str, str] = {
    "02": (
        "it warms up a lazily loading file system: its tests run it on an rclone FUSE mount "
        "of a SeaweedFS bucket (`tests/test_notebooks.py`, marker `s3`), which needs root, "
        "fuse3 and the test servers; on the docs' local tree every file is already loaded "
        "and the before/after speeds would show nothing"
    ),
}


#: notebook stem prefix -> the images its executed page shows at least (its figures: the
#: pyplot ones are lost when the kernels draw nothing inline, e.g. with MPLBACKEND=Agg,
#: which left 3, 1, 0 and 3 of these)
IMAGES: dict[str, int] = {"03": 5, "04": 4, "06": 1, "08": 4}


def _cell(source: str, cell_type: str = "code") -> dict[str, Any]:
    cell: dict[str, Any] = {
        "cell_type": cell_type,
        "id": f"docs-build-{cell_type}",  # nbformat 4.5: every cell has an id
        "metadata": {},
        "source": source,
    }
    if cell_type == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def prepare(notebook: Path) -> dict[str, Any]:
    """The gallery's copy of ``notebook``: parameters of this build added, or a note.

    Parameters
    ----------
    notebook : Path
        A notebook of ``notebooks/``.

    Returns
    -------
    dict
        The notebook's JSON, with ``mystnb.execution_mode: off`` for those of
        :data:`NOT_EXECUTED`.
    """
    nb = json.loads(notebook.read_text())
    prefix = notebook.stem[:2]
    cells = nb["cells"]
    if prefix in PARAMETERS:
        at = next(i for i, c in enumerate(cells) if "parameters" in c["metadata"].get("tags", []))
        lines = ["# set by the docs build (docs/_ext/gallery.py) for its small demo tree"]
        lines += [f"{k} = {v!r}" for k, v in PARAMETERS[prefix].items()]
        cells.insert(at + 1, _cell("\n".join(lines)))
    if prefix in NOT_EXECUTED:
        nb["metadata"]["mystnb"] = {"execution_mode": "off"}
        note = f"```{{note}}\nNot run in the docs build: {NOT_EXECUTED[prefix]}.\n```"
        cells.insert(1, _cell(note, "markdown"))
    return nb


def copy_all(root: Path, gallery: Path) -> list[Path]:
    """Write the gallery's copies, rewriting only those whose content changed.

    Parameters
    ----------
    root : Path
        The repository.
    gallery : Path
        ``docs/gallery``.

    Returns
    -------
    list of Path
        The copies.
    """
    out = []
    for notebook in sorted((root / "notebooks").glob("*.ipynb")):
        target = gallery / notebook.name
        text = json.dumps(prepare(notebook), indent=1) + "\n"
        if not target.is_file() or target.read_text() != text:
            target.write_text(text)
        out.append(target)
    return out


def missing_figures(html: Path) -> list[str]:
    """The executed gallery pages under ``html`` with fewer images than :data:`IMAGES` says.

    Parameters
    ----------
    html : Path
        The built site (``docs/_build/html``).

    Returns
    -------
    list of str
        One line per page short of its figures (its name, images found and expected).
    """
    out = []
    for prefix, expected in sorted(IMAGES.items()):
        (page,) = (html / "gallery").glob(f"{prefix}-*.html")
        found = len(re.findall(r"<img\b", page.read_text()))
        if found < expected:
            out.append(f"{page.name}: {found} images, expected at least {expected}")
    return out


def check_figures(app: Any, exception: BaseException | None) -> None:
    """Sphinx ``build-finished`` handler: fail the build when an executed gallery page
    lost figures (:func:`missing_figures`); nothing to check when the notebooks were
    not executed or the build already failed.

    Parameters
    ----------
    app : sphinx.application.Sphinx
        The application.
    exception : BaseException or None
        The build's exception, if it failed.
    """
    if exception is not None or app.builder.name != "html" or app.config.nb_execution_mode == "off":
        return
    short = missing_figures(Path(app.outdir))
    if short:
        from sphinx.errors import ExtensionError

        raise ExtensionError("gallery pages lost their figures: " + "; ".join(short))
