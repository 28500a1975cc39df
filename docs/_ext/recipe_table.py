"""The recipe-function reference: one row per step of the recipe registry.

Generated from ``pangeo_hpc.recipes.__all__`` (the steps of ``steps:``) and
``pangeo_hpc.recipes.COMBINE`` (the steps of ``combine:``): each function's docstring
summary (which names its CDO operator) and what it declares of itself for incremental
runs (:mod:`pangeo_hpc.recipes.traits`). Nothing here is copied by hand.
"""

from __future__ import annotations

import inspect
import re

_ROLE = re.compile(r":(\w+(?::\w+)?):`([^`]+)`")


def myst(text: str) -> str:
    """reStructuredText of a docstring summary as MyST inline markup, on one line.

    Parameters
    ----------
    text : str
        The summary: ``literal`` and :role:`target` markup.

    Returns
    -------
    str
        ``{role}`target``` roles, newlines as spaces, ``|`` escaped for a table cell.
    """
    text = _ROLE.sub(lambda m: "{" + m.group(1).replace("py:", "") + "}`" + m.group(2) + "`", text)
    return " ".join(text.split()).replace("|", "\\|")


def summary(fn: object) -> str:
    """The first paragraph of ``fn``'s docstring.

    Parameters
    ----------
    fn : callable
        A recipe function.

    Returns
    -------
    str
        Its summary paragraph, as written.
    """
    doc = inspect.getdoc(fn) or ""
    return doc.split("\n\n")[0]


def incremental_role(fn: object) -> str:
    """How an incremental run treats ``fn`` (its :mod:`~pangeo_hpc.recipes.traits`).

    Parameters
    ----------
    fn : callable
        A recipe function.

    Returns
    -------
    str
        "step by step", "reduction (state: ...)", "whole series: why" or "".
    """
    from pangeo_hpc.recipes import traits

    reduction = getattr(fn, traits.REDUCTION, None)
    if reduction is not None:
        state = reduction.state if isinstance(reduction.state, str) else "by its options"
        return f"reduction (state: `{state}`)"
    step = getattr(fn, traits.STEP_BY_STEP, None)
    if step is True:
        return "step by step"
    if callable(step):
        return "step by step, unless its options say why not"
    why = getattr(fn, traits.WHOLE_SERIES, None)
    return f"whole series: {myst(why)}" if why else ""


def markdown() -> str:
    """The two tables, ``steps:`` and ``combine:``, as MyST markdown.

    Returns
    -------
    str
        The page fragment that ``docs/user-guide/recipe-functions.md`` includes.
    """
    from pangeo_hpc import recipes

    def rows(names: list[str]) -> list[str]:
        out = ["| function | what, and its CDO equivalent | in an incremental run |"]
        out.append("|---|---|---|")
        for name in names:
            fn = getattr(recipes, name)
            link = f"{{func}}`{name} <pangeo_hpc.recipes.{name}>`"
            out.append(f"| {link} | {myst(summary(fn))} | {incremental_role(fn)} |")
        return out

    lines = [
        f"## Steps ({len(recipes.__all__)}, `pangeo_hpc.recipes.__all__`)",
        "",
        *rows(list(recipes.__all__)),
        "",
        f"## Combine steps ({len(recipes.COMBINE)}, `pangeo_hpc.recipes.COMBINE`)",
        "",
        *rows(list(recipes.COMBINE)),
        "",
    ]
    return "\n".join(lines)
