"""Recipes: YAML files naming a dataset, a period, the chain of recipe functions and outputs.

A recipe's ``steps:`` is a list of recipe functions of :mod:`pangeo_hpc.recipes` (or user
functions, ``- function: module:name``), each with its keyword arguments; ``results:``
optionally names several results, each the shared steps followed by its own. Every step is
checked here, before any data are opened (:mod:`pangeo_hpc.batch.chains.chain`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from pangeo_hpc import config
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.periods import months
from pangeo_hpc.io.store_ref import StoreRef
from pangeo_hpc.write.guard import check_label
from pangeo_hpc.write.projections import MapView, map_view

if TYPE_CHECKING:  # the chain brings the recipe functions, xarray and dask: built on use
    from pangeo_hpc.batch.chains.chain import Step

#: the largest recipe file read: the shipped ones are under 1 KB; beyond this a file is not a
#: recipe, and YAML's time grows with it (libyaml: 1.2 s for 256 KiB of one-digit values on
#: the developers' loaded 2-core VM, 0.3 s for these 64 KiB)
MAX_BYTES = 64 << 10
#: the most values (scalars, lists, mappings) a recipe may hold once its aliases (``*name``)
#: are expanded: a shipped recipe holds under 100; nine aliases of nine aliases ... of a
#: value (a "billion laughs") hold 10^9, which ``str()`` of a description then builds
MAX_VALUES = 10_000

_FORMATS = ("netcdf", "zarr", "icechunk")  # batch.pipeline.results.FORMATS
_KEYS = ("name", "description", "dataset", "steps", "results", "outputs", "plot")
_DATASET_KEYS = ("variable", "variables", "start", "end", "files", "store", "branch", "snapshot")


@dataclass(frozen=True)
class Recipe:
    """One runnable recipe, as read from ``recipes/NAME.yaml``.

    Attributes
    ----------
    name, description : str
        As in the file.
    variables : tuple of str
        The dataset's variables; the chain starts from the first, the others are reached
        from step options as ``$name``.
    start, end : str or None
        First and last month (``YYYY-MM``); ``None`` for all the files of a ``files:`` glob.
    steps : tuple of Step
        The chain shared by every result.
    results : dict of str to tuple of Step
        Named results, each the shared steps followed by its own; empty for one result.
    files : str or tuple of str, optional
        A glob of CF NetCDF files, or their paths (a catalog's datasets,
        :mod:`~pangeo_hpc.batch.chains.esm_catalog`); ``None`` for the era5-pds layout
        under the data root.
    store : StoreRef, optional
        A Zarr store or Icechunk repository (``store:``, with ``branch:`` or
        ``snapshot:`` for a repository), local or ``s3://``
        (:func:`pangeo_hpc.io.stores.open_any_store`).
    format : {"netcdf", "zarr", "icechunk"}
    plot : MapView, optional
        The figure's maps' projection (``plot: {projection: robinson}``,
        :func:`pangeo_hpc.write.projections.map_view`); ``None``: config
        ``pangeo-hpc.plot.projection``.
    path : Path, optional
        The YAML file (user functions are imported from its folder).

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.recipe_yaml import load
    >>> spec = load("era5-sst-mean")
    >>> spec.variables, spec.start, spec.end, list(spec.results)
    (('sea_surface_temperature',), '2000-01', '2019-12', ['time_mean', 'global_mean_seri...
    """

    name: str
    description: str
    variables: tuple[str, ...]
    start: str | None
    end: str | None
    steps: tuple[Step, ...] = ()
    results: dict[str, tuple[Step, ...]] = field(default_factory=dict)
    files: str | tuple[str, ...] | None = None
    store: StoreRef | None = None
    format: str = "netcdf"
    plot: MapView | None = None
    path: Path | None = None

    @property
    def variable(self) -> str:
        """The variable the chain starts from (the first of :attr:`variables`)."""
        return self.variables[0]

    def all_steps(self) -> list[Step]:
        """Every step, shared ones first, in the order they are written.

        Returns
        -------
        list[Step]
            The steps.

        Examples
        --------
        >>> from pangeo_hpc.batch.chains.recipe_yaml import load
        >>> [step.where for step in load("era5-sst-mean").all_steps()]
        ['results.time_mean[0] (time_mean)', 'results.global_mean_series[0] (area_mean)', 'r...
        """
        return [*self.steps, *(s for chain in self.results.values() for s in chain)]


def search_path() -> list[Path]:
    """Folders searched for recipes: config ``pangeo-hpc.recipes.path``, then the shipped ones.

    Returns
    -------
    list[Path]
        The folders, in the order searched.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.recipe_yaml import search_path
    >>> [p.name for p in search_path()]
    ['_specs', 'recipes']
    """
    extra = [Path(p).expanduser() for p in config.get("recipes.path") or []]
    here = Path(__file__).resolve().parents[2]  # the package: pangeo_hpc/_specs in a wheel
    return [*extra, here / "_specs", here.parent / "recipes"]


def available() -> dict[str, Path]:
    """Name -> file of every recipe found, first folder winning.

    Returns
    -------
    dict of str to Path
        Each recipe's name (its file's stem) and its YAML file, from the folders of
        config ``pangeo-hpc.recipes.path``, then the shipped recipes.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.recipe_yaml import available
    >>> available()["era5-sst-mean"].name
    'era5-sst-mean.yaml'
    """
    found: dict[str, Path] = {}
    for folder in search_path():
        for p in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
            found.setdefault(p.stem, p)
    return found


def find(name_or_path: str | Path) -> Path:
    """The YAML file of a recipe named (``era5-sst-mean``) or given by its path.

    Parameters
    ----------
    name_or_path : str or Path
        A recipe's name, or a YAML file's path.

    Returns
    -------
    Path
        The file.

    Raises
    ------
    InputError
        If no recipe has that name and no such file exists (the message lists the known
        names).

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.recipe_yaml import find
    >>> find("era5-sst-mean").parts[-2:]
    ('recipes', 'era5-sst-mean.yaml')
    >>> find("no-such-recipe")
    Traceback (most recent call last):
        ...
    pangeo_hpc.errors.InputError: unknown recipe 'no-such-recipe': choose one of ['era5-...
    """
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") and p.is_file():
        path = p
    else:
        known = available()
        if str(name_or_path) not in known:
            hint = "" if p.suffix not in (".yaml", ".yml") else f" ({str(p)!r} is not a file)"
            raise InputError(
                f"unknown recipe {str(name_or_path)!r}{hint}: choose one of {sorted(known)}, "
                "or give the path of a recipe's YAML file"
            )
        path = known[str(name_or_path)]
    return path


def load(name_or_path: str | Path) -> Recipe:
    """Load a recipe by name (``era5-sst-mean``) or by path to a YAML file, every step
    checked (:func:`from_dict`).

    Parameters
    ----------
    name_or_path : str or Path
        A recipe's name, or a YAML file's path.

    Returns
    -------
    Recipe
        The recipe.

    Raises
    ------
    InputError
        If the recipe cannot be found, read or checked (:func:`find`, :func:`read_yaml`,
        :func:`from_dict`).

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.recipe_yaml import load
    >>> spec = load("era5-sst-mean")
    >>> spec.name, spec.format
    ('era5-sst-mean', 'netcdf')
    """
    path = find(name_or_path)
    return from_dict(read_yaml(path), path)


def title_of(description: str) -> str:
    """A recipe's title: the first sentence of its description, whatever its line breaks
    (a YAML block wraps a long one: its first line alone stopped mid-sentence).

    Parameters
    ----------
    description : str
        A recipe's ``description:``.

    Returns
    -------
    str
        The title.

    Examples
    --------
    >>> title_of("Bias and RMSE of a model's air\\n  temperature. On its own grid.")
    "Bias and RMSE of a model's air temperature."
    """
    text = " ".join(description.split())
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def summary_line(path: Path) -> tuple[str, str]:
    """The period (``2000-01..2019-12``, or ``all files``) and the title
    (:func:`title_of`) of the recipe in ``path``, read without checking its steps (``list``:
    no recipe function, xarray or dask imported).

    Parameters
    ----------
    path : Path
        A recipe's YAML file.

    Returns
    -------
    (str, str)
        The period and the title.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.recipe_yaml import find, summary_line
    >>> summary_line(find("era5-sst-mean"))
    ('2000-01..2019-12', 'Time-mean SST map and area-weighted global-mean SST, monthly.')
    """
    doc = read_yaml(path)
    doc = doc if isinstance(doc, dict) else {}
    dataset = doc.get("dataset") if isinstance(doc.get("dataset"), dict) else {}
    start, end = dataset.get("start"), dataset.get("end")
    period = f"{start}..{end}" if start else "all files"
    if isinstance(doc.get("datasets"), dict):
        period = f"{len(doc['datasets'])} datasets"
    description = str(doc.get("description") or "")
    return period, title_of(description)


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML's safe loader (libyaml's when PyYAML has it: ten times faster, and it refuses
    nesting deeper than 1,000 levels) that counts a document's values, aliases expanded,
    before it builds any of them (:data:`MAX_VALUES`)."""

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        _count_values(node, {}, MAX_VALUES)
        return self.construct_document(node)


class _TooMany(Exception):
    """More than the allowed values, or an alias inside the value it names."""


def _count_values(node: yaml.Node, seen: dict[int, int | None], limit: int) -> int:
    """The values below ``node`` (itself included) with aliases expanded, counted on the
    composed nodes (an alias is the node it names: shared, so each is counted once and
    then looked up); raises :class:`_TooMany` beyond ``limit`` or for a node inside itself."""
    if id(node) in seen:
        known = seen[id(node)]
        if known is None:
            raise _TooMany("an alias (*name) inside the value it names")
        return known
    seen[id(node)] = None
    n = 1
    if isinstance(node, yaml.SequenceNode):
        children: list[yaml.Node] = list(node.value)
    elif isinstance(node, yaml.MappingNode):
        children = [part for pair in node.value for part in pair]
    else:
        children = []
    for child in children:
        n += _count_values(child, seen, limit)
        if n > limit:
            raise _TooMany(f"more than {limit:,} values once its aliases (*name) are expanded")
    seen[id(node)] = n
    return n


def _one_line(exc: yaml.YAMLError) -> str:
    """What YAML found wrong and where, on one line."""
    mark = getattr(exc, "problem_mark", None)
    what = getattr(exc, "problem", None) or str(exc)
    where = "" if mark is None else f" (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(f"{what}{where}".split())


def read_yaml(path: Path) -> Any:
    """The YAML document of a recipe file, read within :data:`MAX_BYTES` and
    :data:`MAX_VALUES`.

    Parameters
    ----------
    path : Path
        The file.

    Returns
    -------
    Any
        The document.

    Raises
    ------
    InputError
        For a file larger than :data:`MAX_BYTES`, invalid YAML (nesting deeper than libyaml
        takes included), or more than :data:`MAX_VALUES` values once aliases are expanded
        (a "billion laughs"): all found in milliseconds, before any value is built.

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.batch.chains.recipe_yaml import read_yaml
    >>> _ = Path("mine.yaml").write_text("name: mine\\nsteps:\\n  - time_mean: {}\\n")
    >>> read_yaml(Path("mine.yaml"))
    {'name': 'mine', 'steps': [{'time_mean': {}}]}
    """
    where = f"recipe {str(path)!r}"
    with open(path, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise InputError(
            f"{where} is larger than {MAX_BYTES >> 10} KiB: a recipe is a few KB of YAML; "
            "give the recipe's own file"
        )
    try:
        return yaml.load(data.decode("utf-8"), Loader=_Loader)  # a safe loader
    except UnicodeDecodeError as exc:
        raise InputError(f"{where} is not UTF-8 text ({exc}): save it as UTF-8") from exc
    except yaml.YAMLError as exc:
        raise InputError(f"{where} is not valid YAML: {_one_line(exc)}: fix the file") from exc
    except _TooMany as exc:
        raise InputError(
            f"{where} holds {exc}: a recipe holds a few dozen; check the file (aliases of "
            "aliases multiply)"
        ) from None
    except RecursionError:
        raise InputError(
            f"{where} nests lists or mappings too deep: a recipe nests a few levels"
        ) from None


def from_dict(doc: Any, path: Path | None = None) -> Recipe:
    """A :class:`Recipe` from the mapping of a YAML file, every step checked.

    Parameters
    ----------
    doc : Any
        The YAML document.
    path : Path, optional
        The file it came from (its folder and name for messages).

    Returns
    -------
    Recipe
        The recipe.

    Raises
    ------
    InputError
        One line naming the value and the fix: not a mapping, a recipe over several
        datasets, an unknown key, a bad ``dataset:`` or a step that does not check
        (:func:`~pangeo_hpc.batch.chains.chain.check_steps`).

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.recipe_yaml import from_dict
    >>> doc = {"name": "sst-map", "description": "Time-mean SST.",
    ...        "dataset": {"variable": "sst", "start": "2000-01", "end": "2000-12"},
    ...        "steps": [{"time_mean": {}}]}
    >>> spec = from_dict(doc)
    >>> spec.name, [step.name for step in spec.steps]
    ('sst-map', ['time_mean'])
    """
    from pangeo_hpc.batch.chains.chain import check_steps, parse_steps

    named = doc.get("name", "?") if isinstance(doc, dict) else "?"
    where = f"recipe {str(path if path is not None else named)!r}"
    if not isinstance(doc, dict):
        raise InputError(f"{where} must be a YAML mapping with name, dataset and steps")
    if "datasets" in doc:  # batch.chains.multi_yaml reads these
        raise InputError(
            f"{where} compares several datasets (datasets:, combine:): run it with "
            "'pangeo-hpc run' (run_multi); this takes a recipe of one dataset"
        )
    unknown = sorted(set(doc) - set(_KEYS))
    if unknown:
        raise InputError(f"{where}: unknown key(s) {unknown}: a recipe has {list(_KEYS)}")
    dataset = doc.get("dataset") or {}
    if not isinstance(dataset, dict):
        raise InputError(f"{where}: dataset must be a mapping with variable, start and end")
    bad = sorted(set(dataset) - set(_DATASET_KEYS))
    if bad:
        raise InputError(f"{where}: unknown dataset key(s) {bad}: use {list(_DATASET_KEYS)}")
    files = dataset.get("files")
    store = _store(dataset, files, where)
    missing = [k for k in ("name",) if k not in doc]
    if "variable" not in dataset and "variables" not in dataset:
        missing.append("dataset.variable")
    if files is None and store is None:
        missing += [f"dataset.{k}" for k in ("start", "end") if k not in dataset]
    if "steps" not in doc and "results" not in doc:
        missing.append("steps")
    if missing:
        raise InputError(f"{where} lacks {', '.join(missing)}")
    # a label, never a path: results go to results/NAME (write.guard.folder_in)
    check_label(str(doc["name"]), f"{where}: name")
    variables = _variables(dataset, where)
    outputs = doc.get("outputs") or {}
    fmt = outputs.get("format", "netcdf") if isinstance(outputs, dict) else outputs
    if fmt not in _FORMATS:
        raise InputError(f"{where}: outputs.format {fmt!r} is not one of {list(_FORMATS)}")
    plot = map_view(doc.get("plot"), where)
    start, end = dataset.get("start"), dataset.get("end")
    if start is not None or end is not None:
        months(str(start or end), str(end or start))  # validates the period
    folder = path.parent if path is not None else None
    steps = tuple(parse_steps(doc.get("steps") or [], "steps", folder))
    results = doc.get("results") or {}
    if not isinstance(results, dict) or not all(isinstance(k, str) for k in results):
        raise InputError(f"{where}: results must map result names to lists of steps")
    named = {k: tuple(parse_steps(v or [], f"results.{k}", folder)) for k, v in results.items()}
    recipe = Recipe(
        name=str(doc["name"]),
        description=str(doc.get("description", "")).strip(),
        variables=variables,
        start=None if start is None else str(start),
        end=None if end is None else str(end),
        steps=steps,
        results=named,
        files=_files(files, where),
        store=store,
        format=fmt,
        plot=plot,
        path=path,
    )
    check_steps(recipe.all_steps(), variables)
    return recipe


def _variables(dataset: dict[str, Any], where: str) -> tuple[str, ...]:
    one, many = dataset.get("variable"), dataset.get("variables")
    if (one is None) == (many is None):
        raise InputError(
            f"{where}: dataset needs variable: NAME, or variables: [NAME, ...] (not both)"
        )
    names = [one] if many is None else many
    if not isinstance(names, list) or not names or not all(isinstance(v, str) for v in names):
        raise InputError(f"{where}: dataset.variables {names!r} must be a list of names")
    return tuple(names)


def _store(dataset: dict[str, Any], files: Any, where: str) -> StoreRef | None:
    """``store:`` (a path or ``s3://`` URL, never with ``files:``) with its ``branch:`` or
    ``snapshot:``."""
    store = dataset.get("store")
    extra = [k for k in ("branch", "snapshot") if dataset.get(k) is not None]
    if store is None:
        if extra:
            raise InputError(
                f"{where}: dataset.{extra[0]} is for an Icechunk repository: add "
                "dataset.store: PATH_OR_URL"
            )
        return None
    if files is not None:
        raise InputError(f"{where}: dataset has both files: and store:; keep one")
    if not isinstance(store, str) or not store.strip():
        raise InputError(
            f"{where}: dataset.store {store!r} must be a path or s3:// URL of a Zarr store "
            "or Icechunk repository"
        )
    for k in extra:
        if not isinstance(dataset[k], str):
            raise InputError(f"{where}: dataset.{k} {dataset[k]!r} must be a name")
    try:
        return StoreRef(store, dataset.get("branch"), dataset.get("snapshot"))
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None


def _files(files: Any, where: str) -> str | tuple[str, ...] | None:
    """A glob (text), or a list of paths as a tuple (a catalog's datasets)."""
    if files is None:
        return None
    if isinstance(files, list | tuple):
        if not files or not all(isinstance(f, str) for f in files):
            raise InputError(f"{where}: dataset.files must be a glob or a list of paths")
        return tuple(files)
    return str(files)
