"""Which one-dataset recipes ``calibrate`` measures, and the data it measures them on.

A recipe of one dataset is measured as it is. A recipe over several datasets
(:mod:`pangeo_hpc.batch.chains.multi_yaml`) runs each dataset as the one-dataset recipe
``RECIPE.DATASET`` (:func:`~pangeo_hpc.batch.pipeline.multi_run.dataset_recipes`), one
after the other on one cluster; its plan is the sum of theirs
(:mod:`pangeo_hpc.planning.multi_plan`), so each of them is measured under that name.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pangeo_hpc.batch.chains.recipe_yaml import Recipe
    from pangeo_hpc.s3.options import S3Options

__all__ = ["measured_root", "open_measured", "recipes_to_measure"]


def open_measured(
    spec: Recipe,
    data: str | Path | None,
    start: str | None,
    end: str | None,
    s3: S3Options | None = None,
) -> Any:
    """The recipe's data from ``start`` to ``end``: its ``files:`` or ``store:`` (``end``
    ``None``: the recipe's), else the era5-pds tree ``data`` (``None``: to the last month
    there is); ``s3``: how to reach ``s3://`` data.

    Parameters
    ----------
    spec : Recipe
        The recipe.
    data : str or Path or None
        The era5-pds tree, for a recipe without ``files:`` or ``store:``.
    start : str or None
        First month (``YYYY-MM``); ``None``: the recipe's.
    end : str or None
        Last month; ``None``: the recipe's, or the last there is.
    s3 : S3Options, optional
        Endpoint and credentials of ``s3://`` data.

    Returns
    -------
    xarray.Dataset
        The data, lazily.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.recipe_yaml import load
    >>> from pangeo_hpc.planning.measured_recipes import open_measured
    >>> spec = load("era5-sst-mean")
    >>> ds = open_measured(spec, "data/era5-demo", "2000-01", "2000-12")  # doctest: +SKIP
    """
    from pangeo_hpc.batch.pipeline.steps import data_root, open_dataset
    from pangeo_hpc.io.era5 import open_era5

    if spec.files is None and spec.store is None:
        names = spec.variable if len(spec.variables) == 1 else list(spec.variables)
        return open_era5(names, start, end, source=data, s3=s3)
    return open_dataset(spec, data_root(data), start=start, end=end, s3=s3)


def recipes_to_measure(
    recipe: str,
    data: str | Path | None,
    start: str | None,
    end: str | None,
    s3: S3Options | None = None,
) -> dict[str, Recipe]:
    """The recipe ``recipe`` names, under that name (as a plan of ``recipe`` looks it
    up); or, for one over several datasets, each dataset's one-dataset recipe under its
    name ``RECIPE.DATASET``, as its runs and plans name them (one cluster runs them one
    after the other, so only the first meets fresh workers).

    Parameters
    ----------
    recipe : str
        A recipe's name or YAML file.
    data : str or Path or None
        The era5-pds tree, for recipes without ``files:`` or ``store:``.
    start : str or None
        First month, or ``None``.
    end : str or None
        Last month, or ``None``.
    s3 : S3Options, optional
        Endpoint and credentials of ``s3://`` data.

    Returns
    -------
    dict[str, Recipe]
        Name -> one-dataset recipe.

    Examples
    --------
    >>> from pangeo_hpc.planning.measured_recipes import recipes_to_measure
    >>> recipes_to_measure("era5-sst-mean", "data/era5-demo", None, None)  # doctest: +SKIP
    """
    from pangeo_hpc.batch.chains import recipe_yaml
    from pangeo_hpc.batch.chains.multi_yaml import from_multi_dict, is_multi
    from pangeo_hpc.batch.pipeline.multi_run import dataset_recipes
    from pangeo_hpc.batch.pipeline.steps import data_root

    path = recipe_yaml.find(recipe)
    doc = recipe_yaml.read_yaml(path)
    if not is_multi(doc):
        return {recipe: recipe_yaml.from_dict(doc, path)}
    spec = from_multi_dict(doc, path)
    recipes = dataset_recipes(spec, data_root(data), start=start, end=end, s3=s3).values()
    return {one.name: one for one in recipes}


def measured_root(recipes: Iterable[Recipe], root: str) -> str:
    """Where the storage's read rate is measured for ``recipes``: the data root ``root``,
    or, when every one reads ``files:``, the folder all their files share.

    Parameters
    ----------
    recipes : Iterable[Recipe]
        The recipes measured.
    root : str
        The data root.

    Returns
    -------
    str
        A folder or URL.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.recipe_yaml import load
    >>> from pangeo_hpc.planning.measured_recipes import measured_root
    >>> measured_root([load("era5-sst-mean")], "data/era5-demo")  # reads the tree, not files:
    'data/era5-demo'
    """
    import os

    from pangeo_hpc.io.globbing import expand

    recipes = list(recipes)
    if any(r.files is None for r in recipes):
        return root
    files = [f for r in recipes for f in expand(r.files)]  # type: ignore[arg-type]
    return os.path.commonpath([os.path.dirname(os.path.abspath(f)) for f in files])
