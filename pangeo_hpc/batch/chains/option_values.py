"""A recipe step's option values checked against the recipe function's annotations.

A YAML file gives only text, numbers, booleans, null, lists and mappings, and ``$name``
for a variable of the dataset. Where a recipe function's signature says what it takes,
a value that cannot be it is refused when the recipe is read, before any data are opened
(ESMValCore's ``check_preprocessor_settings`` does the same from ``inspect.signature``):

==========================  =================================================
annotation                  the value must be
==========================  =================================================
``xr.DataArray``            ``$name`` (a variable of the dataset)
``Literal["a", "b"]``       one of the listed choices
``bool``                    ``true`` or ``false``
``int``                     an integer (not ``true``/``false``)
``float``                   a number (an integer too)
``str``                     text
``X | None``                the above, or ``null``
==========================  =================================================

Anything else (sequences, objects such as ``regionmask.Regions``, an annotation that does
not resolve) is left to the function, which checks its own values when the chain is built.
Only the package's recipe functions are checked: a user function's annotations are its
author's notes, not a contract.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, Literal

import xarray as xr

from pangeo_hpc.errors import InputError, shown

#: what a value of each plain type is called in a message
_SCALARS: dict[type, str] = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "text",
}


def check_values(
    fn: Callable[..., Any], options: dict[str, Any], where: str, variables: Sequence[str]
) -> None:
    """Raise :class:`InputError` for the first option of ``options`` that ``fn``'s
    annotation says it cannot take; ``where`` names the step, ``variables`` the dataset's.

    Parameters
    ----------
    fn : Callable[..., Any]
        A recipe function.
    options : dict[str, Any]
        The options a step gives it.
    where : str
        The step, for messages.
    variables : Sequence[str]
        The dataset's variables (``$name`` options name one).

    Raises
    ------
    InputError
        For the first option whose value does not fit the annotation.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.option_values import check_values
    >>> from pangeo_hpc.recipes import resample
    >>> check_values(resample, {"freq": "monthly"}, "steps[0] (resample)", ["sst"])
    >>> check_values(resample, {"freq": 12}, "steps[0] (resample)", ["sst"])
    Traceback (most recent call last):
        ...
    pangeo_hpc.errors.InputError: steps[0] (resample): freq=12 must be text
    """
    hints = _hints(fn)
    params = inspect.signature(fn).parameters
    for key, value in options.items():
        if key not in hints or _is_reference(value):
            continue  # a $name is checked against the dataset's variables (chain.check_steps)
        wanted = _refusal(hints[key], value)
        if not wanted:
            continue
        default = params[key].default
        if default is inspect.Parameter.empty:
            later = ""
        else:
            said_default = f"{fn.__name__}'s default" if default is None else f"default {default!r}"
            later = f", or be left out ({said_default})"
        if "$name" in wanted:
            names = [f"${v}" for v in variables]
            raise InputError(
                f"{where}: {key}={shown(value)} must be $NAME, a variable of the dataset "
                f"(one of {names}){later}"
            )
        said = " or ".join(w for w in wanted if w != "null") or "null"
        raise InputError(f"{where}: {key}={shown(value)} must be {said}{later}")


def _is_reference(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("$")


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """``fn``'s parameter annotations, resolved in its module; one that does not resolve
    (a name imported only for type checkers, such as ``regionmask``) is left out."""
    namespace = getattr(inspect.unwrap(fn), "__globals__", {})
    hints = {}
    for name, p in inspect.signature(fn).parameters.items():
        annotation = p.annotation
        if isinstance(annotation, str):  # from __future__ import annotations
            try:
                annotation = eval(annotation, namespace)  # the package's own annotations
            except (NameError, AttributeError, TypeError, SyntaxError):
                continue  # not checkable here: the function checks the value itself
        if annotation is not inspect.Parameter.empty:
            hints[name] = annotation
    return hints


def _refusal(hint: Any, value: Any) -> list[str]:
    """What ``hint`` wants, each alternative said for a message, when ``value`` is none of
    them; else ``[]`` (``value`` fits, or ``hint`` is not one this module checks)."""
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    wanted = []
    for alternative in typing.get_args(hint) if union else (hint,):
        said = _fits(alternative, value)
        if said is None:
            return []
        wanted.append(said)
    return list(dict.fromkeys(wanted))


def _fits(hint: Any, value: Any) -> str | None:
    """``None`` when ``value`` fits ``hint`` or ``hint`` is not checked here, else what
    ``hint`` wants."""
    if hint is type(None):
        return None if value is None else "null"
    if typing.get_origin(hint) is Literal:
        choices = typing.get_args(hint)
        ok = any(type(value) is type(c) and value == c for c in choices)
        return None if ok else f"one of {list(choices)}"
    if hint in (xr.DataArray, xr.Dataset):
        return None if isinstance(value, hint) else "$name"
    if hint in _SCALARS:
        if hint is float:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        elif hint is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, hint)
        return None if ok else _SCALARS[hint]
    return None  # a sequence, an object: the function checks it
