"""Recipes over several datasets: ``datasets:``, ``steps:`` run on each, ``combine:`` over
all of them on their common grid.

.. code-block:: yaml

    name: model-vs-era5-t2m
    datasets:
      model: {variable: tas, files: "cmip/tas_Amon_*.nc", start: "1991-01", end: "2014-12"}
      era5: {variable: air_temperature_at_2_metres, start: "1991-01", end: "2014-12"}
    steps:
      - time_mean: {}
      - regrid: {grid: $model, method: conservative}
    combine:
      - bias: {reference: era5}
    outputs: {format: netcdf}

Each dataset with the shared ``steps:`` (and ``results:``) is a one-dataset
:class:`~pangeo_hpc.batch.chains.recipe_yaml.Recipe` (:meth:`MultiRecipe.recipe_for`), run
as one is today (incrementally, through the state cache). ``grid: $NAME`` in a ``regrid``
step is the grid of the dataset ``NAME`` as opened, written into the step as a box of
cells (``{lat: [s, n, step], lon: [w, e, step]}``) so that the state cache's keys hold
it; on ``NAME`` itself the step is left out (it is already on its own grid). The
``combine:`` steps are :data:`pangeo_hpc.recipes.COMBINE`, each given one Dataset of one
variable per dataset (:func:`~pangeo_hpc.recipes.align_datasets.align_datasets`).
Everything is checked here, before data are opened.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import xarray as xr

from pangeo_hpc import recipes
from pangeo_hpc.batch.chains.chain import FIRST, Step, check_signature, parse_steps
from pangeo_hpc.batch.chains.esm_catalog import KEYS as CATALOG_KEYS
from pangeo_hpc.batch.chains.esm_catalog import catalog_datasets
from pangeo_hpc.batch.chains.option_values import check_values
from pangeo_hpc.batch.chains.recipe_yaml import Recipe, find, from_dict, read_yaml
from pangeo_hpc.errors import InputError, shown
from pangeo_hpc.inputs.periods import months
from pangeo_hpc.write.guard import check_label

__all__ = ["MultiRecipe", "apply_combine", "from_multi_dict", "is_multi", "load_multi"]

_KEYS = ("name", "description", "datasets", "steps", "results", "combine", "outputs", "plot")
#: a stand-in grid for ``$NAME`` while the steps are checked (the real one is known once
#: the dataset is opened)
_PLACEHOLDER = "r360x180"


def is_multi(doc: Any) -> bool:
    """Whether a recipe's YAML mapping is over several datasets (has ``datasets:``).

    Parameters
    ----------
    doc : Any
        A recipe's YAML document.

    Returns
    -------
    bool
        Whether it has ``datasets:``.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.multi_yaml import is_multi
    >>> is_multi({"datasets": {"a": {}}}), is_multi({"dataset": {"variable": "tas"}})
    (True, False)
    """
    return isinstance(doc, dict) and "datasets" in doc


@dataclass(frozen=True)
class MultiRecipe:
    """A recipe over several datasets, as read from its YAML file.

    Attributes
    ----------
    name, description : str
        As in the file.
    datasets : dict of str to dict
        Each dataset's mapping as written (variable, files, start, end), by name.
    combine : tuple of Step
        The combine steps, each a function of :data:`pangeo_hpc.recipes.COMBINE`.
    format : {"netcdf", "zarr", "icechunk"}
    path : Path, optional
        The YAML file.

    Examples
    --------
    >>> from pangeo_hpc.batch import load_multi
    >>> spec = load_multi("model-vs-era5-t2m")
    >>> list(spec.datasets), [step.name for step in spec.combine]
    (['model', 'era5'], ['bias', 'rmse', 'correlation'])
    """

    name: str
    description: str
    datasets: dict[str, dict[str, Any]]
    combine: tuple[Step, ...]
    format: str = "netcdf"
    path: Path | None = None
    _doc: dict[str, Any] = field(default_factory=dict, repr=False)

    def grid_owners(self) -> list[str]:
        """The datasets whose grids a ``regrid`` step names (``grid: $NAME``).

        Returns
        -------
        list[str]
            Their names.

        Examples
        --------
        >>> from pangeo_hpc.batch import load_multi
        >>> load_multi("model-vs-era5-t2m").grid_owners()  # regrid: {grid: $model}
        ['model']
        """
        return sorted({name for _, name in _grid_references(self._doc)})

    def recipe_for(
        self, name: str, grids: Mapping[str, Any] | None = None, data: str | None = None
    ) -> Recipe:
        """The one-dataset recipe of dataset ``name``: its data, the shared steps and
        results, ``grid: $X`` replaced by ``grids[X]`` (a grid spec of
        :func:`~pangeo_hpc.recipes.regrid`; default a stand-in, for checking) and the
        ``regrid`` to its own grid left out. ``{data}`` in a ``files:`` glob is the data
        root ``data`` (the shipped recipes' model files live in the demo tree).

        Parameters
        ----------
        name : str
            A dataset of ``datasets:``.
        grids : Mapping[str, Any], optional
            Grid specs by dataset name, for ``grid: $NAME``; ``None``: stand-ins.
        data : str, optional
            The data root, for ``{data}`` in a ``files:`` glob.

        Returns
        -------
        Recipe
            The recipe.

        Examples
        --------
        >>> from pangeo_hpc.batch import load_multi
        >>> spec = load_multi("model-vs-era5-t2m")
        >>> model_grid = {"lat": [-90, 90, 2.5], "lon": [-1.25, 358.75, 2.5]}
        >>> era5 = spec.recipe_for("era5", grids={"model": model_grid})
        >>> era5.name, [step.name for step in era5.steps]
        ('model-vs-era5-t2m.era5', ['time_mean', 'regrid'])
        """
        shared = ("description", "steps", "results", "plot")
        doc = {k: v for k, v in self._doc.items() if k in shared}
        doc = copy.deepcopy(doc)
        doc["name"] = f"{self.name}.{name}"
        doc["dataset"] = dict(self.datasets[name])
        files = doc["dataset"].get("files")
        if isinstance(files, str) and "{data}" in files:
            doc["dataset"]["files"] = files.replace("{data}", str(data or "."))
        doc["outputs"] = {"format": self.format}
        if "steps" in doc:
            doc["steps"] = _with_grids(doc["steps"] or [], name, grids)
        for key, steps in (doc.get("results") or {}).items():
            doc["results"][key] = _with_grids(steps or [], name, grids)
        return from_dict(doc, self.path)


def load_multi(name_or_path: str | Path) -> MultiRecipe:
    """Load a recipe over several datasets by name or path, every part checked.

    Parameters
    ----------
    name_or_path : str or Path
        A recipe's name (found in config ``pangeo-hpc.recipes.path`` and the shipped ones)
        or the path of its YAML file.

    Returns
    -------
    MultiRecipe
        Its datasets, the steps run on each and the ``combine:`` steps.

    Examples
    --------
    >>> from pangeo_hpc.batch import load_multi
    >>> multi = load_multi("model-vs-era5-t2m")  # a shipped recipe, or a YAML file's path
    >>> sorted(multi.datasets)
    ['era5', 'model']
    """
    path = find(name_or_path)
    return from_multi_dict(read_yaml(path), path)


def from_multi_dict(doc: Any, path: Path | None = None) -> MultiRecipe:
    """A :class:`MultiRecipe` from the mapping of a YAML file, every part checked.

    Parameters
    ----------
    doc : Any
        The YAML document.
    path : Path, optional
        The file it came from (its folder and name for messages).

    Returns
    -------
    MultiRecipe
        The recipe.

    Raises
    ------
    InputError
        One line naming the value and the fix: an unknown key, dataset name, reference
        (``grid: $NAME``, ``reference: NAME``) or combine step, options a step does not
        take, or periods that do not overlap.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.multi_yaml import from_multi_dict
    >>> doc = {"name": "two", "description": "two datasets",
    ...        "datasets": {"a": {"variable": "tas", "files": "a/*.nc"},
    ...                     "b": {"variable": "tas", "files": "b/*.nc"}},
    ...        "steps": [{"time_mean": {}}], "combine": [{"bias": {"reference": "b"}}]}
    >>> spec = from_multi_dict(doc)
    >>> list(spec.datasets), spec.combine[0].name
    (['a', 'b'], 'bias')
    """
    named = doc.get("name", "?") if isinstance(doc, dict) else "?"
    where = f"recipe {str(path if path is not None else named)!r}"
    if not is_multi(doc):
        raise InputError(f"{where} must be a YAML mapping with name, datasets, steps, combine")
    unknown = sorted(set(doc) - set(_KEYS))
    if unknown:
        raise InputError(
            f"{where}: unknown key(s) {unknown}: a recipe over several datasets has {list(_KEYS)}"
        )
    if "name" not in doc:
        raise InputError(f"{where} lacks name")
    name = check_label(str(doc["name"]), f"{where}: name")
    datasets = doc["datasets"]
    if isinstance(datasets, dict) and "catalog" in datasets:  # an ESM collection's datasets
        folder = path.parent if path is not None else None
        made = catalog_datasets(datasets, folder, f"{where}: datasets")
        named_too = {k: v for k, v in datasets.items() if k not in CATALOG_KEYS}
        clash = sorted(set(made) & set(named_too))
        if clash:
            raise InputError(f"{where}: datasets {clash} are named and in the catalog: rename")
        datasets = {**made, **named_too}
    if not isinstance(datasets, dict) or len(datasets) < 2:
        raise InputError(
            f"{where}: datasets {shown(datasets)} must map two or more names to datasets "
            "({model: {variable: tas, files: ...}, era5: {variable: ...}})"
        )
    for key, value in datasets.items():
        check_label(str(key), f"{where}: datasets name")
        if not str(key).isidentifier():
            raise InputError(
                f"{where}: datasets name {str(key)!r} must be a name such as model_a: it "
                "names the result's variable"
            )
        if not isinstance(value, dict):
            raise InputError(f"{where}: datasets.{key} must be a mapping with variable, ...")
    outputs = doc.get("outputs") or {}
    fmt = outputs.get("format", "netcdf") if isinstance(outputs, dict) else outputs
    names = [str(k) for k in datasets]
    for ref, n in _grid_references(doc):
        if n not in names:
            raise InputError(
                f"{where}: {ref}: grid=${n} names no dataset: use one of "
                f"{['$' + m for m in names]}, or rNxM"
            )
    multi = MultiRecipe(
        name=name,
        description=str(doc.get("description", "")).strip(),
        datasets={str(k): dict(v) for k, v in datasets.items()},
        combine=tuple(_combine_steps(doc.get("combine"), names, path)),
        format=str(fmt),
        path=path,
        _doc=dict(doc),
    )
    for n in names:  # each dataset with the shared steps: checked as a recipe of its own
        try:
            multi.recipe_for(n)
        except InputError as exc:
            raise InputError(f"{where}: datasets.{n}: {exc}", param=exc.param) from None
    _check_periods(multi, where)
    return multi


def _grid_references(doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(where, NAME)`` of every ``regrid`` step written ``grid: $NAME``."""
    chains = [("steps", doc.get("steps") or [])]
    results = doc.get("results") or {}
    if isinstance(results, dict):
        chains += [(f"results.{k}", v or []) for k, v in results.items()]
    found = []
    for at, items in chains:
        for i, item in enumerate(items if isinstance(items, list) else []):
            grid = _regrid_grid(item)
            if isinstance(grid, str) and grid.startswith("$"):
                found.append((f"{at}[{i}] (regrid)", grid[1:]))
    return found


def _regrid_grid(item: Any) -> Any:
    if isinstance(item, dict) and isinstance(item.get("regrid"), dict):
        return item["regrid"].get("grid")
    return None


def _with_grids(items: Any, own: str, grids: Mapping[str, Any] | None) -> Any:
    """``items`` with each ``grid: $X`` replaced (see :meth:`MultiRecipe.recipe_for`)."""
    if not isinstance(items, list):
        return items
    out = []
    for item in items:
        grid = _regrid_grid(item)
        if isinstance(grid, str) and grid.startswith("$"):
            if grid[1:] == own and grids is not None:
                continue  # already on its own grid
            target = _PLACEHOLDER if grids is None else grids[grid[1:]]
            item = {"regrid": {**item["regrid"], "grid": target}}
        out.append(item)
    return out


def _combine_steps(items: Any, names: list[str], path: Path | None) -> list[Step]:
    if items is None:
        raise InputError(
            "a recipe over several datasets needs combine: (e.g. '- bias: {reference: "
            f"{names[-1]}}}'), one of {list(recipes.COMBINE)}"
        )
    steps = parse_steps(items, "combine", None if path is None else path.parent)
    if not steps:
        raise InputError(f"combine is empty: give one of {list(recipes.COMBINE)}")
    for step in steps:
        if step.name not in recipes.COMBINE:
            raise InputError(
                f"{step.where}: unknown combine step {step.name!r}: use one of "
                f"{list(recipes.COMBINE)}"
            )
        fn = _combine_function(step)
        options = _combine_options(step)
        check_signature(fn, options, step)
        check_values(fn, options, step.where, names)
        ref = options.get("reference")
        if ref is not None and ref not in names:
            raise InputError(
                f"{step.where}: reference={shown(ref)} is not one of the datasets {names}: "
                "name one of them"
            )
    return steps


def _combine_function(step: Step) -> Callable[..., xr.Dataset]:
    """The recipe function of a combine step."""
    return getattr(recipes, step.name)  # type: ignore[no-any-return]


def _combine_options(step: Step) -> dict[str, Any]:
    """A combine step's keyword arguments (a single value: its first option)."""
    if FIRST in step.options:
        fn = _combine_function(step)
        first = list(inspect.signature(fn).parameters)[1]
        return {first: step.options[FIRST]}
    return dict(step.options)


def apply_combine(step: Step, ds: xr.Dataset) -> xr.Dataset:
    """Call a combine step on ``ds`` (one variable per dataset); messages name the step.

    Parameters
    ----------
    step : Step
        A combine step.
    ds : xr.Dataset
        One variable per dataset, aligned.

    Returns
    -------
    xr.Dataset
        The combined result.

    Raises
    ------
    InputError
        If the step refuses the data or its options (the message names the step).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from pangeo_hpc.batch.chains.chain import Step
    >>> from pangeo_hpc.batch.chains.multi_yaml import apply_combine
    >>> ds = xr.Dataset({"model": ("lat", [1.0, 2.0]), "era5": ("lat", [0.5, 1.0])},
    ...                 coords={"lat": [-45.0, 45.0]})
    >>> apply_combine(Step("bias", {"reference": "era5"}), ds)["model"].values
    array([0.5, 1. ])
    """
    try:
        return _combine_function(step)(ds, **_combine_options(step))
    except InputError as exc:
        message = str(exc).removeprefix(f"{step.name}: ")
        raise InputError(f"{step.where}: {message}", param=exc.param) from None


def join_of(step: Step) -> str:
    """How a combine step's datasets align in time: ``outer`` for an ensemble over the
    full period, else ``inner`` (the overlapping period).

    Parameters
    ----------
    step : Step
        A combine step.

    Returns
    -------
    str
        ``"outer"`` or ``"inner"``.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.chain import Step
    >>> from pangeo_hpc.batch.chains.multi_yaml import join_of
    >>> join_of(Step("ensemble", {"stat": "mean", "span": "full"}))
    'outer'
    >>> join_of(Step("bias", {"reference": "era5"}))
    'inner'
    """
    full = step.name == "ensemble" and _combine_options(step).get("span") == "full"
    return "outer" if full else "inner"


def reference_of(step: Step, multi: MultiRecipe) -> str:
    """The dataset whose units, grid and time labels the others take for ``step``: its
    ``reference``, else the first dataset.

    Parameters
    ----------
    step : Step
        A combine step.
    multi : MultiRecipe
        The recipe.

    Returns
    -------
    str
        The dataset's name.

    Examples
    --------
    >>> from pangeo_hpc.batch import load_multi
    >>> from pangeo_hpc.batch.chains.multi_yaml import reference_of
    >>> spec = load_multi("model-vs-era5-t2m")
    >>> reference_of(spec.combine[0], spec)  # bias: {reference: era5}
    'era5'
    """
    return str(_combine_options(step).get("reference") or next(iter(multi.datasets)))


def _check_periods(multi: MultiRecipe, where: str) -> None:
    """Periods written in the file overlap (a ``files:`` glob without them: checked once
    the data are open)."""
    spans = {}
    for n, d in multi.datasets.items():
        if d.get("start") is not None and d.get("end") is not None:
            spans[n] = (str(d["start"]), str(d["end"]))
            months(*spans[n])
    if len(spans) < 2:
        return
    first = max(s for s, _ in spans.values())
    last = min(e for _, e in spans.values())
    if first > last:
        said = ", ".join(f"{n} {s}..{e}" for n, (s, e) in spans.items())
        raise InputError(
            f"{where}: the datasets have no period in common ({said}): give them "
            "overlapping start and end"
        )
