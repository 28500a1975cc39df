"""Run a recipe's chain: each step a recipe function called with its keyword arguments.

A step is written ``- area_mean: {}``, ``- select_months: [12, 1, 2]`` (a list or a single
value goes to the function's first option) or ``- resample: {freq: QS-DEC, stat: mean}``;
a user function is ``- function: module:name`` with its options beside it, imported from
the recipe file's folder or the Python path. An option written ``$name`` is the dataset's
variable ``name`` (the v wind of a wind speed, the SST whose NaN mask is the ocean).

Everything is checked before data are opened (:func:`check_steps`: known functions,
options they take, values of the kinds their annotations name,
:mod:`~pangeo_hpc.batch.chains.option_values`); while the chain is built (:func:`build`) a step
that computes is an error naming it, since recipe functions must stay lazy.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dask
import xarray as xr

from pangeo_hpc import recipes
from pangeo_hpc.batch.chains.code_identity import SOURCE_ATTR
from pangeo_hpc.batch.chains.option_values import check_values
from pangeo_hpc.batch.chains.results_of import finish
from pangeo_hpc.errors import InputError, shown
from pangeo_hpc.recipes.fusion import reads_twice

USER = "function"


@dataclass(frozen=True)
class Step:
    """One step of a chain.

    Attributes
    ----------
    name : str
        The recipe function's name, or ``module:name`` of a user function.
    options : dict
        Keyword arguments as written (``$name`` not yet replaced by the variable).
    where : str
        Where it is written, for messages: ``steps[2] (anomaly)``.
    folder : Path, optional
        The recipe file's folder, where user modules are looked for first.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.chain import Step
    >>> step = Step("resample", {"freq": "monthly"}, where="steps[1] (resample)")
    >>> step.function().__name__, step.options
    ('resample', {'freq': 'monthly'})
    """

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    where: str = ""
    folder: Path | None = None

    @property
    def is_user(self) -> bool:
        return ":" in self.name

    def function(self) -> Callable[..., Any]:
        """The function the step calls.

        Returns
        -------
        Callable[..., Any]
            The recipe function, or the user function (imported).

        Examples
        --------
        >>> from pangeo_hpc.batch.chains.chain import Step
        >>> Step("area_mean").function().__name__
        'area_mean'
        """
        return user_function(self) if self.is_user else step_functions()[self.name]


def step_functions() -> dict[str, Callable[..., Any]]:
    """The recipe functions a step can name: :data:`pangeo_hpc.recipes.__all__`.

    Returns
    -------
    dict[str, Callable[..., Any]]
        Name -> function.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.chain import step_functions
    >>> functions = step_functions()
    >>> "area_mean" in functions, functions["time_mean"].__module__
    (True, 'pangeo_hpc.recipes.means')
    """
    return {n: getattr(recipes, n) for n in recipes.__all__ if callable(getattr(recipes, n))}


def parse_steps(items: Any, where: str, folder: Path | None = None) -> list[Step]:
    """The steps of a YAML list (``steps:`` or one of ``results:``), their shape checked.

    Parameters
    ----------
    items : Any
        The YAML value: a list of one-key mappings (``- area_mean: {}``).
    where : str
        Where the list is in the recipe (``steps``, ``results.bias``), for messages.
    folder : Path, optional
        The recipe's folder, where user functions' modules are looked for first.

    Returns
    -------
    list[Step]
        The steps.

    Raises
    ------
    InputError
        If ``items`` is not a list, an item is not a mapping of one function, or a user
        function is not written ``module:function``.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.chain import parse_steps
    >>> parse_steps([{"area_mean": {}}, {"resample": {"freq": "monthly"}}], "steps")
    [Step(name='area_mean', options={}, where='steps[0] (area_mean)', folder=None), Step...
    >>> parse_steps({"area_mean": {}}, "steps")
    Traceback (most recent call last):
        ...
    pangeo_hpc.errors.InputError: steps must be a list of steps such as '- area_mean: {}'
    """
    if not isinstance(items, list):
        raise InputError(f"{where} must be a list of steps such as '- area_mean: {{}}'")
    return [_parse_one(item, f"{where}[{i}]", folder) for i, item in enumerate(items)]


def _parse_one(item: Any, where: str, folder: Path | None) -> Step:
    if isinstance(item, str):  # "- area_mean" with nothing after it
        item = {item: {}}
    if not isinstance(item, dict) or not item:
        raise InputError(f"{where}: {shown(item)} is not a step: write '- area_mean: {{}}'")
    if USER in item:
        target = item[USER]
        if not isinstance(target, str) or target.count(":") != 1:
            raise InputError(f"{where}: function {shown(target)} must be written 'module:function'")
        options = {k: v for k, v in item.items() if k != USER}
        return Step(target, options, f"{where} ({target})", folder)
    if len(item) != 1:
        raise InputError(
            f"{where}: {shown(item)} names {len(item)} functions: one step per list item"
        )
    ((name, given),) = item.items()
    at = f"{where} ({name})"
    if given is None or isinstance(given, dict):
        return Step(str(name), dict(given or {}), at, folder)
    # a list or a single value: the function's first option (select_months: [12, 1, 2])
    return Step(str(name), {FIRST: given}, at, folder)


#: the key of a step's single value (a list or scalar): the function's first option
FIRST = "\x00first"


def check_steps(steps: Iterable[Step], variables: Sequence[str]) -> None:
    """Every step names a known function and gives it options it takes, each a value of
    the kind the function's annotation names (recipe functions; user functions check their
    own); ``$name`` options name a variable of the dataset.

    Parameters
    ----------
    steps : Iterable[Step]
        The steps of a recipe.
    variables : Sequence[str]
        The variables of the dataset (``$name`` options must name one).

    Raises
    ------
    InputError
        For the first step that names an unknown function, gives options the function
        does not take or values it cannot take, or a ``$name`` that names no variable.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.chain import check_steps, parse_steps
    >>> check_steps(parse_steps([{"area_mean": {}}, {"time_mean": {}}], "steps"), ["sst"])
    >>> check_steps(parse_steps([{"area_means": {}}], "steps"), ["sst"])
    Traceback (most recent call last):
        ...
    pangeo_hpc.errors.InputError: steps[0] (area_means): unknown recipe function 'area_m...
    """
    known = step_functions()
    for step in steps:
        if not step.is_user and step.name not in known:
            raise InputError(
                f"{step.where}: unknown recipe function {step.name!r}: use one of "
                f"{sorted(known)}, or '- function: module:name' for your own"
            )
        fn = step.function()
        _bind(fn, step)
        if not step.is_user:
            check_values(fn, _options(fn, step), step.where, variables)
        for key, value in _options(fn, step).items():
            name = _reference(value)
            # a coordinate such as time1_bounds is known once the data are open (apply)
            if name is not None and name not in variables and not _coordinate_like(name):
                raise InputError(
                    f"{step.where}: {key}={value!r} names no variable of the "
                    f"dataset: use one of {['$' + v for v in variables]}"
                )


def _reference(value: Any) -> str | None:
    """``name`` of an option written ``$name``, else None."""
    return value[1:] if isinstance(value, str) and value.startswith("$") else None


def _coordinate_like(name: str) -> bool:
    return name.endswith(("_bounds", "_bnds")) or name in ("lat", "lon", "latitude", "longitude")


def _first_option(fn: Callable[..., Any], step: Step) -> str:
    params = list(inspect.signature(fn).parameters.values())[1:]
    named = [p for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not named:
        raise InputError(f"{step.where}: {step.name} takes no options: write '- {step.name}: {{}}'")
    return named[0].name


def _options(fn: Callable[..., Any], step: Step) -> dict[str, Any]:
    if FIRST in step.options:
        return {_first_option(fn, step): step.options[FIRST]}
    return dict(step.options)


def options_of(step: Step) -> dict[str, Any]:
    """The keyword arguments ``step`` passes (a list or scalar under its function's first
    option's name; ``$name`` not yet replaced).

    Parameters
    ----------
    step : Step
        A step.

    Returns
    -------
    dict[str, Any]
        Option name -> value.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.chain import options_of, parse_steps
    >>> (step,) = parse_steps([{"select_months": [12, 1, 2]}], "steps")
    >>> options_of(step)  # a list goes to the function's first option
    {'months': [12, 1, 2]}
    """
    return _options(step.function(), step)


def _bind(fn: Callable[..., Any], step: Step) -> None:
    """The step's options fit the function's signature, else one line naming them."""
    check_signature(fn, _options(fn, step), step)


def check_signature(fn: Callable[..., Any], options: dict[str, Any], step: Step) -> None:
    """``fn(data, **options)`` can be called (a recipe step's or a combine step's), else an
    :class:`~pangeo_hpc.errors.InputError` of one line naming the options and what ``fn``
    takes.

    Parameters
    ----------
    fn : Callable[..., Any]
        The step's function.
    options : dict[str, Any]
        The options the step passes.
    step : Step
        The step, for messages.

    Raises
    ------
    InputError
        If ``fn`` cannot be called with those options (the message says what it takes).

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.chain import Step, check_signature
    >>> from pangeo_hpc.recipes import resample
    >>> step = Step("resample", {"frequency": "monthly"}, where="steps[1] (resample)")
    >>> check_signature(resample, step.options, step)
    Traceback (most recent call last):
        ...
    pangeo_hpc.errors.InputError: steps[1] (resample): options {'frequency': 'monthly'} ...
    """
    try:
        inspect.signature(fn).bind(None, **options)
    except TypeError as exc:
        takes = list(inspect.signature(fn).parameters)[1:]
        raise InputError(
            f"{step.where}: options {shown(options)} do not fit {step.name} ({exc}); "
            f"it takes {takes}"
        ) from None


def user_function(step: Step) -> Callable[..., Any]:
    """Import ``module:name`` from the recipe's folder, else from the Python path.

    A module found in the recipe's folder is pickled by value (cloudpickle), so that the
    workers of a cluster need not find it on their own path.

    Parameters
    ----------
    step : Step
        A step ``- function: module:name``.

    Returns
    -------
    Callable[..., Any]
        The function.

    Raises
    ------
    InputError
        If the module cannot be imported or has no such function.

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.batch.chains.chain import parse_steps, user_function
    >>> _ = Path("mine.py").write_text("def double(da): return 2 * da")
    >>> (step,) = parse_steps([{"function": "mine:double"}], "steps", folder=Path("."))
    >>> user_function(step)(21)
    42
    """
    module_name, attr = step.name.split(":")
    module = None
    local = step.folder / f"{module_name.replace('.', '/')}.py" if step.folder else None
    if local is not None and local.is_file():
        # one module per file and version of it: two recipe folders may each have their
        # own steps.py, and an edited file is loaded again (the code that runs is the
        # file's, and the cache keys hold it: code_identity.SOURCE_ATTR)
        source = local.read_bytes()
        digest = hashlib.sha256(source).hexdigest()
        key = hashlib.sha1(str(local.resolve()).encode()).hexdigest()[:10]
        unique = f"pangeo_hpc_user_{key}_{digest[:16]}.{module_name}"
        module = sys.modules.get(unique)
        if module is None:
            spec = importlib.util.spec_from_loader(unique, loader=None, origin=str(local))
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            module.__file__ = str(local)
            setattr(module, SOURCE_ATTR, digest)
            sys.modules[unique] = module
            try:
                exec(compile(source, str(local), "exec"), module.__dict__)
            except BaseException:
                del sys.modules[unique]
                raise
            import cloudpickle

            cloudpickle.register_pickle_by_value(module)
    else:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            there = f" or {str(step.folder)!r}" if step.folder else ""
            raise InputError(
                f"{step.where}: cannot import module {module_name!r} ({exc}): put "
                f"{module_name}.py beside the recipe{there}, or on PYTHONPATH"
            ) from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        public = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))
        raise InputError(
            f"{step.where}: module {module_name!r} has no function {attr!r}: it has {public}"
        )
    return fn


class _Computed(RuntimeError):
    """Raised by the scheduler :func:`build` installs while a step runs."""


def _forbid(*args: Any, **kwargs: Any) -> Any:
    raise _Computed


def apply(step: Step, value: Any, data: xr.Dataset, *, guarded: bool = True) -> Any:
    """Call one step on ``value``; ``$name`` options become ``data[name]``.

    A Dataset value (several results) goes through a recipe function variable by variable
    when the function takes a DataArray. ``guarded``: the step may not compute Dask data
    while it runs (see :func:`_call`); the guard is the process's Dask scheduler, so only a
    caller that runs steps in several threads at once turns it off, and only for the
    package's own recipe functions on data in memory (:func:`in_memory`), which have
    nothing to compute.

    Parameters
    ----------
    step : Step
        The step.
    value : Any
        A DataArray or Dataset: the previous step's result.
    data : xr.Dataset
        The recipe's dataset (for ``$name`` options).
    guarded : bool, optional
        Refuse a step that computes Dask data while it runs.

    Returns
    -------
    DataArray or Dataset
        The step's result, lazy for lazy input.

    Raises
    ------
    InputError
        If a ``$name`` is not in ``data``, or the step computed, returned something
        other than xarray data, or refused its input (the message names the step).

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> from pangeo_hpc.batch.chains.chain import apply, parse_steps
    >>> coords = {"time": pd.date_range("2000-01-01", periods=2), "lat": [-30.0, 30.0],
    ...           "lon": [0.0, 120.0, 240.0]}
    >>> ds = xr.Dataset({"sst": (("time", "lat", "lon"), np.arange(12.0).reshape(2, 2, 3))}, coords)
    >>> (step,) = parse_steps([{"area_mean": {}}], "steps")
    >>> mean = apply(step, ds.sst.chunk(), ds)  # lazy: a step that computes is an InputError
    >>> mean.dims, mean.values.round(3)
    (('time',), array([2.5, 8.5]))
    """
    fn = step.function()
    options = {k: _resolve(step, k, v, data) for k, v in _options(fn, step).items()}
    _add_bounds(fn, options, value, data)
    if isinstance(value, xr.Dataset) and not _takes_dataset(fn):
        return xr.Dataset(
            {k: _call(fn, step, v, options, guarded) for k, v in value.data_vars.items()}
        )
    return _call(fn, step, value, options, guarded)


def _resolve(step: Step, key: str, value: Any, data: xr.Dataset) -> Any:
    name = _reference(value)
    if name is None:
        return value
    if name not in data.variables:
        known = [f"${v}" for v in [*data.data_vars, *data.coords]]
        raise InputError(f"{step.where}: {key}={value!r} is not in the dataset: it holds {known}")
    return data[name]


def _add_bounds(
    fn: Callable[..., Any], options: dict[str, Any], value: Any, data: xr.Dataset
) -> None:
    """Give a function with a ``bounds`` option the time bounds of the dataset (ERA5's
    ``time1_bounds``), when not given and while the value's time axis is still the
    dataset's: a DataArray cannot carry a ``(time, nv)`` coordinate."""
    if "bounds" in options or "bounds" not in inspect.signature(fn).parameters:
        return
    if not isinstance(value, xr.DataArray):
        return
    for t in value.dims:
        if t not in data.coords or not _is_time(data[t]):
            continue
        name = data[t].attrs.get("bounds")
        if name in data.variables and data[name].dims[0] == t:
            if value.sizes[t] == data.sizes[t] and bool((value[t] == data[t]).all()):
                options["bounds"] = data[name]
        return


def _is_time(coord: xr.DataArray) -> bool:
    return coord.dtype.kind == "M" or coord.dtype == object


def _call(
    fn: Callable[..., Any], step: Step, value: Any, options: dict[str, Any], guarded: bool = True
) -> Any:
    lazy = _is_lazy(value)
    try:
        # dask.config is the process's: set from two threads at once, one thread's guard
        # stops the other's computations, and the restores can leave it set
        with dask.config.set(scheduler=_forbid) if guarded else contextlib.nullcontext():
            out = fn(value, **options)
    except _Computed:
        raise InputError(
            f"{step.where}: {step.name} computed the data while the chain was being built: "
            "a step must stay lazy (xarray operations, xr.apply_ufunc(..., dask='parallelized'))"
        ) from None
    except InputError as exc:
        message = str(exc)  # "select_region: lat=..." says its name: the step says it already
        message = message.removeprefix(f"{fn.__name__}: ").removeprefix(f"{step.name}: ")
        raise InputError(f"{step.where}: {message}", param=exc.param) from None
    if not isinstance(out, xr.DataArray | xr.Dataset):
        raise InputError(
            f"{step.where}: {step.name} returned {type(out).__name__}, not an xarray "
            "DataArray or Dataset"
        )
    if lazy and not _is_lazy(out):
        raise InputError(
            f"{step.where}: {step.name} returned data in memory from Dask input: a step must "
            "stay lazy (xr.apply_ufunc(..., dask='parallelized') or DataArray.map_blocks)"
        )
    return out


def _takes_dataset(fn: Callable[..., Any]) -> bool:
    first = next(iter(inspect.signature(fn).parameters.values()), None)
    return first is not None and "Dataset" in str(first.annotation)


def in_memory(value: Any) -> bool:
    """Whether ``value`` (a DataArray or Dataset) holds no Dask data.

    Parameters
    ----------
    value : Any
        A DataArray or Dataset.

    Returns
    -------
    bool
        Whether none of its variables is a Dask array.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from pangeo_hpc.batch.chains.chain import in_memory
    >>> da = xr.DataArray(np.zeros(3), dims="x")
    >>> in_memory(da), in_memory(da.chunk())
    (True, False)
    """
    return not _is_lazy(value)


def _is_lazy(value: Any) -> bool:
    if isinstance(value, xr.Dataset):
        return any(v.chunks is not None for v in value.data_vars.values())
    return isinstance(value, xr.DataArray) and value.chunks is not None


def step_key(step: Step) -> tuple[str, str]:
    """What identifies a step's work: its function and options.

    Parameters
    ----------
    step : Step
        A step.

    Returns
    -------
    (str, str)
        The function's name and the ``repr`` of its sorted options.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.chain import parse_steps, step_key
    >>> a, b = parse_steps([{"resample": {"freq": "monthly"}}, {"resample": "monthly"}], "steps")
    >>> step_key(a) == step_key(b)  # the same work, however written
    True
    """
    return (step.name, repr(sorted(options_of(step).items())))


#: values of chains already built on one dataset, by the step keys from its variable
Memo = dict[tuple[tuple[str, str], ...], Any]


def run_steps(
    steps: Sequence[Step],
    value: Any,
    data: xr.Dataset,
    memo: Memo | None = None,
    key: tuple[tuple[str, str], ...] = (),
) -> Any:
    """Apply ``steps`` one after the other. With ``memo``: each value after a step is kept
    under ``key`` (the steps that gave ``value``) and that step's key, and taken from there
    when the same steps ran before.

    Parameters
    ----------
    steps : Sequence[Step]
        The steps.
    value : Any
        The input of the first.
    data : xr.Dataset
        The recipe's dataset (for ``$name`` options).
    memo : Memo, optional
        Values of steps already built on ``data``, added to.
    key : tuple[tuple[str, str], ...], optional
        The keys of the steps that gave ``value``.

    Returns
    -------
    DataArray or Dataset
        The last step's result.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> from pangeo_hpc.batch.chains.chain import parse_steps, run_steps
    >>> coords = {"time": pd.date_range("2000-01-01", periods=2), "lat": [-30.0, 30.0],
    ...           "lon": [0.0, 120.0, 240.0]}
    >>> da = xr.DataArray(np.arange(12.0).reshape(2, 2, 3), coords, ("time", "lat", "lon"))
    >>> ds = xr.Dataset({"sst": da}).chunk()
    >>> steps = parse_steps([{"area_mean": {}}, {"time_mean": {}}], "steps")
    >>> round(float(run_steps(steps, ds.sst, ds)), 6)  # area-weighted mean of the time mean
    5.5
    """
    for step in steps:
        if memo is None:
            value = apply(step, value, data)
            continue
        key = (*key, step_key(step))
        if key not in memo:
            memo[key] = apply(step, value, data)
        value = memo[key]
    return value


def build(recipe: Any, data: xr.Dataset, memo: Memo | None = None) -> xr.Dataset:
    """The results of ``recipe`` (a :class:`~pangeo_hpc.batch.chains.recipe_yaml.Recipe`, which
    imports this module) on ``data``, lazy: a Dataset of the named results, or of the one
    result (under its own name, else the input variable's). Steps in ``memo`` (from the
    same ``data``) are not built again.

    Parameters
    ----------
    recipe : Recipe
        The recipe.
    data : xr.Dataset
        Its dataset (:func:`~pangeo_hpc.batch.pipeline.steps.open_dataset`).
    memo : Memo, optional
        Values of steps already built on ``data``, added to.

    Returns
    -------
    xr.Dataset
        The results, lazy.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> from pangeo_hpc.batch.chains.chain import build
    >>> from pangeo_hpc.batch.chains.recipe_yaml import load
    >>> coords = {"time": pd.date_range("2000-01-01", periods=2), "lat": [-30.0, 30.0],
    ...           "lon": [0.0, 120.0, 240.0]}
    >>> da = xr.DataArray(np.arange(12.0).reshape(2, 2, 3), coords, ("time", "lat", "lon"))
    >>> ds = xr.Dataset({"sea_surface_temperature": da}).chunk()
    >>> results = build(load("era5-sst-mean"), ds)  # lazy, nothing computed yet
    >>> sorted(results.data_vars), round(float(results.global_mean), 6)
    (['global_mean', 'global_mean_series', 'time_mean'], 5.5)
    """
    memo = {} if memo is None else memo
    first = data[recipe.variable]
    chains = result_chains(recipe)
    values = read_once(
        lambda: {n: run_steps(c, first, data, memo) for n, c in chains.items()}, memo
    )
    return finish(recipe, values)


def read_once(make: Callable[[], dict[str, Any]], memo: Memo) -> dict[str, Any]:
    """``make()``: lazy values built from one dataset (into ``memo``), built again with
    ``pangeo-hpc.data.fuse-reads`` off if computing them together would read some data
    twice (:func:`~pangeo_hpc.recipes.fusion.reads_twice`: an area mean summed as it reads,
    beside a result that reads the blocks, a time mean): one read of the data for all, as
    a recipe says, in a whole run and in an incremental one alike.

    Parameters
    ----------
    make : Callable[[], dict[str, Any]]
        Builds the values (into ``memo``).
    memo : Memo
        The memo ``make`` builds into.

    Returns
    -------
    dict[str, Any]
        What ``make()`` returns.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> from pangeo_hpc.batch.chains.chain import parse_steps, read_once, run_steps
    >>> coords = {"time": pd.date_range("2000-01-01", periods=2), "lat": [-30.0, 30.0],
    ...           "lon": [0.0, 120.0, 240.0]}
    >>> da = xr.DataArray(np.arange(12.0).reshape(2, 2, 3), coords, ("time", "lat", "lon"))
    >>> ds, memo = xr.Dataset({"sst": da}).chunk(), {}
    >>> series, whole = parse_steps([{"area_mean": {}}], "a"), parse_steps([{"time_mean": {}}], "b")
    >>> values = read_once(lambda: {"series": run_steps(series, ds.sst, ds, memo),
    ...                             "map": run_steps(whole, ds.sst, ds, memo)}, memo)
    >>> sorted(values), values["series"].values.round(3)
    (['map', 'series'], array([2.5, 8.5]))
    """
    values = make()
    if reads_twice([v.data for v in values.values() if isinstance(v, xr.DataArray)]):
        memo.clear()
        with dask.config.set({"pangeo-hpc.data.fuse-reads": False}):
            values = make()
    return values


def result_chains(recipe: Any) -> dict[str, list[Step]]:
    """Each result's whole chain: the shared steps, then its own (``""``: the one result
    of a recipe without ``results:``).

    Parameters
    ----------
    recipe : Recipe
        The recipe.

    Returns
    -------
    dict[str, list[Step]]
        Result name -> its steps.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.chain import result_chains
    >>> from pangeo_hpc.batch.chains.recipe_yaml import load
    >>> chains = result_chains(load("era5-sst-mean"))
    >>> {name: [step.name for step in steps] for name, steps in chains.items()}
    {'time_mean': ['time_mean'], 'global_mean_series': ['area_mean', 'resample'], 'globa...
    """
    if not recipe.results:
        return {"": list(recipe.steps)}
    return {name: [*recipe.steps, *steps] for name, steps in recipe.results.items()}
