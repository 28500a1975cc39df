"""Which chains a run can split by input file: steps that work time step by time step, then
one reduction whose partial states merge exactly, then anything on the reduced result.

A chain ``select_region -> area_mean -> resample(monthly) -> anomaly`` splits into the
*prefix* (``select_region``, ``area_mean``: each time step on its own), the *reduction*
(``resample``: per-month sums and counts, added across files) and the *suffix*
(``anomaly``, run on the merged monthly series). :func:`split` says how, or why not.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pangeo_hpc.batch.chains import chain
from pangeo_hpc.batch.chains.chain import Step, options_of
from pangeo_hpc.batch.chains.code_identity import function_code, package_code
from pangeo_hpc.recipes import traits
from pangeo_hpc.recipes.aggregations import Aggregation

#: the attribute by which a user function says it treats each time step on its own (its
#: value for time step t depends on time step t alone, and it keeps the time axis); the
#: recipe functions declare the same, and what they reduce (:mod:`pangeo_hpc.recipes.traits`)
STEP_BY_STEP = traits.STEP_BY_STEP


@dataclass(frozen=True)
class Split:
    """A chain cut at its reduction.

    Attributes
    ----------
    prefix : tuple of Step
        Steps that work time step by time step.
    reduction : Step
        The reduction whose states are kept per file.
    suffix : tuple of Step
        Steps run on the merged result.
    options : dict
        The reduction's options with their defaults (``freq``, ``stat``, ``per``...).
    how : Reduction
        What the reduction's function declares: its state and groups
        (:class:`~pangeo_hpc.recipes.traits.Reduction`).

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.chain import parse_steps
    >>> from pangeo_hpc.batch.incremental.splitting import split
    >>> steps = [{"area_mean": {}}, {"time_mean": {}}, {"convert_units": "degC"}]
    >>> cut = split(parse_steps(steps, "steps"))
    >>> [s.name for s in cut.prefix], cut.reduction.name, [s.name for s in cut.suffix], cut.kind
    (['area_mean'], 'time_mean', ['convert_units'], 'mean')
    """

    prefix: tuple[Step, ...]
    reduction: Step
    suffix: tuple[Step, ...]
    options: dict[str, Any]
    how: traits.Reduction

    @property
    def kind(self) -> str:
        """The name of the reduction's aggregation (mean, sum, min, max, trend)."""
        return self.how.kind(self.options)

    @property
    def aggregation(self) -> Aggregation:
        """The reduction's states: fields, per-block state, merge and finish."""
        return self.how.aggregation(self.options)

    def chain_hash(self, variables: Sequence[str]) -> str:
        """What a file's state depends on besides the file: the variables, the prefix, the
        reduction and its options, and the code of all of them (hex): pangeo-hpc's and its
        libraries' (:func:`~pangeo_hpc.batch.chains.code_identity.package_code`), and each user
        function's (:func:`~pangeo_hpc.batch.chains.code_identity.function_code`).

        Parameters
        ----------
        variables : Sequence[str]
            The variables the chain starts from.

        Returns
        -------
        str
            The hash.

        Examples
        --------
        >>> from pangeo_hpc.batch.chains.chain import parse_steps
        >>> from pangeo_hpc.batch.incremental.splitting import split
        >>> cut = split(parse_steps([{"time_mean": {}}], "steps"))
        >>> key = cut.chain_hash(["sst"])
        >>> len(key), key == cut.chain_hash(["t2m"])
        (64, False)
        """
        steps = [*self.prefix, self.reduction]
        doc = {
            "code": package_code(),
            "user": [[s.name, function_code(s.function())] for s in steps if s.is_user],
            "variables": list(variables),
            "steps": [[s.name, option_identity(options_of(s))] for s in self.prefix],
            "reduction": [self.reduction.name, option_identity(self.options)],
        }
        text = json.dumps(doc, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


def split(steps: Sequence[Step]) -> Split | str:
    """Cut ``steps`` at their first reduction, or say (one sentence) why they cannot be.

    Parameters
    ----------
    steps : Sequence[Step]
        A result's whole chain.

    Returns
    -------
    Split or str
        The cut, or the reason.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.chain import parse_steps
    >>> from pangeo_hpc.batch.incremental.splitting import split
    >>> split(parse_steps([{"resample": {"freq": "monthly"}}], "steps")).reduction.name
    'resample'
    >>> split(parse_steps([{"area_mean": {}}], "steps"))
    'no reduction along time (climatology, daily_totals, linear_trend, resample, time_me...
    """
    for i, step in enumerate(steps):
        fn = step.function()
        how = None if step.is_user else getattr(fn, traits.REDUCTION, None)
        if isinstance(how, traits.Reduction):
            suffix = tuple(steps[i + 1 :])
            for later in suffix:
                ref = next((v for v in options_of(later).values() if _is_ref(v)), None)
                if ref is not None:
                    return (
                        f"{later.where} uses {ref} after the reduction: that needs the whole "
                        "data again"
                    )
            bound = inspect.signature(fn).bind(None, **options_of(step))
            bound.apply_defaults()
            options = dict(list(bound.arguments.items())[1:])
            for keyed, given in [*((s, options_of(s)) for s in steps[:i]), (step, options)]:
                try:
                    option_identity(given)
                except ValueError as e:
                    return f"{keyed.where}: {e}, so its states cannot be keyed"
            return Split(tuple(steps[:i]), step, suffix, options, how)
        why = _why_not(step, fn)
        if why is not None:
            return f"{step.where}: {why}"
    return (
        f"no reduction along time ({', '.join(_reductions())}): the result is as long as the data"
    )


def _reductions() -> list[str]:
    """The recipe functions that declare a reduction
    (:data:`~pangeo_hpc.recipes.traits.REDUCTION`)."""
    functions = chain.step_functions()
    return [
        n
        for n, fn in functions.items()
        if isinstance(getattr(fn, traits.REDUCTION, None), traits.Reduction)
    ]


def _why_not(step: Step, fn: Any) -> str | None:
    """Why ``step`` (before any reduction) stops the split; None if it works step by step
    (as its function declares: :mod:`pangeo_hpc.recipes.traits`)."""
    says = getattr(fn, STEP_BY_STEP, None)
    if step.is_user:
        if says is True:
            return None
        return (
            "a user function that does not say it works time step by time step (set "
            f"{step.name.split(':')[1]}.{STEP_BY_STEP} = True if it does)"
        )
    if says is True:
        return None
    if callable(says):
        return says(options_of(step))
    return getattr(fn, traits.WHOLE_SERIES, None) or (
        f"{step.name} is not known to work time step by time step"
    )


def _is_ref(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("$")


def option_identity(value: Any) -> Any:
    """What identifies an option's value in a state's key, as JSON: text, numbers, booleans,
    null, lists and mappings as they are; anything else (an array, a DataArray, a
    ``regionmask.Regions`` given through the Python API) by its type and Dask token, which
    hashes its whole content. (Not its ``str``: NumPy and xarray shorten large arrays to
    their first and last values, and two ``Regions`` with the same names but other vertices
    print alike, so two different masks would share their cached states.)

    Parameters
    ----------
    value : Any
        A step's option value, or a mapping of them.

    Returns
    -------
    Any
        A value :func:`json.dumps` writes the same way for equal values.

    Raises
    ------
    ValueError
        For a value whose content Dask cannot hash the same way in every process (an
        object it can only tell apart by identity): such a step's states are not cached.

    Examples
    --------
    >>> import numpy as np
    >>> from pangeo_hpc.batch.incremental.splitting import option_identity
    >>> option_identity({"lat": [-5, 5], "mask": None})
    {'lat': [-5, 5], 'mask': None}
    >>> a, b = np.zeros(5000), np.zeros(5000)
    >>> b[2500] = 1.0  # str(a) == str(b): both print as [0. 0. 0. ... 0. 0. 0.]
    >>> option_identity(a) == option_identity(b)
    False
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [option_identity(v) for v in value]
    if isinstance(value, dict):
        return {str(k): option_identity(v) for k, v in sorted(value.items(), key=_by_name)}
    from dask.base import tokenize

    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    try:
        return {"type": kind, "token": tokenize(value, ensure_deterministic=True)}
    except RuntimeError as e:  # dask: "Cannot tokenize ... deterministically"
        raise ValueError(f"a {type(value).__name__} option whose content Dask cannot hash") from e


def _by_name(item: tuple[Any, Any]) -> str:
    return str(item[0])
