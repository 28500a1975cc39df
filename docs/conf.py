"""Sphinx configuration of pangeo-hpc's documentation (``make docs``).

The pages are MyST markdown; the notebooks of ``notebooks/`` are executed by myst-nb;
the generated parts (recipe functions, configuration keys, layers, benchmarks, the API
reference, the gallery's copies) are written by ``docs/_ext/generated.py`` when this file
is read, before any page is.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
# The notebooks' kernels inherit this environment: with MPLBACKEND set (make docs set Agg)
# a kernel draws nothing inline, and the gallery loses every pyplot figure (notebook 04
# had 1 image of 4). Unset, ipykernel draws inline; Sphinx itself, headless, uses Agg.
os.environ.pop("MPLBACKEND", None)
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent))

import gallery  # noqa: E402
import generated  # noqa: E402

import pangeo_hpc  # noqa: E402

generated.generate(DOCS)

project = "pangeo-hpc"
author = "the pangeo-hpc developers"
copyright = "2026, the pangeo-hpc developers"
version = release = pangeo_hpc.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
]
# .rst first: autosummary writes its stubs (reStructuredText) with the first rst suffix
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "_generated", "**.ipynb_checkpoints"]
root_doc = "index"

# the merger adds the pages of other branches to the toctrees (see docs/contributing.md);
# a toctree entry whose page is absent would be a warning, so none is listed before it lands

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autosummary_generate = True
autodoc_typehints = "none"  # numpydoc's Parameters carry the types
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()  # tests/test_docstrings.py validates

# notebooks: executed at build time on the small demo tree `make docs` writes; the
# Makefile passes DASK_PANGEO_HPC__* so that nothing lands in the user's own folders
nb_execution_mode = os.environ.get("PANGEO_HPC_DOCS_EXECUTE", "force")
nb_execution_timeout = 600  # a ceiling per cell, not an expected duration
nb_execution_raise_on_error = True
nb_execution_in_temp = True  # each notebook's outputs go to a temporary folder
nb_merge_streams = True
# HoloViews' own bundles (hvplot in notebook 07: application/vnd.holoviews_load.v0+json,
# ..._exec.v0+json) have no static rendering; the same outputs' javascript and HTML parts
# are what the page shows, so their "unknown mime type" is not a fault of the page
suppress_warnings = ["mystnb.unknown_mime_type"]

html_theme = "pydata_sphinx_theme"
html_title = "pangeo-hpc"
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path: list[str] = []

# internal links (pages, anchors, cross-references) are checked by the build itself: one
# that does not resolve is a warning, and `make docs` makes warnings errors. External
# links are not checked: there is no internet where the docs are built.


def setup(app):
    """Sphinx's hook: an executed gallery page that lost its figures fails the build."""
    app.connect("build-finished", gallery.check_figures)
